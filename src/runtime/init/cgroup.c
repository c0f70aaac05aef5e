/* The helper's cgroup work: one directory per hierarchy (v1) or one v2
 * directory, limits written before any sandbox process exists, so that the
 * clone()d PID 1 and everything it forks start inside. Paths come from the
 * runtime (runtime/cgroupfs.c decides the layout).
 *
 * Joining is done without the kernel's global cgroup_threadgroup_rwsem,
 * whose write side waits for an RCU grace period (~10 ms here, most of a
 * create's time):
 *  - v1: the helper moves its only thread by writing "0" (itself) to
 *    `tasks`, which the kernel does under cgroup_mutex alone;
 *  - v2: the helper does not move at all; the child is born in the v2
 *    cgroup with clone3(CLONE_INTO_CGROUP). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "runtime/init/init.h"

/* CFS period; quota = millicores * period / 1000. */
#define CPU_PERIOD_US 100000

static int set(const char *dir, const char *file, const char *val, struct osb_err *err)
{
    _cleanup_close_ int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return osb_err_sys(err, "open cgroup `%s`", dir);
    if (osb_write_fileat(d, file, val, err) < 0)
        return osb_err_wrap(err, "cgroup `%s`", dir);
    return 0;
}

static bool has(const char *dir, const char *file)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return access(p, F_OK) == 0;
}

static int limits_v2(const struct osb_init_spec *s, const char *dir, struct osb_err *err)
{
    char v[64];
    if (s->memory_bytes > 0) {
        snprintf(v, sizeof v, "%" PRId64, s->memory_bytes);
        if (set(dir, "memory.max", v, err) < 0)
            return -1;
        /* No swap: the memory limit is the whole budget, as in Docker's
         * default (--memory-swap = --memory). */
        if (has(dir, "memory.swap.max") && set(dir, "memory.swap.max", "0", err) < 0)
            return -1;
    }
    if (s->cpu_millicores > 0) {
        snprintf(v, sizeof v, "%" PRId64 " %d", s->cpu_millicores * CPU_PERIOD_US / 1000,
                 CPU_PERIOD_US);
        if (set(dir, "cpu.max", v, err) < 0)
            return -1;
    }
    snprintf(v, sizeof v, "%" PRId64, s->pids_max);
    return set(dir, "pids.max", v, err);
}

static int limits_v1(const struct osb_init_spec *s, const struct osb_init_cgroup *c,
                     struct osb_err *err)
{
    char v[64];
    switch (c->role) {
    case OSB_CG_MEMORY:
        if (s->memory_bytes <= 0)
            return 0;
        snprintf(v, sizeof v, "%" PRId64, s->memory_bytes);
        if (set(c->dir, "memory.limit_in_bytes", v, err) < 0)
            return -1;
        /* memsw exists only with swap accounting; it bounds memory+swap. */
        if (has(c->dir, "memory.memsw.limit_in_bytes"))
            return set(c->dir, "memory.memsw.limit_in_bytes", v, err);
        return 0;
    case OSB_CG_CPU:
        if (s->cpu_millicores <= 0)
            return 0;
        snprintf(v, sizeof v, "%d", CPU_PERIOD_US);
        if (set(c->dir, "cpu.cfs_period_us", v, err) < 0)
            return -1;
        snprintf(v, sizeof v, "%" PRId64, s->cpu_millicores * CPU_PERIOD_US / 1000);
        return set(c->dir, "cpu.cfs_quota_us", v, err);
    case OSB_CG_PIDS:
        snprintf(v, sizeof v, "%" PRId64, s->pids_max);
        return set(c->dir, "pids.max", v, err);
    default: return 0;
    }
}

static void remove_created(const struct osb_init_spec *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rmdir(s->cgroups[i].dir);
}

static bool is_v2(enum osb_cg_role r)
{
    return r == OSB_CG_V2 || r == OSB_CG_UNIFIED;
}

/* v1 only: move the calling (single-threaded) process. */
static int join(const char *dir, struct osb_err *err)
{
    return set(dir, "tasks", "0", err);
}

int osb_init_cgroups_enter(const struct osb_init_spec *s, int *v2fd, struct osb_err *err)
{
    *v2fd = -1;
    size_t made = 0;
    for (; made < s->n_cgroups; made++) {
        const struct osb_init_cgroup *c = &s->cgroups[made];
        if (mkdir(c->dir, 0755) < 0) {
            osb_err_sys(err, "create cgroup `%s`", c->dir);
            goto fail;
        }
    }
    for (size_t i = 0; i < s->n_cgroups; i++) {
        const struct osb_init_cgroup *c = &s->cgroups[i];
        int r = c->role == OSB_CG_V2 ? limits_v2(s, c->dir, err) : limits_v1(s, c, err);
        if (r < 0)
            goto fail;
    }
    for (size_t i = 0; i < s->n_cgroups; i++) {
        const struct osb_init_cgroup *c = &s->cgroups[i];
        if (!is_v2(c->role) && join(c->dir, err) < 0)
            goto fail;
        if (is_v2(c->role) && *v2fd < 0) {
            *v2fd = open(c->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (*v2fd < 0) {
                osb_err_sys(err, "open cgroup `%s`", c->dir);
                goto fail;
            }
        }
    }
    return 0;
fail:
    if (*v2fd >= 0)
        close(*v2fd);
    *v2fd = -1;
    osb_init_cgroups_leave(s, false);
    remove_created(s, made);
    return -1;
}

void osb_init_cgroups_leave(const struct osb_init_spec *s, bool remove)
{
    for (size_t i = 0; i < s->n_cgroups; i++)
        if (!is_v2(s->cgroups[i].role))
            join(s->cgroups[i].home, NULL);
    if (remove)
        remove_created(s, s->n_cgroups);
}
