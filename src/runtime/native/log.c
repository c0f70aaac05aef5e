/* Each running sandbox's output pipe drained into its bounded log
 * (logdrain.h), at create and again after a restart (adopt). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "runtime/init/spec.h"
#include "runtime/logdrain.h"
#include "runtime/native/state.h"

struct osb_nat_log {
    struct osb_nat *rt;
    struct osb_nat_log *next;
    char id[OSB_RT_ID_MAX + 1];
    struct osb_logdrain *drain;
};

/* The host-only socket the helper bound (<sandbox dir>/execd.sock): the
 * sandbox cannot see or replace it. Through the backend's own descriptor
 * of sandboxes/ when the plain path is too long for sun_path ("self" is
 * the process that connects: this server). */
void osb_nat_fill_paths(struct osb_nat *rt, const char *id, struct osb_rt_handle *h)
{
    struct sockaddr_un sa;
    int n = snprintf(h->sock_path, sizeof h->sock_path, "%s/%s/%s", rt->sandboxes_dir, id,
                     OSB_SANDBOX_CTL_SOCK);
    if (n < 0 || (size_t)n >= sizeof sa.sun_path)
        snprintf(h->sock_path, sizeof h->sock_path, "/proc/self/fd/%d/%s/%s", rt->sandboxes_fd, id,
                 OSB_SANDBOX_CTL_SOCK);
    snprintf(h->log_path, sizeof h->log_path, "%s/%s/%s", rt->sandboxes_dir, id, OSB_SANDBOX_LOG);
}

static struct osb_nat_log *find_log(struct osb_nat *rt, const char *id)
{
    for (struct osb_nat_log *l = rt->logs; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

static void on_log_closed(void *ud)
{
    struct osb_nat *rt = ud;
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

void osb_nat_close_log(struct osb_nat *rt, const char *id, bool flush)
{
    for (struct osb_nat_log **p = &rt->logs; *p; p = &(*p)->next) {
        struct osb_nat_log *l = *p;
        if (strcmp(l->id, id) != 0)
            continue;
        *p = l->next;
        if (flush)
            osb_logdrain_flush(l->drain);
        osb_logdrain_close(l->drain, on_log_closed, rt);
        free(l);
        return;
    }
}

void osb_nat_close_logs(struct osb_nat *rt)
{
    while (rt->logs)
        osb_nat_close_log(rt, rt->logs->id, false);
}

/* A copy of the read end of the sandbox's output pipe, which execd keeps
 * at OSB_SANDBOX_LOG_FD for us (taken with pidfd_getfd, as the layer fd):
 * the same way at create and after a restart. pidfd first, liveness
 * second, so a recycled pid cannot hand us another process's fd. */
static int take_log_pipe(struct osb_nat *rt, const char *id, const struct osb_rt_handle *h,
                         struct osb_err *err)
{
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (pfd < 0 || !osb_nat_alive(&rt->base, id, h))
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` is not running", id);
    int fd = (int)syscall(SYS_pidfd_getfd, pfd, OSB_SANDBOX_LOG_FD, 0);
    if (fd < 0)
        return osb_err_sys(err, "take the output pipe of sandbox `%s`", id);
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || fl < 0 || (fl & O_ACCMODE) != O_RDONLY) {
        close(fd);
        return osb_err_set(err, OSB_E_INTERNAL,
                           "sandbox `%s`: its output pipe handle is not a pipe's read end", id);
    }
    return fd;
}

int osb_nat_attach_log(struct osb_nat *rt, const char *id, const struct osb_rt_handle *h,
                       struct osb_err *err)
{
    if (find_log(rt, id))
        return 0;
    int fd = take_log_pipe(rt, id, h, err);
    struct osb_logdrain *d;
    if (fd < 0 || osb_logdrain_open(rt->loop, fd, h->log_path, OSB_RT_LOG_MAX_BYTES,
                                    OSB_RT_LOG_KEEP_BYTES, &d, err) < 0)
        return -1;
    struct osb_nat_log *l = osb_xcalloc(1, sizeof *l);
    l->rt = rt;
    snprintf(l->id, sizeof l->id, "%s", id);
    l->drain = d;
    l->next = rt->logs;
    rt->logs = l;
    rt->open_handles++;
    return 0;
}

int osb_nat_adopt(struct osb_rt *base, const char *id, struct osb_rt_handle *h, struct osb_err *err)
{
    struct osb_nat *rt = osb_nat_of(base);
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    osb_nat_fill_paths(rt, id, h);
    return osb_nat_attach_log(rt, id, h, err);
}
