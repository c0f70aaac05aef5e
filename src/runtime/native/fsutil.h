/* Small filesystem helpers of the native runtime. Paths under the state
 * dir may hold entries a sandbox or a tar file controlled: nothing here
 * follows symlinks or crosses into another filesystem. */
#ifndef OSB_RT_FSUTIL_H
#define OSB_RT_FSUTIL_H
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* rm -rf without following symlinks and without crossing mount points
 * (an entry on another device is an error, never a descent). A missing
 * path is success. */
int osb_rtfs_remove_tree(const char *path, struct osb_err *err);
/* Read a small file into buf (NUL-terminated); returns its length, or -1
 * with errno set (no err: callers decide whether absence matters). */
ssize_t osb_rtfs_read(const char *path, char *buf, size_t cap);
/* Create path (0644, O_EXCL unless replace) with data. */
int osb_rtfs_create(const char *path, const char *data, size_t len, int replace,
                    struct osb_err *err) OSB_MUST_CHECK;
/* Bytes used by the regular files under path (st_blocks), no symlinks
 * followed. */
unsigned long long osb_rtfs_du(const char *path);
#endif
