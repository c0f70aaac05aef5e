/* The native backend on the server's loop: open/close, reaping on
 * SIGCHLD, pause/resume, stats and the ops table (state.h lists the other
 * files; this one is the top of them).
 *
 * Children: the server is a child subreaper, so each sandbox's PID 1
 * becomes its child once the helper exits. A SIGCHLD uv_signal reaps only
 * pids this backend started (helpers, sandbox PID 1s) with waitpid(pid),
 * never waitpid(-1), so libuv's own uv_spawn children keep working.
 * Watches use pidfds (uv_poll), which also work for sandboxes re-adopted
 * after a server restart (no longer our children). */
#include "runtime/native/native.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/fstree.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/native/probe.h"
#include "runtime/native/sysfs.h"
#include "runtime/native/state.h"

/* ------------------------------------------------------------ lifetime */

static void on_rt_handle_closed(uv_handle_t *h)
{
    struct osb_nat *rt = h->data;
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

/* ------------------------------------------------------------ children */

static void on_sigchld(uv_signal_t *h, int sig)
{
    (void)sig;
    osb_nat_reap_all(h->data);
}

/* ------------------------------------------------------------ helpers */

static char *exe_sibling(const char *name)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return osb_xstrdup(name);
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    return osb_xasprintf("%s/%s", exe, name);
}

/* ------------------------------------------------------------ open/close */

static int make_dirs(struct osb_nat *rt, struct osb_err *err)
{
    if (strpbrk(rt->state_dir, ",:\\\n "))
        return osb_err_set(err, OSB_E_INVALID,
                           "state dir `%s` may not contain ',', ':', '\\', spaces or newlines "
                           "(it is used in overlayfs mount options)",
                           rt->state_dir);
    if (osb_mkdir_p(rt->state_dir, 0700, err) < 0 ||
        osb_mkdir_p(rt->sandboxes_dir, 0700, err) < 0 || osb_mkdir_p(rt->images_dir, 0755, err) < 0)
        return -1;
    /* Sandboxes' overlay lower dirs live under images/: reachable for the
     * sandbox helper, not writable by anyone else. */
    chmod(rt->images_dir, 0755);
    return 0;
}

static int check_binaries(struct osb_nat *rt, struct osb_err *err)
{
    if (access(rt->execd_path, X_OK) < 0)
        return osb_err_sys(err, "execd binary `%s`", rt->execd_path);
    if (access(rt->init_path, X_OK) < 0)
        return osb_err_sys(err, "sandbox init helper `%s`", rt->init_path);
    return 0;
}

static void start_handles(struct osb_nat *rt)
{
    uv_signal_init(rt->loop, &rt->sigchld);
    rt->sigchld.data = rt;
    uv_signal_start(&rt->sigchld, on_sigchld, SIGCHLD);
    uv_unref((uv_handle_t *)&rt->sigchld);
    rt->open_handles = 1;
}

static struct osb_nat *nat_new(const struct osb_rt_config *cfg, uv_loop_t *loop)
{
    struct osb_nat *rt = osb_xcalloc(1, sizeof *rt);
    rt->base.ops = &osb_native_ops;
    rt->loop = loop;
    rt->state_dir = osb_xstrdup(cfg->state_dir);
    for (size_t n = strlen(rt->state_dir); n > 1 && rt->state_dir[n - 1] == '/'; n--)
        rt->state_dir[n - 1] = '\0';
    rt->sandboxes_dir = osb_xasprintf("%s/sandboxes", rt->state_dir);
    rt->images_dir = osb_xasprintf("%s/images", rt->state_dir);
    rt->execd_path = cfg->execd_path ? osb_xstrdup(cfg->execd_path) : exe_sibling("execd");
    rt->init_path = cfg->init_path ? osb_xstrdup(cfg->init_path) : exe_sibling("osb-sandbox-init");
    rt->closing = true;
    rt->sandboxes_fd = -1;
    rt->sysfs_fd = -1;
    rt->ino_fd = -1;
    osb_idclaim_init(&rt->claim);
    return rt;
}

