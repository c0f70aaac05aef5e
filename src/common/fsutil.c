#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

int osb_mkdir_p(const char *path, mode_t mode, struct osb_err *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return osb_err_set(err, OSB_E_INVALID, "path too long: %s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char save = *c;
        *c = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return osb_err_sys(err, "create directory `%s`", p);
        *c = save;
        if (!save)
            return 0;
    }
}

int osb_write_fileat(int dirfd, const char *path, const char *data, struct osb_err *err)
{
    _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_TRUNC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", path);
    size_t n = strlen(data);
    if (OSB_RETRY(write(fd, data, n)) != (ssize_t)n)
        return osb_err_sys(err, "write `%s` to `%s`", data, path);
    return 0;
}
