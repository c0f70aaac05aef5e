/* Child reaping. execd may be PID 1, so it reaps every child with
 * waitpid(-1): its own (reported to the module that registered the pid) and
 * orphans re-parented to it (just collected). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "common/xalloc.h"
#include "execd/execd.h"

struct watch {
    pid_t pid;
    osb_execd_exit_cb cb;
    void *ud;
    struct watch *next;
};

static struct watch *watches;
static uv_signal_t sigchld;

void osb_execd_watch_child(pid_t pid, osb_execd_exit_cb cb, void *ud)
{
    struct watch *w = osb_xmalloc(sizeof *w);
    *w = (struct watch){.pid = pid, .cb = cb, .ud = ud, .next = watches};
    watches = w;
}

void osb_execd_unwatch_child(pid_t pid)
{
    for (struct watch **p = &watches; *p; p = &(*p)->next) {
        if ((*p)->pid == pid) {
            struct watch *w = *p;
            *p = w->next;
            free(w);
            return;
        }
    }
}

static void dispatch(pid_t pid, int status)
{
    for (struct watch **p = &watches; *p; p = &(*p)->next) {
        if ((*p)->pid != pid)
            continue;
        struct watch *w = *p;
        *p = w->next;
        w->cb(pid, status, w->ud);
        free(w);
        return;
    }
}

static void reap(uv_signal_t *h, int sig)
{
    (void)h;
    (void)sig;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        dispatch(pid, status);
}

void osb_execd_reaper_start(uv_loop_t *loop)
{
    uv_signal_init(loop, &sigchld);
    uv_signal_start(&sigchld, reap, SIGCHLD);
    uv_unref((uv_handle_t *)&sigchld);
    /* Children may have exited before the handler was installed. */
    reap(&sigchld, SIGCHLD);
}