/* The ranges of the sandboxes that exist (their state dirs' userns files):
 * a restart never hands them out again. */
static int load_ranges(struct osb_nat *rt, struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(rt->sandboxes_dir);
    if (!d)
        return osb_err_sys(err, "open `%s`", rt->sandboxes_dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!osb_nat_valid_id(e->d_name))
            continue;
        char path[PATH_MAX], buf[64];
        snprintf(path, sizeof path, "%s/%s/%s", rt->sandboxes_dir, e->d_name, OSB_SANDBOX_USERNS);
        unsigned long long first, count;
        if (osb_fs_read(path, buf, sizeof buf) <= 0)
            continue;
        if (sscanf(buf, "%llu %llu", &first, &count) != 2 || count != OSB_IDR_SLOT ||
            first > UINT32_MAX)
            return osb_err_set(err, OSB_E_INVALID, "bad user namespace record `%s`", path);
        if (osb_idr_mark(&rt->idr, e->d_name, (uint32_t)first, err) < 0)
            return osb_err_wrap(err, "[native] userns_range");
    }
    return 0;
}

/* What every sandbox idmaps: the image store, execd, the host image's
 * binds. */
static int probe(struct osb_nat *rt, uint32_t first, struct osb_err *err)
{
    const char *paths[OSB_ARRAY_LEN(rt->host.binds) + 3];
    size_t n = 0;
    paths[n++] = rt->images_dir;
    paths[n++] = rt->execd_path;
    for (size_t i = 0; i < rt->host.n_binds; i++)
        paths[n++] = rt->host.binds[i].src;
    paths[n] = NULL;
    return osb_userns_probe(paths, first, err);
}

/* On unless the config says false; a host that fails the probe runs
 * without them, with a warning, unless the config asked for them. */
static int open_userns(struct osb_nat *rt, const struct osb_rt_config *cfg, struct osb_err *err)
{
    if (!cfg->user_namespaces) {
        snprintf(rt->userns_why, sizeof rt->userns_why, "[native] user_namespaces = false");
        osb_info("native: user namespaces off (%s)", rt->userns_why);
        return 0;
    }
    uint32_t first, count;
    if (osb_idr_parse(cfg->userns_range, &first, &count, err) < 0)
        return osb_err_wrap(err, "[native] userns_range");
    /* Before the probe, which maps a user namespace to the range too. */
    if (osb_idclaim_take(&rt->claim, OSB_IDCLAIM_DIR, first, count, rt->state_dir, err) < 0)
        return -1;
    struct osb_err perr = {0};
    if (probe(rt, first, &perr) < 0) {
        osb_idclaim_drop(&rt->claim);
        if (cfg->userns_explicit)
            return osb_err_set(err, OSB_E_UNSUPPORTED,
                               "[native] user_namespaces = true, but this host cannot: %s "
                               "(set it to false to run sandboxes without them)",
                               perr.msg);
        snprintf(rt->userns_why, sizeof rt->userns_why, "the probe failed: %s", perr.msg);
        osb_warn("native: user namespaces off (%s); set [native] user_namespaces = false "
                 "to run without them on purpose",
                 rt->userns_why);
        return 0;
    }
    osb_idr_init(&rt->idr, first, count);
    rt->userns = true;
    if (load_ranges(rt, err) < 0)
        return -1;
    osb_info("native: user namespaces on (range %s, %zu sandboxes, %zu in use)", cfg->userns_range,
             rt->idr.n, osb_idr_used(&rt->idr));
    return 0;
}

