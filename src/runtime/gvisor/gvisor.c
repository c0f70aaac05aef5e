/* The gVisor backend's top: open/close, destroy/stop, pause/resume,
 * adopt, stats, orphans and the ops table. destroy, pause and resume run runsc
 * inline on the loop (tens of ms each). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/gvisor/gvisor.h"
#include "runtime/gvisor/state.h"

static char *default_execd(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    return osb_xasprintf("%s/execd", exe);
}

static int gv_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                   struct osb_err *err)
{
    struct osb_gv *rt = osb_xcalloc(1, sizeof *rt);
    rt->base.ops = &osb_gvisor_ops;
    rt->loop = loop;
    rt->closing = true; /* until it is complete: osb_gv_maybe_free frees it */
    rt->platform = osb_xstrdup(cfg->gvisor_platform ? cfg->gvisor_platform : "ptrace");
    rt->debug = cfg->gvisor_debug;
    rt->root_dir = osb_xasprintf("%s/gvisor/runsc", cfg->state_dir);
    rt->sandboxes_dir = osb_xasprintf("%s/gvisor/sandboxes", cfg->state_dir);
    rt->execd_path = cfg->execd_path ? osb_xstrdup(cfg->execd_path) : default_execd();
    if (osb_gv_probe(rt, cfg->gvisor_runsc, err) < 0 || osb_mkdir_p(rt->root_dir, 0700, err) < 0 ||
        osb_mkdir_p(rt->sandboxes_dir, 0700, err) < 0 ||
        osb_gv_harden_probe(rt->sandboxes_dir, err) < 0 ||
        (access(rt->execd_path, X_OK) < 0 && osb_err_sys(err, "execd binary %s", rt->execd_path)) ||
        osb_gv_cg_open(rt, cfg->state_dir, err) < 0 ||
        osb_gv_host_open(rt, cfg->state_dir, err) < 0) {
        osb_gv_maybe_free(rt);
        return -1;
    }
    rt->closing = false;
    *out = &rt->base;
    return 0;
}

static void gv_close(struct osb_rt *base)
{
    struct osb_gv *rt = osb_gv_of(base);
    rt->closing = true;
    osb_gv_cancel_watches(rt, NULL);
    osb_gv_close_logs(rt);
    osb_gv_cg_close(rt);
    osb_gv_maybe_free(rt);
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
    osb_gv_cancel_watches(rt, id);
    osb_gv_close_log(rt, id, false);
    if (!osb_gv_cancel_create(rt, id)) /* a create in flight tears down itself */
        osb_gv_teardown(rt, id, false);
    return 0;
}

static int gv_stop(struct osb_rt *base, const char *id, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    osb_gv_cancel_watches(rt, id);
    osb_gv_close_log(rt, id, true);
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
    if (pid != h->pid || !osb_gv_alive(base, id, h))
        return osb_err_set(err, OSB_E_NOTFOUND, "gvisor sandbox `%s` is not running (%s)", id,
                           status);
    return osb_gv_attach_log(rt, id, h, err);
}

static int gv_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out,
                    struct osb_err *err)
{
    if (osb_gv_check_id(id, err) < 0)
        return -1;
    return osb_gv_cg_stats(osb_gv_of(rt), id, out, err);
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
    .watch = osb_gv_watch,
    .alive = osb_gv_alive,
    .adopt = gv_adopt,
    .stats = gv_stats,
    .cleanup_orphans = gv_cleanup_orphans,
};
