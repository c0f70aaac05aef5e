/* The runtime backends this server opened (runtime.h's table) and the
 * lookup of a sandbox's backend by the name its record carries. */
#include <stdio.h>
#include <string.h>

#include "server/server.h"

int osb_backends_open(struct osb_server *srv, struct osb_err *err)
{
    const struct osb_config *cfg = srv->cfg;
    struct osb_rt_config rc = {.state_dir = cfg->native.state_dir,
                               .execd_path = cfg->runtime.execd_path,
                               .init_path = cfg->runtime.init_path,
                               .user_namespaces = cfg->native.user_namespaces,
                               .userns_explicit = cfg->native.user_namespaces_set,
                               .userns_range = cfg->native.userns_range};
    const char *name = cfg->runtime.type ? cfg->runtime.type : OSB_RT_DEFAULT;
    struct osb_rt *rt;
    if (osb_rt_open(name, &rc, srv->loop, &rt, err) < 0)
        return -1;
    srv->rts[srv->n_rts++] = rt;
    srv->rt = rt;
    return 0;
}

void osb_backends_close(struct osb_server *srv)
{
    for (size_t i = 0; i < srv->n_rts; i++)
        osb_rt_close(srv->rts[i]);
    srv->n_rts = 0;
    srv->rt = NULL;
}

struct osb_rt *osb_backend_get(struct osb_server *srv, const char *name, char *msg, size_t n)
{
    for (size_t i = 0; i < srv->n_rts; i++)
        if (strcmp(osb_rt_name(srv->rts[i]), name) == 0)
            return srv->rts[i];
    char have[128] = "";
    for (size_t i = 0; i < srv->n_rts; i++)
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "",
                 osb_rt_name(srv->rts[i]));
    if (n)
        snprintf(msg, n, "%s runtime backend `%s`; this server runs: %s",
                 osb_rt_backend(name) ? "this server has not opened the" : "there is no", name,
                 have[0] ? have : "none");
    return NULL;
}
