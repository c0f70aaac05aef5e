/* Watches: how a sandbox ends (common/endreport.h), for new sandboxes and
 * re-adopted ones alike. Thousands of sandboxes live under one open files
 * limit, so an idle one costs no descriptor here when it can be helped:
 *
 *   inotify  execd has a report pipe: one inotify watch (on the backend's
 *            one inotify fd) on that pipe's inode, for IN_CLOSE_WRITE. Only
 *            execd holds the write end and closes it once it wrote its line,
 *            or dies; then the read end is taken from execd (pidfd_getfd:
 *            it waits to be stopped) and read.
 *   report   the same pipe, a copy of its read end held and polled (no
 *            inotify, or the pipe already had its line or EOF).
 *   pidfd    execd without a report pipe: its pidfd, readable when it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
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

enum watch_kind { WATCH_INOTIFY, WATCH_REPORT, WATCH_PIDFD };

struct osb_nat_watch {
    struct osb_nat *rt;
    struct osb_nat_watch *next;
    char id[OSB_RT_ID_MAX + 1];
    pid_t pid;           /* PID 1 */
    uint64_t start_time; /* its start time (osb_nat_alive) */
    enum watch_kind kind;
    int fd;         /* WATCH_REPORT: the read end; WATCH_PIDFD: the pidfd */
    int wd;         /* WATCH_INOTIFY: the inotify watch */
    uv_poll_t poll; /* on fd (not WATCH_INOTIFY) */
    osb_rt_exit_cb cb;
    void *ud;
};

