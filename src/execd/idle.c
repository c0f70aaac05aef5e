#include "execd/idle.h"

#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

bool osb_execd_idle_argv(const char *const *argv)
{
    if (!argv[0] || !argv[1] || !argv[2] || argv[3])
        return false;
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    return strcmp(base, "tail") == 0 && strcmp(argv[1], "-f") == 0 &&
           strcmp(argv[2], "/dev/null") == 0;
}

void osb_execd_idle_run(void)
{
    prctl(PR_SET_NAME, "tail", 0, 0, 0);
    /* Dispositions are the defaults (the spawn reset them): SIGTERM, SIGINT,
     * SIGHUP and SIGKILL end it, as they end tail. */
    for (;;)
        pause();
}
