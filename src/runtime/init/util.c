#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/init.h"

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
