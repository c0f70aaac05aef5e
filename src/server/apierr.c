#define OSB_APIERR_DEFINING /* apierr.h: the real function */
#include "server/apierr.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "http/http.h"
#include "http/statusmap.h"

/* The status each code is raised with (before the route's status map). */
struct code_row {
    const char *key; /* the code, or "CODE#reason" */
    int status;
    const char *code; /* the wire code of a "CODE#reason" row (NULL: key) */
};

#define ROW(k, st) \
    { \
        .key = (k), .status = (st) \
    }

static const struct code_row codes[] = {
    /* any route */
    ROW("MISSING_API_KEY", 401),
    ROW("INVALID_API_KEY", 401),
    ROW("GENERAL::NOT_FOUND", 404),
    ROW("CONSOLE::NOT_FOUND", 404),
    ROW("GENERAL::INTERNAL_ERROR", 500), /* /docs could not be rendered */
    /* sandboxes: the request */
    ROW("SANDBOX::INVALID_PARAMETER", 400),
    ROW("SANDBOX::INVALID_ENTRYPOINT", 400),
    ROW("SANDBOX::INVALID_METADATA_LABEL", 400),
    ROW("INVALID_METADATA_LABEL", 400),
    ROW("INVALID_METADATA_FORMAT", 400),
    ROW("SANDBOX::INVALID_PORT", 400),
    ROW("SANDBOX::INVALID_SIGNATURE", 403),
    /* pools (server/pools.c): a claim naming no pool; a claim that waited
     * admission_wait_seconds for a member in vain; the pool routes */
    ROW("SANDBOX::POOL_NOT_FOUND", 400),
    ROW("SANDBOX::POOL_EXHAUSTED", 429),
    ROW("POOL::NOT_FOUND", 404),
    ROW("POOL::ALREADY_EXISTS", 409),
    ROW("SANDBOX::RUNTIME_NOT_ALLOWED", 400),
    /* a bad value (in the past, over the cap) ... */
    ROW("SANDBOX::INVALID_EXPIRATION", 400),
    /* ... or a sandbox without expiry (manual cleanup): a state conflict, as upstream */
    {.key = "SANDBOX::INVALID_EXPIRATION#manual",
     .status = 409,
     .code = "SANDBOX::INVALID_EXPIRATION"},
    /* sandboxes: the image */
    ROW("SANDBOX::IMAGE_NOT_FOUND", 400),
    ROW("SANDBOX::IMAGE_PULL_DENIED", 400),
    ROW("SANDBOX::IMAGE_UNSUPPORTED", 400),
    ROW("SANDBOX::IMAGE_INVALID", 400),
    /* not the client's fault; create lists no 502 */
    ROW("SANDBOX::IMAGE_REGISTRY_UNAVAILABLE", 500),
    ROW("SANDBOX::IMAGE_DIGEST_MISMATCH", 500),
    ROW("SANDBOX::IMAGE_PULL_FAILED", 500),
    /* sandboxes: state */
    ROW("SANDBOX::NOT_FOUND", 404),
    ROW("SANDBOX::NOT_RUNNING", 409),
    ROW("SANDBOX::NOT_PAUSED", 409),
    ROW("SANDBOX::SNAPSHOT_IN_PROGRESS", 409),
    ROW("SANDBOX::DELETED", 409),
    /* admission (server/admit.h) and idempotency keys (server/idem.h) */
    ROW("SANDBOX::CAPACITY", 429),
    ROW("SANDBOX::IDEMPOTENCY_KEY_REUSED", 409),
    /* sandboxes: failures */
    ROW("SANDBOX::START_FAILED", 500),
    /* a capacity limit, not a fault; create lists no 503, so 500 on the wire */
    ROW("SANDBOX::USERNS_EXHAUSTED", 503),
    ROW("SANDBOX::NETWORK_FAILED", 500),
    ROW("SANDBOX::STORE_FAILED", 500),
    ROW("SANDBOX::DELETE_FAILED", 500),
    ROW("SANDBOX::PAUSE_FAILED", 500),
    ROW("SANDBOX::RESUME_FAILED", 500),
    /* snapshots */
    ROW("SNAPSHOT::INVALID_PARAMETER", 400),
    ROW("SNAPSHOT::NOT_FOUND", 404),
    ROW("SNAPSHOT::NOT_READY", 409),
    ROW("SNAPSHOT::INVALID_SOURCE_STATE", 409),
    ROW("SNAPSHOT::INVALID_STATE", 409),
    ROW("SNAPSHOT::IN_USE", 409),
    ROW("SNAPSHOT::CREATE_FAILED", 500),
    ROW("SNAPSHOT::DELETE_FAILED", 500),
    /* volumes */
    ROW("VOLUME::INVALID_SIZE", 400),
    ROW("VOLUME::NOT_FOUND", 400),
    ROW("VOLUME::UNSUPPORTED_BACKEND", 400),
    ROW("VOLUME::HOST_PATH_NOT_ALLOWED", 400),
    ROW("VOLUME::HOST_PATH_NOT_FOUND", 400),
    ROW("VOLUME::NOT_READY", 500),
    ROW("VOLUME::CREATE_FAILED", 500),
    /* diagnostics, pools */
    ROW("DIAGNOSTICS::INVALID_SCOPE", 400),
    ROW("DIAGNOSTICS::TOO_LARGE", 500),
    /* metrics */
    ROW("METRICS::TOO_LARGE", 500),
    /* the audit trail */
    ROW("AUDIT::INVALID_PARAMETER", 400),
    ROW("AUDIT::NOT_ENABLED", 404),
    ROW("AUDIT::UNREADABLE", 500),
    /* the image store API (api_images.c) */
    ROW("IMAGE::INVALID_PARAMETER", 400),
    ROW("IMAGE::NOT_FOUND", 404),
    ROW("IMAGE::IN_USE", 409),
    ROW("IMAGE::PULL_DISABLED", 409),
    /* the egress API (port 18080) */
    ROW("EGRESS::INVALID_BODY", 400),
    ROW("EGRESS::INVALID_POLICY", 400),
    ROW("EGRESS::INVALID_RULES", 400),
    ROW("EGRESS::TOO_MANY_RULES", 400),
    ROW("EGRESS::UNAUTHORIZED", 401),
    ROW("EGRESS::NOT_ENABLED", 404),
    ROW("EGRESS::NOT_FOUND", 404),
    ROW("EGRESS::METHOD_NOT_ALLOWED", 405),
    /* the credential vault under the egress API (api_vault.c) */
    ROW("EGRESS::VAULT_INVALID", 400),
    ROW("EGRESS::VAULT_NOT_FOUND", 404),
    ROW("EGRESS::VAULT_CONFLICT", 409),
    ROW("EGRESS::VAULT_NOT_ENABLED", 412),
    ROW("EGRESS::VAULT_INSECURE_TRANSPORT", 426),
    ROW("EGRESS::VAULT_UNREADABLE", 500),
    ROW("EGRESS::VAULT_FAILED", 500),
};

