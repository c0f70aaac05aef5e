/* Filesystem trees the server and the runtime clean up and measure. Paths
 * under a state dir may hold entries a sandbox or a tar file controlled:
 * nothing here follows symlinks or crosses into another filesystem. */
#ifndef OSB_FSTREE_H
#define OSB_FSTREE_H
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* rm -rf without following symlinks and without crossing mount points
 * (an entry on another device is an error, never a descent). A missing
 * path is success. */
OSB_MUST_CHECK int osb_fs_remove_tree(const char *path, struct osb_err *err);
/* Cleanup after a failure that is reported already: osb_fs_remove_tree,
 * and a tree that cannot be removed is logged (nobody else would hear of
 * it). */
void osb_fs_discard_tree(const char *path);
/* Read a small file into buf (NUL-terminated); returns its length, or -1
 * with errno set (no err: callers decide whether absence matters). */
OSB_MUST_CHECK ssize_t osb_fs_read(const char *path, char *buf, size_t cap);
/* Create path (0644, O_EXCL unless replace) with data. */
int osb_fs_create(const char *path, const char *data, size_t len, int replace,
                  struct osb_err *err) OSB_MUST_CHECK;
/* Bytes used by the regular files under path (st_blocks), no symlinks
 * followed. */
unsigned long long osb_fs_du(const char *path);
#endif
