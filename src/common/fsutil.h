/* Small filesystem helpers shared by every program. */
#ifndef OSB_FSUTIL_H
#define OSB_FSUTIL_H
#include <sys/types.h>

#include "common/err.h"

/* mkdir -p: every missing component is made with mode (less the umask);
 * existing directories are fine. */
OSB_MUST_CHECK int osb_mkdir_p(const char *path, mode_t mode, struct osb_err *err);
/* Write data to an existing file (cgroup and proc knobs), relative to dirfd
 * (AT_FDCWD for plain paths); a symlink is refused. */
OSB_MUST_CHECK int osb_write_fileat(int dirfd, const char *path, const char *data,
                                    struct osb_err *err);
/* openat2(dirfd, rel, flags | O_CLOEXEC) with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS: neither "..", an absolute path nor a symlink may
 * lead outside dirfd (a symlink to "/" inside it fails with EXDEV instead of
 * opening the host's root). rel "" or "." opens dirfd itself. Returns the
 * fd; -1 with errno set (and err filled when non-NULL). */
OSB_MUST_CHECK int osb_open_beneath(int dirfd, const char *rel, int flags, struct osb_err *err);
/* mkdir -p of rel beneath dirfd, each component resolved with
 * osb_open_beneath from its parent (so a planted symlink cannot redirect the
 * creation); returns an O_PATH fd of the directory, -1 with errno/err. */
OSB_MUST_CHECK int osb_mkdir_beneath(int dirfd, const char *rel, mode_t mode, struct osb_err *err);
#endif