static void free_watch(struct osb_nat_watch *w)
{
    struct osb_nat *rt = w->rt;
    if (w->kind != WATCH_INOTIFY)
        close(w->fd);
    free(w);
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

static void on_watch_closed(uv_handle_t *h)
{
    free_watch(h->data);
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
    if (w->kind == WATCH_INOTIFY) {
        inotify_rm_watch(w->rt->ino_fd, w->wd);
        free_watch(w);
        return;
    }
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static void on_ino_closed(uv_handle_t *h)
{
    struct osb_nat *rt = h->data;
    close(rt->ino_fd);
    rt->ino_fd = -1;
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

void osb_nat_close_watches(struct osb_nat *rt)
{
    while (rt->watches) {
        struct osb_nat_watch *w = rt->watches;
        unlink_watch(rt, w);
        close_watch(w);
    }
    if (rt->ino_fd >= 0 && !uv_is_closing((uv_handle_t *)&rt->ino_poll)) {
        uv_poll_stop(&rt->ino_poll);
        uv_close((uv_handle_t *)&rt->ino_poll, on_ino_closed);
    }
}

/* What the report pipe (fd, non-blocking) holds: nothing yet (EAGAIN: 1),
 * or the end. Its content is untrusted: one bounded read, parsed strictly. */
static int read_report(int fd, struct osb_rt_end *end)
{
    *end = (struct osb_rt_end){.how = OSB_RT_END_PID1_EXITED};
    if (fd < 0)
        return 0;
    char buf[OSB_ENDREPORT_MAX + 1];
    ssize_t n = OSB_RETRY(read(fd, buf, sizeof buf));
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
    struct osb_rt_end end = {.how = OSB_RT_END_PID1_EXITED};
    finish_watch(w, &end);
}

/* A line, or EOF: execd gone without one. */
static void on_report(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct osb_nat_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w->fd, &end) > 0)
        return;
    finish_watch(w, &end);
}

pid_t osb_nat_cancel_watches(struct osb_nat *rt, const char *id)
{
    pid_t pid = 0;
    for (struct osb_nat_watch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (strcmp(w->id, id) == 0) {
            pid = w->pid;
            unlink_watch(rt, w);
            close_watch(w);
        }
    }
    return pid;
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

/* ------------------------------------------------------------ inotify */

/* execd's report pipe after an IN_CLOSE_WRITE (or a queue overflow: any
 * of them): the line, if execd is still there to take it from, else its
 * plain exit. A pipe still open (a stale event) keeps the watch. */
static bool alive(struct osb_nat_watch *w)
{
    static struct osb_rt_handle h; /* large (paths): not on the stack */
    h.pid = w->pid;
    h.start_time = w->start_time;
    return osb_nat_alive(&w->rt->base, w->id, &h);
}

/* Returns whether the watch finished (and is gone). */
static bool check_ended(struct osb_nat_watch *w)
{
    struct osb_rt_end end = {.how = OSB_RT_END_PID1_EXITED};
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
    if (pfd >= 0 && alive(w)) {
        _cleanup_close_ int fd = take_report(pfd);
        if (fd >= 0 && read_report(fd, &end) > 0)
            return false;
    }
    finish_watch(w, &end);
    return true;
}

static struct osb_nat_watch *find_wd(struct osb_nat *rt, int wd)
{
    for (struct osb_nat_watch *w = rt->watches; w; w = w->next)
        if (w->kind == WATCH_INOTIFY && w->wd == wd)
            return w;
    return NULL;
}

/* Events were lost: every inotify watch is checked. A finished one ran
 * its callback, which may have ended others: the walk starts over. */
static void check_all(struct osb_nat *rt)
{
    for (struct osb_nat_watch *w = rt->watches; w;)
        w = w->kind == WATCH_INOTIFY && check_ended(w) ? rt->watches : w->next;
}

static void on_inotify(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct osb_nat *rt = p->data;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = OSB_RETRY(read(rt->ino_fd, buf, sizeof buf));
    for (ssize_t off = 0; n > 0 && off + (ssize_t)sizeof(struct inotify_event) <= n;) {
        const struct inotify_event *e = (const struct inotify_event *)(buf + off);
        off += (ssize_t)(sizeof *e + e->len);
        if (e->mask & IN_Q_OVERFLOW) {
            check_all(rt);
            continue;
        }
        struct osb_nat_watch *w = find_wd(rt, e->wd);
        if (w && (e->mask & IN_CLOSE_WRITE))
            check_ended(w);
    }
}

/* The backend's inotify fd, made on first use; false without one. */
static bool ino_ready(struct osb_nat *rt)
{
    if (rt->ino_fd >= 0)
        return true;
    if (rt->ino_failed)
        return false;
    rt->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (rt->ino_fd < 0) {
        rt->ino_failed = true;
        return false;
    }
    uv_poll_init(rt->loop, &rt->ino_poll, rt->ino_fd);
    rt->ino_poll.data = rt;
    uv_poll_start(&rt->ino_poll, UV_READABLE, on_inotify);
    rt->open_handles++;
    return true;
}

/* An inotify watch on the report pipe's inode (by its magic link: pipes
 * have no other path), kept only while the pipe is quiet: a line or an EOF
 * already there would bring no event. */
static bool watch_inode(struct osb_nat *rt, int report_fd, int *wd)
{
    if (!ino_ready(rt))
        return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", report_fd);
    *wd = inotify_add_watch(rt->ino_fd, path, IN_CLOSE_WRITE);
    if (*wd < 0)
        return false;
    struct pollfd pfd = {.fd = report_fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) == 0)
        return true;
    inotify_rm_watch(rt->ino_fd, *wd);
    return false;
}

static void start_watch(struct osb_nat *rt, struct osb_nat_watch *w, int pidfd)
{
    int report_fd = take_report(pidfd);
    if (report_fd >= 0 && watch_inode(rt, report_fd, &w->wd)) {
        w->kind = WATCH_INOTIFY;
        close(report_fd);
        close(pidfd);
    } else {
        w->kind = report_fd >= 0 ? WATCH_REPORT : WATCH_PIDFD;
        w->fd = report_fd >= 0 ? report_fd : pidfd;
        if (report_fd >= 0)
            close(pidfd);
        uv_poll_init(rt->loop, &w->poll, w->fd);
        w->poll.data = w;
        uv_poll_start(&w->poll, UV_READABLE, report_fd >= 0 ? on_report : on_pidfd);
    }
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
    w->start_time = h->start_time;
    w->cb = cb;
    w->ud = ud;
    w->fd = w->wd = -1;
    start_watch(rt, w, fd);
    return 0;
}
