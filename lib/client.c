/* The client handle: settings from the caller and the environment. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client.h"

void osbc_config_from_env(struct osbc_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->domain = getenv("OPEN_SANDBOX_DOMAIN");
    cfg->api_key = getenv("OPEN_SANDBOX_API_KEY");
    cfg->protocol = getenv("OPEN_SANDBOX_PROTOCOL");
    const char *t = getenv("OPEN_SANDBOX_REQUEST_TIMEOUT");
    if (t && *t) {
        char *end;
        long s = strtol(t, &end, 10);
        if (!*end && s > 0 && s < 86400 * 365)
            cfg->request_timeout_ms = s * 1000;
    }
    const char *p = getenv("OPEN_SANDBOX_USE_SERVER_PROXY");
    if (p && (!strcasecmp(p, "1") || !strcasecmp(p, "true") || !strcasecmp(p, "yes") ||
              !strcasecmp(p, "on")))
        cfg->use_server_proxy = 1;
}

/* domain may carry a scheme ("https://host:8443"), which then wins over
 * protocol, and a path prefix, which every lifecycle path goes under. */
static int parse_domain(osbc_client *c, const struct osbc_config *cfg, struct osbc_error *err)
{
    const char *d = cfg->domain && *cfg->domain ? cfg->domain : "localhost:8080";
    const char *proto = cfg->protocol && *cfg->protocol ? cfg->protocol : "http";
    if (!strncasecmp(d, "http://", 7)) {
        proto = "http";
        d += 7;
    } else if (!strncasecmp(d, "https://", 8)) {
        proto = "https";
        d += 8;
    }
    bool tls;
    if (!strcasecmp(proto, "http"))
        tls = false;
    else if (!strcasecmp(proto, "https"))
        tls = true;
    else
        return osbcl_fail(err, OSBC_E_ARG, "protocol \"%s\": want http or https", proto);
    if (osbcl_base_parse(&c->server, d, tls, err) < 0)
        return err ? err->code : OSBC_E_ARG;
    /* "host:8080/" and "host:8080" are the same server. */
    size_t n = strlen(c->server.prefix);
    while (n && c->server.prefix[n - 1] == '/')
        c->server.prefix[--n] = 0;
    return 0;
}

int osbc_client_new(const struct osbc_config *cfg, osbc_client **out, struct osbc_error *err)
{
    osbcl_err_clear(err);
    if (!cfg || !out)
        return osbcl_fail(err, OSBC_E_ARG, "osbc_client_new: no config");
    *out = NULL;
    if (cfg->request_timeout_ms < 0)
        return osbcl_fail(err, OSBC_E_ARG, "request timeout %ld ms: must not be negative",
                          cfg->request_timeout_ms);
    osbc_client *c = calloc(1, sizeof *c);
    if (!c)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    c->timeout_ms = cfg->request_timeout_ms ? cfg->request_timeout_ms : 30000;
    c->use_server_proxy = cfg->use_server_proxy != 0;
    c->tls_insecure = cfg->tls_insecure != 0;
    c->api_key = cfg->api_key && *cfg->api_key ? strdup(cfg->api_key) : NULL;
    c->ca_file = cfg->ca_file && *cfg->ca_file ? strdup(cfg->ca_file) : NULL;
    c->user_agent =
        strdup(cfg->user_agent && *cfg->user_agent ? cfg->user_agent : "libopensandbox/0.1");
    if ((cfg->api_key && *cfg->api_key && !c->api_key) ||
        (cfg->ca_file && *cfg->ca_file && !c->ca_file) || !c->user_agent) {
        osbc_client_free(c);
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    }
    if (c->api_key && strpbrk(c->api_key, "\r\n")) {
        osbc_client_free(c);
        return osbcl_fail(err, OSBC_E_ARG, "the API key contains a line break");
    }
    int rc = parse_domain(c, cfg, err);
    if (rc < 0) {
        osbc_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void osbc_client_free(osbc_client *c)
{
    if (!c)
        return;
    if (c->conn)
        osbcl_io_close(c->conn);
    for (size_t i = 0; i < c->n_eps; i++) {
        free(c->eps[i].id);
        osbcl_base_free(&c->eps[i].base);
    }
    free(c->eps);
    osbcl_base_free(&c->server);
    if (c->ssl_ctx)
        osbcl_tls_ctx_free(c->ssl_ctx);
    free(c->api_key);
    free(c->ca_file);
    free(c->user_agent);
    free(c);
}

long osbcl_timeout_ms(const osbc_client *c)
{
    return c->timeout_ms;
}

bool osbcl_use_server_proxy(const osbc_client *c)
{
    return c->use_server_proxy;
}
