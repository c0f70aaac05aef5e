/* The gVisor backend's top: open/close, destroy/stop, pause/resume,
 * watches (a pidfd on the runsc sandbox process, which exits with execd),
 * adopt, orphans and the ops table. destroy, pause and resume run runsc
 * inline on the loop (tens of ms each). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/gvisor/state.h"

struct osb_gv_watch {
    struct osb_gv *rt;
    struct osb_gv_watch *next;
    char id[OSB_RT_ID_MAX + 1];
    uv_poll_t poll;
    int pidfd;
    osb_rt_exit_cb cb;
    void *ud;
};

static void maybe_free(struct osb_gv *rt)
{
    if (!rt->closing || rt->open_handles)
        return;
    free(rt->runsc);
    free(rt->root_dir);
    free(rt->sandboxes_dir);
    free(rt->execd_path);
    free(rt->host_root);
    free(rt);
}

static char *find_runsc(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/sbin:/usr/bin"; p && *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/runsc", (int)n, p);
        if (access(buf, X_OK) == 0)
            return osb_xstrdup(buf);
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

static int gv_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                   struct osb_err *err)
{
    char *runsc = find_runsc();
    if (!runsc)
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "the gvisor runtime needs runsc on PATH "
                           "(Debian: apt-get install runsc)");
    struct osb_gv *rt = osb_xcalloc(1, sizeof *rt);
    rt->base.ops = &osb_gvisor_ops;
    rt->loop = loop;
    rt->runsc = runsc;
    rt->platform = "ptrace";
    rt->root_dir = osb_xasprintf("%s/gvisor/runsc", cfg->state_dir);
    rt->sandboxes_dir = osb_xasprintf("%s/gvisor/sandboxes", cfg->state_dir);
    if (cfg->execd_path) {
        rt->execd_path = osb_xstrdup(cfg->execd_path);
    } else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        rt->execd_path = osb_xasprintf("%s/execd", exe);
    }
    snprintf(rt->describe, sizeof rt->describe, "gvisor (%s, platform %s)", runsc, rt->platform);
    if (osb_mkdir_p(rt->root_dir, 0700, err) < 0 || osb_mkdir_p(rt->sandboxes_dir, 0700, err) < 0 ||
        access(rt->execd_path, X_OK) < 0 || osb_gv_host_open(rt, cfg->state_dir, err) < 0) {
        if (err->code == OSB_E_OK)
            osb_err_sys(err, "execd binary %s", rt->execd_path);
        rt->closing = true;
        maybe_free(rt);
        return -1;
    }
    *out = &rt->base;
    return 0;
}

static void on_watch_closed(uv_handle_t *h)
{
    struct osb_gv_watch *w = h->data;
    struct osb_gv *rt = w->rt;
    close(w->pidfd);
    free(w);
    rt->open_handles--;
    maybe_free(rt);
}

static void drop_watch(struct osb_gv_watch *w)
{
    for (struct osb_gv_watch **p = &w->rt->watches; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
}

static void cancel_watches(struct osb_gv *rt, const char *id)
{
    for (struct osb_gv_watch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (!id || strcmp(w->id, id) == 0)
            drop_watch(w);
    }
}

static void gv_close(struct osb_rt *base)
{
    struct osb_gv *rt = osb_gv_of(base);
    rt->closing = true;
    cancel_watches(rt, NULL);
    maybe_free(rt);
}

static const char *gv_describe(const struct osb_rt *base)
{
    return ((const struct osb_gv *)base)->describe;
}

static int gv_destroy(struct osb_rt *base, const char *id, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    cancel_watches(rt, id);
    if (!osb_gv_cancel_create(rt, id)) /* a create in flight tears down itself */
        osb_gv_teardown(rt, id, false);
    return 0;
}

static int gv_stop(struct osb_rt *base, const char *id, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    cancel_watches(rt, id);
    if (!osb_gv_cancel_create(rt, id))
        osb_gv_teardown(rt, id, true);
    return 0;
}

