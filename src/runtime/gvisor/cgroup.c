/* The gvisor sandboxes' cgroups. runsc creates and removes them from
 * config.json's linux.cgroupsPath and linux.resources; this file picks
 * that path, writes the limits, and reads the usage back for stats.
 *
 * One parent for all of them, as the native backend's: the layout comes
 * from runtime/cgroupfs.c's detection (its plan) under a base name of our
 * own, the hash of "<state>/gvisor", so native and gvisor sandboxes of one
 * state dir never share a parent (each backend's orphan sweep sees only
 * its own). On cgroup v1 the path is relative, so runsc puts each
 * controller's group under the server's own cgroup in that hierarchy (as
 * the native plan does); on v2 it is absolute, the plan's base directory,
 * since the plan may have moved the server into a leaf and a relative path
 * would land beneath it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/log.h"
#include "runtime/gvisor/state.h"

#define CPU_PERIOD_US 100000
/* The host tasks of a sandbox that are not the application's: the
 * Sentry's and the gofer's threads (about 50 when idle here). pids_max
 * counts the application's on top, as close to native's meaning as the
 * host's view allows: with ptrace each application thread is one more
 * host task. */
#define PIDS_HEADROOM 64

int osb_gv_cg_open(struct osb_gv *rt, const char *state_dir, struct osb_err *err)
{
    char key[PATH_MAX];
    snprintf(key, sizeof key, "%s/gvisor", state_dir);
    if (osb_cg_plan_init(&rt->plan, key, err) < 0)
        return osb_err_wrap(err, "gvisor cgroups");
    if (rt->plan.version == 1) {
        snprintf(rt->cg_path, sizeof rt->cg_path, "%s", rt->plan.base_name);
        return 0;
    }
    static char mi[1 << 16];
    struct osb_cg_mounts m;
    if (osb_fs_read("/proc/self/mountinfo", mi, sizeof mi) < 0)
        return osb_err_sys(err, "read /proc/self/mountinfo");
    osb_cg_parse_mountinfo(mi, &m);
    const char *base = rt->plan.bases[0].base;
    size_t n = strlen(m.v2);
    /* runsc looks for cgroup v2 at /sys/fs/cgroup only. */
    if (strcmp(m.v2, "/sys/fs/cgroup") != 0 || strncmp(base, m.v2, n) != 0 || base[n] != '/')
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "gvisor: runsc needs cgroup v2 mounted at /sys/fs/cgroup "
                           "(found `%s`)",
                           m.v2);
    snprintf(rt->cg_path, sizeof rt->cg_path, "%s", base + n);
    return 0;
}

static void remove_parent(const char *dir)
{
    if (rmdir(dir) < 0 && errno != ENOENT && errno != EBUSY)
        osb_debug("gvisor: rmdir %s: %s", dir, strerror(errno));
}

/* Whether every controller of list ("cpu,cpuacct", "name=systemd") is
 * among a mount's super options. */
static bool all_in(const char *list, const char *opts)
{
    char copy[256], *save = NULL;
    snprintf(copy, sizeof copy, "%s", list);
    for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(c);
        const char *p = opts;
        while ((p = strstr(p, c)) && !((p == opts || p[-1] == ',') && (!p[n] || p[n] == ',')))
            p += n;
        if (!p)
            return false;
    }
    return true;
}

/* v1: runsc made the parent in every hierarchy, not only the plan's
 * (blkio, devices, cpuset, name=systemd...): each mount of type cgroup
 * whose controllers a line of /proc/self/cgroup names. */
