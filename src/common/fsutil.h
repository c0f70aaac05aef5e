/* Small filesystem helpers shared by every program. */
#ifndef OSB_FSUTIL_H
#define OSB_FSUTIL_H
#include <sys/types.h>

#include "common/err.h"

/* mkdir -p: every missing component is made with mode (less the umask);
 * existing directories are fine. */
int osb_mkdir_p(const char *path, mode_t mode, struct osb_err *err);
/* Write data to an existing file (cgroup and proc knobs), relative to dirfd
 * (AT_FDCWD for plain paths); a symlink is refused. */
int osb_write_fileat(int dirfd, const char *path, const char *data, struct osb_err *err);
#endif
