/* Watches: a sandbox's PID 1 through execd's report pipe, or a pidfd without one
 * (common/endreport.h), for new sandboxes and re-adopted ones alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/endreport.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "runtime/init/spec.h"
#include "common/fstree.h"
#include "runtime/native/state.h"

struct osb_nat_watch {
    struct osb_nat *rt;
    struct osb_nat_watch *next;
    char id[OSB_RT_ID_MAX + 1];
    pid_t pid;
    int pidfd;        /* -1 while the report pipe stands for it */
    uv_poll_t poll;   /* initialised only with pidfd >= 0 */
    int report_fd;    /* our copy of the report pipe's read end, or -1 */
    uv_poll_t report; /* initialised only with report_fd >= 0 */
    int open_handles;
    osb_rt_exit_cb cb;
    void *ud;
};

static void on_watch_closed(uv_handle_t *h)
{
    struct osb_nat_watch *w = h->data;
    struct osb_nat *rt = w->rt;
    if (--w->open_handles > 0)
        return;
    if (w->pidfd >= 0)
        close(w->pidfd);
    if (w->report_fd >= 0)
        close(w->report_fd);
    free(w);
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

static void unlink_watch(struct osb_nat *rt, struct osb_nat_watch *w)
{
    for (struct osb_nat_watch **p = &rt->watches; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void close_watch(struct osb_nat_watch *w)
{
    if (w->pidfd >= 0) {
        uv_poll_stop(&w->poll);
        uv_close((uv_handle_t *)&w->poll, on_watch_closed);
    }
    if (w->report_fd >= 0) {
        uv_poll_stop(&w->report);
        uv_close((uv_handle_t *)&w->report, on_watch_closed);
    }
}

void osb_nat_close_watches(struct osb_nat *rt)
{
    while (rt->watches) {
        struct osb_nat_watch *w = rt->watches;
        unlink_watch(rt, w);
        close_watch(w);
    }
}

/* What the report pipe holds: nothing yet (EAGAIN: 1), or the end. The
 * pipe's content is untrusted: one bounded read, parsed strictly. */
static int read_report(struct osb_nat_watch *w, struct osb_rt_end *end)
{
    *end = (struct osb_rt_end){.how = OSB_RT_END_PID1_EXITED};
    if (w->report_fd < 0)
        return 0;
    char buf[OSB_ENDREPORT_MAX + 1];
    ssize_t n = OSB_RETRY(read(w->report_fd, buf, sizeof buf));
    if (n < 0 && errno == EAGAIN)
        return 1;
    if (n <= 0)
        return 0;
    end->how = osb_endreport_parse(buf, (size_t)n, &end->report) == 0 ? OSB_RT_END_REPORTED
                                                                      : OSB_RT_END_BAD_REPORT;
    return 0;
}

static void finish_watch(struct osb_nat_watch *w, const struct osb_rt_end *end)
{
    struct osb_nat *rt = w->rt;
    osb_nat_kid_reap(rt, w->pid);
    unlink_watch(rt, w);
    char id[sizeof w->id];
    snprintf(id, sizeof id, "%s", w->id);
    osb_rt_exit_cb cb = w->cb;
    void *ud = w->ud;
    close_watch(w);
    cb(ud, id, end);
}

/* PID 1 is gone; a report it wrote first is still in the pipe. */
static void on_pidfd(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct osb_nat_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        end.how = OSB_RT_END_PID1_EXITED;
    finish_watch(w, &end);
}

/* A line, or EOF: execd gone without one. */
static void on_report(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct osb_nat_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        return;
    finish_watch(w, &end);
}

void osb_nat_cancel_watches(struct osb_nat *rt, const char *id)
{
    for (struct osb_nat_watch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (strcmp(w->id, id) == 0) {
            unlink_watch(rt, w);
            close_watch(w);
        }
    }
}

/* A copy of the read end of execd's report pipe (OSB_SANDBOX_REPORT_FD),
 * non-blocking; -1 when there is none (a sandbox started before execd had
 * one: only its exit is seen then) or it is not a pipe's read end. */
static int take_report(int pidfd)
{
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, OSB_SANDBOX_REPORT_FD, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || fl < 0 || (fl & O_ACCMODE) != O_RDONLY ||
        fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One descriptor per sandbox, as thousands may be alive under one open
 * files limit: the report pipe when execd has one (its EOF is execd's
 * exit: only execd holds the write end, and every process of the sandbox
 * dies with it), else the pidfd. */
static void start_watch(struct osb_nat *rt, struct osb_nat_watch *w)
{
    w->report_fd = take_report(w->pidfd);
    if (w->report_fd >= 0) {
        close(w->pidfd);
        w->pidfd = -1;
        uv_poll_init(rt->loop, &w->report, w->report_fd);
        w->report.data = w;
        uv_poll_start(&w->report, UV_READABLE, on_report);
    } else {
        uv_poll_init(rt->loop, &w->poll, w->pidfd);
        w->poll.data = w;
        uv_poll_start(&w->poll, UV_READABLE, on_pidfd);
    }
    w->open_handles = 1;
    rt->open_handles++;
    w->next = rt->watches;
    rt->watches = w;
}

int osb_nat_watch(struct osb_rt *base, const char *id, const struct osb_rt_handle *h,
                  osb_rt_exit_cb cb, void *ud, struct osb_err *err)
{
    struct osb_nat *rt = osb_nat_of(base);
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (fd < 0 && errno != ESRCH)
        return osb_err_sys(err, "pidfd_open %d", (int)h->pid);
    /* Checked after opening the pidfd: if the pid was reused in between,
     * the start time tells. */
    if (fd < 0 || !osb_nat_alive(base, id, h)) {
        if (fd >= 0)
            close(fd);
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` is not running (pid %d)", id,
                           (int)h->pid);
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct osb_nat_watch *w = osb_xcalloc(1, sizeof *w);
    w->rt = rt;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->pid = h->pid;
    w->pidfd = fd;
    w->cb = cb;
    w->ud = ud;
    start_watch(rt, w);
    return 0;
}
