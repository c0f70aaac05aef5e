#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/init.h"

/* The helper's start on CLOCK_MONOTONIC (boot-relative, as the field 22 of
 * /proc/self/stat: clock ticks since boot), so no clock needs keeping. */
static double start_ms(void)
{
    char buf[1024];
    _cleanup_close_ int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? (double)strtoull(p + 1, NULL, 10) * 1e3 / (double)sysconf(_SC_CLK_TCK) : 0;
}

void osb_init_trace(const char *step)
{
    if (!getenv("OSB_INIT_TRACE"))
        return;
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    double ms = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6 - start_ms();
    fprintf(stderr, "osb-sandbox-init[%d] %-28s +%.3f ms\n", (int)getpid(), step, ms);
}
