#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

int osb_open_beneath(int dirfd, const char *rel, int flags, struct osb_err *err)
{
    if (!rel || !*rel)
        rel = ".";
    struct open_how how = {.flags = (unsigned)(flags | O_CLOEXEC),
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd = (int)OSB_RETRY(syscall(SYS_openat2, dirfd, rel, &how, sizeof how));
    if (fd < 0 && err) {
        int e = errno;
        osb_err_sys(err, "open `%s`", rel);
        errno = e;
    }
    return fd;
}

/* One component beneath cur, created when missing; closes cur. */
static int step_beneath(int cur, const char *name, mode_t mode)
{
    int next = osb_open_beneath(cur, name, O_PATH | O_DIRECTORY, NULL);
    if (next < 0 && errno == ENOENT && (mkdirat(cur, name, mode) == 0 || errno == EEXIST))
        next = osb_open_beneath(cur, name, O_PATH | O_DIRECTORY, NULL);
    int e = errno;
    close(cur);
    errno = e;
    return next;
}

int osb_mkdir_beneath(int dirfd, const char *rel, mode_t mode, struct osb_err *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", rel) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return osb_err_set(err, OSB_E_INVALID, "path too long: %s", rel);
    }
    int cur = osb_open_beneath(dirfd, ".", O_PATH | O_DIRECTORY, err);
    for (char *c = p; cur >= 0 && *c;) {
        char *end = strchrnul(c, '/');
        bool last = !*end;
        *end = '\0';
        if (*c && (cur = step_beneath(cur, c, mode)) < 0) {
            int e = errno;
            if (err)
                osb_err_sys(err, "create directory `%s` (at `%s`)", rel, c);
            errno = e;
        }
        c = last ? end : end + 1;
    }
    return cur;
}