static void remove_v1_parents(const struct osb_gv *rt)
{
    static char mi[1 << 16], cg[1 << 14];
    if (osb_fs_read("/proc/self/mountinfo", mi, sizeof mi) < 0 ||
        osb_fs_read("/proc/self/cgroup", cg, sizeof cg) < 0)
        return;
    for (char *save = NULL, *l = strtok_r(mi, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char root[PATH_MAX], mnt[PATH_MAX], type[32], opts[256];
        const char *sep = strstr(l, " - ");
        if (!sep || sscanf(l, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
            sscanf(sep + 3, "%31s %*s %255s", type, opts) != 2 || strcmp(type, "cgroup") != 0)
            continue;
        for (const char *c = cg; c && *c; c = strchr(c, '\n') ? strchr(c, '\n') + 1 : NULL) {
            char ctl[256], own[PATH_MAX], dir[PATH_MAX * 2];
            if (sscanf(c, "%*[^:]:%255[^:]:%4095[^\n]", ctl, own) != 2 || !all_in(ctl, opts))
                continue;
            osb_cg_join_path(mnt, root, own, dir, PATH_MAX);
            size_t k = strlen(dir);
            snprintf(dir + k, sizeof dir - k, "/%s", rt->plan.base_name);
            remove_parent(dir);
            break;
        }
    }
}

void osb_gv_cg_close(struct osb_gv *rt)
{
    /* Empty parents go; those with live sandboxes stay (rmdir fails). */
    for (size_t i = 0; i < rt->plan.n; i++)
        remove_parent(rt->plan.bases[i].base);
    if (rt->plan.version == 1)
        remove_v1_parents(rt);
}

void osb_gv_add_limits(const struct osb_gv *rt, const struct osb_sandbox_spec *s, json_t *lnx)
{
    json_t *res = json_object();
    if (s->memory_bytes > 0) /* swap = limit: no swap on top */
        json_object_set_new(res, "memory",
                            json_pack("{s:I, s:I}", "limit", (json_int_t)s->memory_bytes, "swap",
                                      (json_int_t)s->memory_bytes));
    if (s->cpu_millicores > 0)
        json_object_set_new(res, "cpu",
                            json_pack("{s:I, s:I}", "quota",
                                      (json_int_t)(s->cpu_millicores * CPU_PERIOD_US / 1000),
                                      "period", (json_int_t)CPU_PERIOD_US));
    json_object_set_new(
        res, "pids",
        json_pack(
            "{s:I}", "limit",
            (json_int_t)((s->pids_max ? s->pids_max : OSB_LIMIT_DEFAULT_PIDS) + PIDS_HEADROOM)));
    json_object_set_new(lnx, "resources", res);
    char path[PATH_MAX + OSB_RT_ID_MAX + 2];
    snprintf(path, sizeof path, "%s/%s", rt->cg_path, s->id);
    json_object_set_new(lnx, "cgroupsPath", json_string(path));
}

/* The directories runsc made for id that the stats read: the plan's
 * hierarchies, less the v2 one a hybrid host adds for the native
 * backend's freeze and kill (runsc uses v1 only there). */
static void set_of(const struct osb_gv *rt, const char *id, struct osb_cg_set *s)
{
    struct osb_cg_set all;
    osb_cg_set_for(&rt->plan, id, &all);
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < all.n; i++)
        if (all.role[i] != OSB_CG_UNIFIED) {
            s->role[s->n] = all.role[i];
            snprintf(s->dir[s->n], sizeof s->dir[0], "%s", all.dir[i]);
            s->n++;
        }
}

int osb_gv_cg_stats(const struct osb_gv *rt, const char *id, struct osb_rt_stats *out,
                    struct osb_err *err)
{
    struct osb_cg_set s;
    set_of(rt, id, &s);
    struct osb_cg_stats st;
    if (osb_cg_stats(&s, &st, err) < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "gvisor sandbox `%s` has no cgroup", id);
    out->memory_bytes = st.memory_bytes;
    out->cpu_usage_ns = st.cpu_usage_ns;
    out->pids = st.pids;
    return 0;
}

/* The count after key ("oom_kill", "max") in dir/file, 0 if none. */
static unsigned long long counter(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX + 32], buf[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ssize_t n = osb_fs_read(path, buf, sizeof buf);
    size_t k = strlen(key);
    for (char *l = n > 0 ? buf : NULL; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ')
            return strtoull(l + k + 1, NULL, 10);
    return 0;
}

const char *osb_gv_cg_why(const struct osb_gv *rt, const char *id)
{
    struct osb_cg_set s;
    set_of(rt, id, &s);
    for (size_t i = 0; i < s.n; i++) {
        const char *d = s.dir[i];
        bool v2 = s.role[i] == OSB_CG_V2;
        if ((s.role[i] == OSB_CG_MEMORY && counter(d, "memory.oom_control", "oom_kill")) ||
            (v2 && counter(d, "memory.events", "oom_kill")))
            return "gvisor: the sandbox reached its memory limit and the host's OOM killer "
                   "ended it (all of its memory is the Sentry's: docs/internals/gvisor.md)\n";
        if ((s.role[i] == OSB_CG_PIDS || v2) && counter(d, "pids.events", "max"))
            return "gvisor: the sandbox reached its pids limit and the Sentry, which needs a "
                   "host thread per task, aborted (docs/internals/gvisor.md)\n";
    }
    return NULL;
}
