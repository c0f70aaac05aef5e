/* Whole-tree operations of the file API. None of them follows a symlink
 * below the given path: entries are lstat'ed and directories are opened
 * with O_NOFOLLOW relative to their parent's fd. Errors: OSB_E_NOTFOUND for
 * a missing root, OSB_E_INVALID for a root of the wrong kind, OSB_E_SYS
 * otherwise. Blocking: call from the thread pool (fs_job.h). */
#ifndef OSB_EXECD_FS_TREE_H
#define OSB_EXECD_FS_TREE_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "execd/fs_glob.h"
#include "execd/fs_info.h"
#include "execd/fs_perm.h"

/* /directories/list: append the FileInfo of every entry under root (a
 * clean absolute path) down to `depth` levels (1 = children only) to the
 * array `out`; each entry is followed by its descendants, lexical order
 * per directory. The root must be a directory and not a symlink. */
OSB_MUST_CHECK int osb_fs_tree_list(const char *root, int64_t depth, struct osb_fs_names *names,
                                    json_t *out, struct osb_err *err);
/* /files/search: append the FileInfo of every non-directory under root
 * whose base name matches g (pre-order, lexical). A root that is not a
 * directory is itself matched. Entries vanishing meanwhile are skipped. */
OSB_MUST_CHECK int osb_fs_tree_search(const char *root, const struct osb_fs_glob *g,
                                      struct osb_fs_names *names, json_t *out, struct osb_err *err);
/* rm -rf: a missing path is success; symlinks are removed, not followed. */
OSB_MUST_CHECK int osb_fs_tree_remove(const char *path, struct osb_err *err);
/* mkdir -p (mode 0777 less the umask, as Go's MkdirAll(ModePerm)); each
 * directory it creates gets p's owner/group. *created: the leaf itself was
 * created. An existing non-directory on the way fails (ENOTDIR). */
OSB_MUST_CHECK int osb_fs_tree_mkdirs(const char *path, const struct osb_fs_perm *p, bool *created,
                                      struct osb_err *err);
#endif
