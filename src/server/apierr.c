#define OSB_APIERR_DEFINING /* apierr.h: the real function */
#include "server/apierr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "http/http.h"
#include "http/statusmap.h"

int osb_apierr_set(struct osb_apierr *e, int status, const char *code, const char *fmt, ...)
{
    e->status = status;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

void osb_apierr_respond(struct osb_http_req *req, const struct osb_apierr *e)
{
    osb_http_respond_error(req, e->status, e->code, "%s", e->msg);
}

/* The error statuses of sandbox-lifecycle.yml, diagnostic-api.yml and
 * egress-api.yaml (docs/specs/), per route as registered (without "/v1").
 * Routes not listed (pools, health, the proxy) are not in those files and
 * keep their statuses. */
static const struct osb_status_rule lifecycle_rules[] = {
    {"GET", "/sandboxes", "400 401 500"},
    {"POST", "/sandboxes", "400 401 409 500"},
    {"GET", "/sandboxes/:id", "401 403 404 500"},
    {"DELETE", "/sandboxes/:id", "401 403 404 409 500"},
    {"PATCH", "/sandboxes/:id/metadata", "400 401 403 404 409 500"},
    {"POST", "/sandboxes/:id/pause", "401 403 404 409 500"},
    {"POST", "/sandboxes/:id/resume", "401 403 404 409 500"},
    {"POST", "/sandboxes/:id/renew-expiration", "400 401 403 404 409 500"},
    {"GET", "/sandboxes/:id/endpoints/:port", "400 401 403 404 500"},
    {"POST", "/sandboxes/:id/snapshots", "400 401 403 404 409 500"},
    {"GET", "/snapshots", "400 401 500"},
    {"GET", "/snapshots/:id", "401 403 404 409 500"},
    {"DELETE", "/snapshots/:id", "401 403 404 409 500"},
    {"GET", "/sandboxes/:id/diagnostics/logs", "400 401 403 404 500 501"},
    {"GET", "/sandboxes/:id/diagnostics/events", "400 401 403 404 500 501"},
};

/* egress-api.yaml, by the path under the sandbox's port-18080 endpoint. */
static const struct osb_status_rule egress_rules[] = {
    {"GET", "/policy", "401 500"},
    {"PATCH", "/policy", "400 401 500"},
    {"DELETE", "/policy", "400 401 500"},
};

#define EGRESS_ROUTE "/sandboxes/:id/proxy/18080"

static int status_map(const struct osb_http_req *req, int status, void *ud)
{
    (void)ud;
    const char *pat = osb_http_req_route_pattern(req), *m = osb_http_req_method(req);
    if (!pat)
        return status;
    if (strncmp(pat, "/v1/", 4) == 0)
        pat += 3;
    const struct osb_status_rule *r;
    if (strncmp(pat, EGRESS_ROUTE, strlen(EGRESS_ROUTE)) == 0) {
        const char *rest = osb_http_req_param(req, "rest");
        char path[64];
        snprintf(path, sizeof path, "/%s", rest ? rest : "");
        r = osb_status_find(egress_rules, OSB_ARRAY_LEN(egress_rules), m, path);
    } else {
        r = osb_status_find(lifecycle_rules, OSB_ARRAY_LEN(lifecycle_rules), m, pat);
    }
    return osb_status_pick(r, status);
}

void osb_apierr_install(struct osb_http_server *http)
{
    osb_http_server_set_status_map(http, status_map, NULL);
}
