/* The backend table and the calls that dispatch to a backend's ops. A new
 * backend is a folder under src/runtime/ plus one line in backends[]. */
#include "runtime/runtime.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "runtime/gvisor/gvisor.h"
#include "runtime/native/native.h"

static const struct {
    const char *name;
    const struct osb_runtime_ops *ops;
} backends[] = {
    {"native", &osb_native_ops},
    {"gvisor", &osb_gvisor_ops},
};

const struct osb_runtime_ops *osb_rt_backend(const char *name)
{
    for (size_t i = 0; name && i < sizeof backends / sizeof backends[0]; i++)
        if (strcmp(backends[i].name, name) == 0)
            return backends[i].ops;
    return NULL;
}

void osb_rt_backend_names(char *out, size_t n)
{
    size_t k = 0;
    if (n)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof backends / sizeof backends[0] && k < n; i++) {
        int w = snprintf(out + k, n - k, "%s%s", i ? ", " : "", backends[i].name);
        k += w > 0 ? (size_t)w : 0;
    }
}

int osb_rt_open(const char *name, const struct osb_rt_config *cfg, uv_loop_t *loop,
                struct osb_rt **out, struct osb_err *err)
{
    const struct osb_runtime_ops *ops = osb_rt_backend(name);
    if (!ops) {
        char names[256];
        osb_rt_backend_names(names, sizeof names);
        return osb_err_set(err, OSB_E_NOTFOUND, "no runtime backend `%s` (there is: %s)",
                           name ? name : "", names);
    }
    return ops->open(cfg, loop, out, err);
}

void osb_rt_close(struct osb_rt *rt)
{
    if (rt)
        rt->ops->close(rt);
}

const char *osb_rt_name(const struct osb_rt *rt)
{
    return rt->ops->name;
}

const char *osb_rt_describe(const struct osb_rt *rt)
{
    return rt->ops->describe(rt);
}

int osb_rt_create(struct osb_rt *rt, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err)
{
    return rt->ops->create(rt, spec, cb, ud, err);
}

int osb_rt_pause(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return rt->ops->pause(rt, id, err);
}

int osb_rt_resume(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return rt->ops->resume(rt, id, err);
}

int osb_rt_destroy(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return rt->ops->destroy(rt, id, err);
}

int osb_rt_stop(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return rt->ops->stop(rt, id, err);
}

void osb_rt_foreground(const struct osb_rt_handle *h)
{
    if (h->pid > 0)
        setpriority(PRIO_PROCESS, (id_t)h->pid, 0);
}

bool osb_rt_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h)
{
    return rt->ops->alive(rt, id, h);
}

int osb_rt_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err)
{
    return rt->ops->watch(rt, id, h, cb, ud, err);
}

int osb_rt_cleanup_orphans(struct osb_rt *rt, const char *const *known, struct osb_err *err)
{
    return rt->ops->cleanup_orphans(rt, known, err);
}

int osb_rt_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out, struct osb_err *err)
{
    return rt->ops->stats(rt, id, out, err);
}

int osb_rt_adopt(struct osb_rt *rt, const char *id, struct osb_rt_handle *h, struct osb_err *err)
{
    return rt->ops->adopt(rt, id, h, err);
}

int osb_rt_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                    struct osb_err *err)
{
    return rt->ops->snapshot(rt, id, h, dst_dir, copy, cb, ud, err);
}
