/* The runtime backends this server opened (runtime.h's table) and the
 * lookup of a sandbox's backend by the name its record carries. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "server/server.h"

/* Upstream's Docker and Kubernetes plumbing has nothing to configure here:
 * say so once rather than silently. */
static void log_ignored(const struct osb_config *cfg)
{
    const char *d = cfg->secure_runtime.docker_runtime, *k = cfg->secure_runtime.k8s_runtime_class;
    if (d)
        osb_info("[secure_runtime] docker_runtime = \"%s\" is ignored: this server runs its "
                 "runtimes itself, not through Docker",
                 d);
    if (k)
        osb_info("[secure_runtime] k8s_runtime_class = \"%s\" is ignored: this server runs its "
                 "runtimes itself, not through Kubernetes",
                 k);
}

int osb_backends_open(struct osb_server *srv, struct osb_err *err)
{
    const struct osb_config *cfg = srv->cfg;
    struct osb_rt_config rc = {.state_dir = cfg->native.state_dir,
                               .execd_path = cfg->runtime.execd_path,
                               .init_path = cfg->runtime.init_path,
                               .user_namespaces = cfg->native.user_namespaces,
                               .userns_explicit = cfg->native.user_namespaces_set,
                               .userns_range = cfg->native.userns_range,
                               .gvisor_platform = cfg->gvisor.platform,
                               .gvisor_runsc = cfg->gvisor.runsc,
                               .gvisor_debug = cfg->gvisor.debug};
    log_ignored(cfg);
    /* allowed[0] is the default ([runtime] type after [secure_runtime] type) */
    for (char *const *name = cfg->secure_runtime.allowed; *name; name++) {
        struct osb_rt *rt;
        if (srv->n_rts == OSB_SRV_MAX_BACKENDS) {
            osb_backends_close(srv);
            return osb_err_set(err, OSB_E_INVALID, "more than %d runtimes to open",
                               OSB_SRV_MAX_BACKENDS);
        }
        if (osb_rt_open(*name, &rc, srv->loop, &rt, err) < 0) {
            const char *why = srv->n_rts ? "in [secure_runtime] allowed" : "the default";
            osb_backends_close(srv);
            return osb_err_wrap(err, "runtime `%s` (%s)", *name, why);
        }
        if (srv->n_rts)
            osb_info("runtime a create may choose (extensions.runtime): %s", osb_rt_describe(rt));
        srv->rts[srv->n_rts++] = rt;
    }
    srv->rt = srv->rts[0];
    return 0;
}

void osb_backends_close(struct osb_server *srv)
{
    for (size_t i = 0; i < srv->n_rts; i++)
        osb_rt_close(srv->rts[i]);
    srv->n_rts = 0;
    srv->rt = NULL;
}

/* The opened backend named name, or NULL with the opened ones' names in
 * have ("native, gvisor"). */
static struct osb_rt *find(struct osb_server *srv, const char *name, char *have, size_t n)
{
    have[0] = '\0';
    for (size_t i = 0; i < srv->n_rts; i++)
        if (strcmp(osb_rt_name(srv->rts[i]), name) == 0)
            return srv->rts[i];
    for (size_t i = 0; i < srv->n_rts; i++)
        snprintf(have + strlen(have), n - strlen(have), "%s%s", i ? ", " : "",
                 osb_rt_name(srv->rts[i]));
    return NULL;
}

struct osb_rt *osb_backend_choose(struct osb_server *srv, const char *name, struct osb_apierr *e)
{
    if (!name)
        return srv->rt;
    /* Only the allowed backends are opened, so opened means allowed. */
    char have[128];
    struct osb_rt *rt = find(srv, name, have, sizeof have);
    if (!rt)
        (void)osb_apierr(e, "SANDBOX::RUNTIME_NOT_ALLOWED",
                         "field 'extensions.runtime': %s '%s'; this server allows: %s "
                         "([secure_runtime] allowed)",
                         osb_rt_backend(name) ? "this server does not allow the runtime"
                                              : "there is no runtime",
                         name, have);
    return rt;
}

struct osb_rt *osb_backend_get(struct osb_server *srv, const char *name, char *msg, size_t n)
{
    char have[128];
    struct osb_rt *rt = find(srv, name, have, sizeof have);
    if (!rt && n)
        snprintf(msg, n, "%s runtime backend `%s`; this server runs: %s",
                 osb_rt_backend(name) ? "this server has not opened the" : "there is no", name,
                 have[0] ? have : "none");
    return rt;
}

int osb_backend_stats(struct osb_server *srv, const struct osb_sbx *s, struct osb_rt_stats *out,
                      struct osb_err *err)
{
    struct osb_rt *rt = osb_backend_get(srv, s->runtime, NULL, 0);
    if (!rt || !s->has_handle || (s->state != OSB_ST_RUNNING && s->state != OSB_ST_PAUSED))
        return 1;
    return osb_rt_stats(rt, s->id, out, err) < 0 ? -1 : 0;
}
