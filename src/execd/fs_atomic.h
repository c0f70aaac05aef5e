/* Whole-file replacement that never leaves a torn file: write a temp file
 * beside the target (same directory, so same filesystem), fsync it, then
 * rename(2) it over the target. Readers see the old content or the new,
 * and a crash or an aborted upload leaves the old content (or nothing). */
#ifndef OSB_EXECD_FS_ATOMIC_H
#define OSB_EXECD_FS_ATOMIC_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

struct osb_fs_tmp {
    int fd;     /* -1 once closed */
    char *path; /* NULL once renamed or removed */
};

/* What the committed file gets. */
struct osb_fs_tmp_attrs {
    bool set_mode;
    mode_t mode;
    uid_t uid;           /* (uid_t)-1: leave */
    gid_t gid;           /* (gid_t)-1: leave */
    bool owner_optional; /* an EPERM from chown is ignored (keeping an owner
                            is best effort when execd is not root) */
};

/* Create "<dir of target>/.<base>.osb-<random>" for writing; `mode` is
 * passed to open(2), so the umask applies as for any new file. */
OSB_MUST_CHECK int osb_fs_tmp_create(const char *target, mode_t mode, struct osb_fs_tmp *t,
                                     struct osb_err *err);
/* Temp file in dir (any name) for data whose target is not known yet. */
OSB_MUST_CHECK int osb_fs_tmp_create_in(const char *dir, mode_t mode, struct osb_fs_tmp *t,
                                        struct osb_err *err);
/* write(2) everything; -1 with errno on failure. */
OSB_MUST_CHECK int osb_fs_write_all(int fd, const void *data, size_t len);
/* Apply attrs, fsync, rename over target, fsync the directory. The temp
 * file is gone afterwards whatever happens. */
OSB_MUST_CHECK int osb_fs_tmp_commit(struct osb_fs_tmp *t, const char *target,
                                     const struct osb_fs_tmp_attrs *a, struct osb_err *err);
/* Close and unlink (no-op when already committed or discarded). */
void osb_fs_tmp_discard(struct osb_fs_tmp *t);
#endif