static int pause_resume(struct osb_rt *base, const char *id, const char *cmd, struct osb_err *err)
{
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    const char *args[] = {cmd, id, NULL};
    struct osb_buf out;
    osb_buf_init(&out, 64u << 10);
    int rc = osb_gv_runsc(osb_gv_of(base), false, args, -1, &out, err);
    osb_buf_free(&out);
    return rc;
}

static int gv_pause(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return pause_resume(rt, id, "pause", err);
}

static int gv_resume(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return pause_resume(rt, id, "resume", err);
}

static void on_exit_readable(uv_poll_t *p, int status, int events)
{
    (void)status, (void)events;
    struct osb_gv_watch *w = p->data;
    struct osb_rt_end end = {.how = OSB_RT_END_PID1_EXITED};
    osb_rt_exit_cb cb = w->cb;
    void *ud = w->ud;
    char id[OSB_RT_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", w->id);
    drop_watch(w);
    cb(ud, id, &end);
}

static bool gv_alive(struct osb_rt *base, const char *id, const struct osb_rt_handle *h)
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

static int gv_watch(struct osb_rt *base, const char *id, const struct osb_rt_handle *h,
                    osb_rt_exit_cb cb, void *ud, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    int fd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (fd < 0 || !gv_alive(base, id, h)) {
        if (fd >= 0)
            close(fd);
        return osb_err_set(err, OSB_E_NOTFOUND, "gvisor sandbox `%s` is not running", id);
    }
    struct osb_gv_watch *w = osb_xcalloc(1, sizeof *w);
    w->rt = rt;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->pidfd = fd;
    w->cb = cb;
    w->ud = ud;
    uv_poll_init(rt->loop, &w->poll, fd);
    w->poll.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_exit_readable);
    w->next = rt->watches;
    rt->watches = w;
    rt->open_handles++;
    return 0;
}

static int gv_adopt(struct osb_rt *base, const char *id, struct osb_rt_handle *h,
                    struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    char dir[PATH_MAX], status[32];
    osb_gv_dir(rt, id, dir, sizeof dir);
    snprintf(h->sock_path, sizeof h->sock_path, "%s/sock/" OSB_GV_SOCK_NAME, dir);
    snprintf(h->log_path, sizeof h->log_path, "%s/log", dir);
    pid_t pid;
    if (osb_gv_state(rt, id, &pid, status, sizeof status, err) < 0)
        return -1;
    if (pid != h->pid || !gv_alive(base, id, h))
        return osb_err_set(err, OSB_E_NOTFOUND, "gvisor sandbox `%s` is not running (%s)", id,
                           status);
    return 0;
}

static int gv_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out,
                    struct osb_err *err)
{
    (void)rt, (void)out;
    return osb_err_set(err, OSB_E_UNSUPPORTED, "the gvisor runtime has no stats for `%s` yet", id);
}

static bool listed(const char *const *known, const char *id)
{
    for (size_t i = 0; known && known[i]; i++)
        if (strcmp(known[i], id) == 0)
            return true;
    return false;
}

static int gv_cleanup_orphans(struct osb_rt *base, const char *const *known, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    DIR *d = opendir(rt->sandboxes_dir);
    if (!d)
        return osb_err_sys(err, "opendir %s", rt->sandboxes_dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && !listed(known, e->d_name) &&
            osb_gv_check_id(e->d_name, NULL) == 0 && !osb_gv_cancel_create(rt, e->d_name)) {
            osb_info("gvisor: removing orphan sandbox %s", e->d_name);
            osb_gv_teardown(rt, e->d_name, false);
        }
    closedir(d);
    return 0;
}

const struct osb_runtime_ops osb_gvisor_ops = {
    .name = "gvisor",
    .open = gv_open,
    .close = gv_close,
    .describe = gv_describe,
    .create = osb_gv_create,
    .destroy = gv_destroy,
    .stop = gv_stop,
    .pause = gv_pause,
    .resume = gv_resume,
    .snapshot = osb_gv_snapshot,
    .watch = gv_watch,
    .alive = gv_alive,
    .adopt = gv_adopt,
    .stats = gv_stats,
    .cleanup_orphans = gv_cleanup_orphans,
};
