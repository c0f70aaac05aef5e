/* Child reaping. execd may be PID 1, so it reaps every child with
 * waitpid(-1): its own (reported to the module that registered the pid) and
 * orphans re-parented to it (just collected). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "common/xalloc.h"
#include "execd/execd.h"

struct osb_execd_watch {
    pid_t pid;
    osb_execd_exit_cb cb;
    void *ud;
    struct osb_execd_watch *next;
};

void osb_execd_watch_child(struct osb_execd *x, pid_t pid, osb_execd_exit_cb cb, void *ud)
{
    struct osb_execd_watch *w = osb_xmalloc(sizeof *w);
    *w = (struct osb_execd_watch){.pid = pid, .cb = cb, .ud = ud, .next = x->watches};
    x->watches = w;
}

void osb_execd_unwatch_child(struct osb_execd *x, pid_t pid)
{
    for (struct osb_execd_watch **p = &x->watches; *p; p = &(*p)->next) {
        if ((*p)->pid == pid) {
            struct osb_execd_watch *w = *p;
            *p = w->next;
            free(w);
            return;
        }
    }
}

static void dispatch(struct osb_execd *x, pid_t pid, int status)
{
    for (struct osb_execd_watch **p = &x->watches; *p; p = &(*p)->next) {
        if ((*p)->pid != pid)
            continue;
        struct osb_execd_watch *w = *p;
        *p = w->next;
        w->cb(pid, status, w->ud);
        free(w);
        return;
    }
}

static void reap(uv_signal_t *h, int sig)
{
    (void)sig;
    struct osb_execd *x = h->data;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        dispatch(x, pid, status);
}

void osb_execd_reaper_start(struct osb_execd *x)
{
    uv_signal_init(x->loop, &x->sigchld);
    x->sigchld.data = x;
    uv_signal_start(&x->sigchld, reap, SIGCHLD);
    uv_unref((uv_handle_t *)&x->sigchld);
    /* Children may have exited before the handler was installed. */
    reap(&x->sigchld, SIGCHLD);
}
