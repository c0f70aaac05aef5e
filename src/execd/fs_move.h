/* POST /files/mv for one item: create the destination's parent directories,
 * refuse an existing destination, rename. Across filesystems (a sandbox's
 * /tmp is often a tmpfs) regular files and symlinks are copied and the
 * source removed; directories are refused. Blocking: thread pool only. */
#ifndef OSB_EXECD_FS_MOVE_H
#define OSB_EXECD_FS_MOVE_H
#include "common/err.h"

/* src missing -> OSB_E_NOTFOUND; destination exists -> OSB_E_EXISTS. */
OSB_MUST_CHECK int osb_fs_move(const char *src, const char *dest, struct osb_err *err);
#endif