static const struct code_row *row(const char *key)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(codes); i++)
        if (strcmp(codes[i].key, key) == 0)
            return &codes[i];
    return NULL;
}

int osb_apierr_status(const char *key)
{
    const struct code_row *r = row(key);
    return r ? r->status : 0;
}

static int fill(struct osb_apierr *e, const char *key, int fallback, const char *fmt, va_list ap)
{
    const struct code_row *r = row(key);
    if (!r && !fallback)
        osb_warn("API error code %s is not in the error table (src/server/apierr.c)", key);
    e->status = r ? r->status : fallback ? fallback : 500;
    e->code = !r ? key : r->code ? r->code : r->key;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    return -1;
}

int osb_apierr(struct osb_apierr *e, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fill(e, key, 0, fmt, ap);
    va_end(ap);
    return -1;
}

static int fill_msg(struct osb_apierr *e, const char *key, int fallback, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fill(e, key, fallback, fmt, ap);
    va_end(ap);
    return -1;
}

int osb_apierr_from_err(struct osb_apierr *e, const struct osb_err *err, const char *key)
{
    return fill_msg(e, key, osb_err_http_status(err), "%s", err->msg);
}

void osb_apierr_reply(struct osb_http_req *req, const char *key, const char *fmt, ...)
{
    struct osb_apierr e;
    va_list ap;
    va_start(ap, fmt);
    fill(&e, key, 0, fmt, ap);
    va_end(ap);
    osb_apierr_respond(req, &e);
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
    /* Admission control's 429 (server/admit.h) is not in the spec, but a
     * client must see it as such to honour its Retry-After; upstream's
     * Kubernetes pools answer 429 too (docs/errors.md, "Exceptions"). */
    if (!pat || status == 429)
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
