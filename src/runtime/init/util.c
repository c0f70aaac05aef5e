#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/init.h"

int osb_init_write_fileat(int dirfd, const char *name, const char *data, struct osb_err *err)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_TRUNC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", name);
    size_t n = strlen(data);
    if (OSB_RETRY(write(fd, data, n)) != (ssize_t)n)
        return osb_err_sys(err, "write `%s` to `%s`", data, name);
    return 0;
}

int osb_init_write_file(const char *path, const char *data, struct osb_err *err)
{
    return osb_init_write_fileat(AT_FDCWD, path, data, err);
}

void osb_init_trace(const char *step)
{
    static int on = -1;
    static struct timespec t0;
    if (on < 0) {
        on = getenv("OSB_INIT_TRACE") != NULL;
        clock_gettime(CLOCK_MONOTONIC, &t0);
    }
    if (!on)
        return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
    fprintf(stderr, "osb-sandbox-init[%d] %-28s +%.3f ms\n", (int)getpid(), step, ms);
}