static int nat_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                    struct osb_err *err)
{
    if (!cfg->state_dir || cfg->state_dir[0] != '/')
        return osb_err_set(err, OSB_E_INVALID, "state dir must be an absolute path");
    struct osb_nat *rt = nat_new(cfg, loop);
    if (geteuid() != 0) {
        osb_err_set(err, OSB_E_UNSUPPORTED,
                    "the native runtime needs root (namespaces, "
                    "mounts, cgroups)");
        goto fail;
    }
    if (make_dirs(rt, err) < 0 || check_binaries(rt, err) < 0 ||
        osb_cg_plan_init(&rt->plan, rt->state_dir, err) < 0 ||
        osb_img_host_prepare(rt->images_dir, &rt->host, err) < 0 || open_userns(rt, cfg, err) < 0)
        goto fail;
    rt->sandboxes_fd = open(rt->sandboxes_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rt->sandboxes_fd < 0) {
        osb_err_sys(err, "open `%s`", rt->sandboxes_dir);
        goto fail;
    }
    if ((rt->sysfs_fd = osb_nat_sysfs_open(err)) < 0)
        goto fail;
    /* Sandbox PID 1s re-parent to us when their helper exits: we can
     * reap them and learn their exit promptly. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        osb_err_sys(err, "become a child subreaper");
        goto fail;
    }
    if (rt->userns)
        snprintf(rt->describe, sizeof rt->describe,
                 "native (%s; user namespaces: %zu ranges of %u from uid %u, %zu in use)",
                 rt->plan.desc, rt->idr.n, OSB_IDR_SLOT, rt->idr.first, osb_idr_used(&rt->idr));
    else
        snprintf(rt->describe, sizeof rt->describe,
                 "native (%s; no user namespaces (%s): root inside is root outside)", rt->plan.desc,
                 rt->userns_why);
    rt->closing = false;
    start_handles(rt);
    *out = &rt->base;
    return 0;
fail:
    osb_nat_maybe_free(rt);
    return -1;
}

static void nat_close(struct osb_rt *base)
{
    struct osb_nat *rt = osb_nat_of(base);
    if (rt->closing)
        return;
    rt->closing = true;
    while (rt->creates) {
        struct osb_nat_create *c = rt->creates;
        rt->creates = c->next;
        c->finished = true;
        osb_nat_close_create(c);
    }
    osb_nat_close_watches(rt);
    /* Sandboxes outlive the server: execd keeps a reader of each pipe, and
     * a restarted server takes a new one (osb_rt_adopt). */
    osb_nat_close_logs(rt);
    uv_close((uv_handle_t *)&rt->sigchld, on_rt_handle_closed);
    /* Empty base cgroups go (those with live sandboxes stay: rmdir fails);
     * a runtime still using them recreates them on its next create. */
    for (size_t i = 0; i < rt->plan.n; i++)
        rmdir(rt->plan.bases[i].base);
}

static const char *nat_describe(const struct osb_rt *rt)
{
    return ((const struct osb_nat *)rt)->describe;
}

/* ------------------------------------------------------------ pause, stats */

static int nat_pause(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return osb_nat_set_frozen(osb_nat_of(rt), id, true, err);
}

static int nat_resume(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return osb_nat_set_frozen(osb_nat_of(rt), id, false, err);
}

static int nat_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out,
                     struct osb_err *err)
{
    struct osb_cg_set s;
    struct osb_cg_stats st;
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    osb_nat_load_set(osb_nat_of(rt), id, &s);
    if (osb_cg_stats(&s, &st, err) < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` not found", id);
    *out = (struct osb_rt_stats){st.memory_bytes, st.cpu_usage_ns, st.pids};
    return 0;
}

const struct osb_runtime_ops osb_native_ops = {
    .name = "native",
    .open = nat_open,
    .close = nat_close,
    .describe = nat_describe,
    .create = osb_nat_create,
    .destroy = osb_nat_destroy,
    .stop = osb_nat_stop,
    .pause = nat_pause,
    .resume = nat_resume,
    .snapshot = osb_nat_snapshot,
    .watch = osb_nat_watch,
    .alive = osb_nat_alive,
    .adopt = osb_nat_adopt,
    .stats = nat_stats,
    .cleanup_orphans = osb_nat_cleanup_orphans,
};
