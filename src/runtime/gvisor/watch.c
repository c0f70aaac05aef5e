/* Watches on gvisor sandboxes: a pidfd on the runsc-sandbox process (it
 * exits with execd) and the report FIFO (<dir>/report), where execd writes
 * how the entrypoint ended (common/endreport.h): runsc create's stdin is
 * that FIFO, held read-write, and execd runs with --report-to-fd 0. The
 * FIFO is opened by name, so a watch after a restart reads a line written
 * while no server ran (execd keeps a copy open, which keeps the line). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/endreport.h"
#include "common/fstree.h"
#include "common/xalloc.h"
#include "runtime/gvisor/state.h"

struct osb_gv_watch {
    struct osb_gv *rt;
    struct osb_gv_watch *next;
    char id[OSB_RT_ID_MAX + 1];
    uv_poll_t poll;
    int pidfd;
    uv_poll_t report; /* initialised only with report_fd >= 0 */
    int report_fd;
    int open_handles;
    osb_rt_exit_cb cb;
    void *ud;
};

static void on_watch_closed(uv_handle_t *h)
{
    struct osb_gv_watch *w = h->data;
    struct osb_gv *rt = w->rt;
    if (--w->open_handles > 0)
        return;
    close(w->pidfd);
    if (w->report_fd >= 0)
        close(w->report_fd);
    free(w);
    rt->open_handles--;
    osb_gv_maybe_free(rt);
}

static void drop_watch(struct osb_gv_watch *w)
{
    for (struct osb_gv_watch **p = &w->rt->watches; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
    if (w->report_fd >= 0)
        uv_close((uv_handle_t *)&w->report, on_watch_closed);
}

void osb_gv_cancel_watches(struct osb_gv *rt, const char *id)
{
    for (struct osb_gv_watch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (!id || strcmp(w->id, id) == 0)
            drop_watch(w);
    }
}

/* 1: nothing yet; 0: *end says how it ended. The FIFO's content is
 * untrusted: one bounded read, parsed strictly. */
static int read_report(struct osb_gv_watch *w, struct osb_rt_end *end)
{
    *end = (struct osb_rt_end){.how = OSB_RT_END_PID1_EXITED};
    if (w->report_fd < 0)
        return 0;
    char buf[OSB_ENDREPORT_MAX + 1];
    ssize_t n;
    while ((n = read(w->report_fd, buf, sizeof buf)) < 0 && errno == EINTR)
        ;
    if (n < 0 && errno == EAGAIN)
        return 1;
    if (n <= 0)
        return 0;
    end->how = osb_endreport_parse(buf, (size_t)n, &end->report) == 0 ? OSB_RT_END_REPORTED
                                                                      : OSB_RT_END_BAD_REPORT;
    return 0;
}

static void finish(struct osb_gv_watch *w, const struct osb_rt_end *end)
{
    osb_rt_exit_cb cb = w->cb;
    void *ud = w->ud;
    char id[OSB_RT_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", w->id);
    drop_watch(w);
    cb(ud, id, end);
}

/* The sandbox process is gone; a report written first is in the FIFO. */
static void on_exit_readable(uv_poll_t *p, int status, int events)
{
    (void)status, (void)events;
    struct osb_gv_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        end.how = OSB_RT_END_PID1_EXITED;
    const char *why = end.how == OSB_RT_END_PID1_EXITED ? osb_gv_cg_why(w->rt, w->id) : NULL;
    if (why) /* the cgroups are still there: runsc delete removes them */
        osb_gv_log_note(w->rt, w->id, why);
    finish(w, &end);
}

static void on_report(uv_poll_t *p, int status, int events)
{
    (void)status, (void)events;
    struct osb_gv_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        return;
    if (end.how == OSB_RT_END_PID1_EXITED) {
        /* Every writer closed (the sandbox is ending): its pidfd says so. */
        uv_poll_stop(p);
        return;
    }
    finish(w, &end);
}

bool osb_gv_alive(struct osb_rt *base, const char *id, const struct osb_rt_handle *h)
{
    (void)base, (void)id;
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)h->pid);
    ssize_t n = h->pid > 0 ? osb_fs_read(p, buf, sizeof buf) : -1;
    char *s = n > 0 ? strrchr(buf, ')') : NULL;
    for (int f = 2; f < 22 && s; f++) {
        s = strchr(s + 1, ' ');
    }
    return s && strtoull(s + 1, NULL, 10) == h->start_time;
}

/* The report FIFO's read end, non-blocking; -1 if the sandbox has none
 * (keep_running: no report) or it is not a FIFO. */
static int open_report(struct osb_gv *rt, const char *id)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    osb_gv_dir(rt, id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/" OSB_GV_REPORT_FIFO, dir);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int osb_gv_watch(struct osb_rt *base, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    int fd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (fd < 0 || !osb_gv_alive(base, id, h)) {
        if (fd >= 0)
            close(fd);
        return osb_err_set(err, OSB_E_NOTFOUND, "gvisor sandbox `%s` is not running", id);
    }
    struct osb_gv_watch *w = osb_xcalloc(1, sizeof *w);
    w->rt = rt;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->pidfd = fd;
    w->report_fd = open_report(rt, id);
    w->cb = cb;
    w->ud = ud;
    uv_poll_init(rt->loop, &w->poll, fd);
    w->poll.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_exit_readable);
    w->open_handles = 1;
    if (w->report_fd >= 0) {
        uv_poll_init(rt->loop, &w->report, w->report_fd);
        w->report.data = w;
        uv_poll_start(&w->report, UV_READABLE, on_report);
        w->open_handles++;
    }
    w->next = rt->watches;
    rt->watches = w;
    rt->open_handles++;
    return 0;
}
