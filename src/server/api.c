/* HTTP plumbing shared by every lifecycle route: registration at /v1 and at
 * /, the pre-handler hook (X-Request-ID, CORS, API-key auth), the fallback
 * 404, and the JSON shapes several routes return. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/random.h"
#include "server/api_egress.h"
#include "server/server.h"
#include "server/snapshots.h"
#include "server/timefmt.h"


/* ------------------------------------------------------------ helpers */

int osb_api_page(struct osb_http_req *req, long *page, long *size)
{
    if (osb_api_query_int(req, "page", 1, 1000000000L, 1, page) < 0 ||
        osb_api_query_int(req, "pageSize", 1, 200, 20, size) < 0)
        return -1;
    return 0;
}

json_t *osb_api_pagination(long page, long size, size_t total)
{
    long pages = (long)((total + (size_t)size - 1) / (size_t)size);
    return json_pack("{s:i,s:i,s:i,s:i,s:b}", "page", (json_int_t)page, "pageSize",
                     (json_int_t)size, "totalItems", (json_int_t)total, "totalPages",
                     (json_int_t)pages, "hasNextPage", page < pages);
}

/* A field of the record (the store's own JSON) of the given kind, or NULL. */
static json_t *record_field(json_t *spec, const char *key, bool array)
{
    json_t *v = NULL;
    int r = array ? osb_json_array(spec, key, false, &v, NULL)
                  : osb_json_obj(spec, key, false, &v, NULL);
    return r > 0 ? v : NULL;
}

json_t *osb_api_sandbox_json(const struct osb_sbx *s, bool full)
{
    char created[OSB_TIMEFMT_LEN], trans[OSB_TIMEFMT_LEN];
    osb_timefmt_us(s->created_us, created);
    osb_timefmt_us(s->transition_us, trans);
    json_t *j = json_pack("{s:s}", "id", s->id);
    json_t *img = record_field(s->spec, "image", false);
    if (full && img)
        json_object_set(j, "image", img);
    const char *snap = NULL;
    if (full && osb_json_str(s->spec, "snapshotId", false, &snap, NULL) > 0)
        json_object_set_new(j, "snapshotId", json_string(snap));
    json_t *st = json_pack("{s:s}", "state", osb_state_name(s->state));
    if (s->reason)
        json_object_set_new(st, "reason", json_string(s->reason));
    if (s->message)
        json_object_set_new(st, "message", json_string(s->message));
    json_object_set_new(st, "lastTransitionAt", json_string(trans));
    json_object_set_new(j, "status", st);
    json_object_set(j, "metadata", s->metadata);
    json_t *ep = record_field(s->spec, "entrypoint", true);
    json_object_set_new(j, "entrypoint", ep ? json_incref(ep) : json_array());
    json_t *plat = record_field(s->spec, "platform", false);
    if (plat)
        json_object_set(j, "platform", plat);
    if (s->expires_us) {
        char exp[OSB_TIMEFMT_LEN];
        osb_timefmt_us(s->expires_us, exp);
        json_object_set_new(j, "expiresAt", json_string(exp));
    }
    json_object_set_new(j, "createdAt", json_string(created));
    /* Ours, outside metadata (which belongs to the client): the backend it
     * runs on. Every official SDK ignores top-level fields it does not
     * know (docs/server.md, "Create request"). */
    json_object_set_new(j, "runtime", json_string(s->runtime));
    return j;
}

struct osb_sbx *osb_api_find(struct osb_server *srv, struct osb_http_req *req)
{
    const char *id = osb_http_req_param(req, "id");
    struct osb_sbx *s = id ? osb_reg_get(srv->reg, id) : NULL;
    if (s && osb_sbx_pool_member(s)) /* an unclaimed pool member (server/pools.h) */
        s = NULL;
    if (!s)
        osb_apierr_reply(req, "SANDBOX::NOT_FOUND", "Sandbox %s not found.", id ? id : "");
    return s;
}

json_t *osb_api_body(struct osb_http_req *req, bool allow_empty)
{
    size_t len = 0;
    const char *body = osb_http_req_body(req, &len);
    json_t *j;
    struct osb_err err = {0};
    if (osb_json_parse(body, len, allow_empty, &j, &err) < 0) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER", "request body: %s", err.msg);
        return NULL;
    }
    return j ? j : json_object();
}

int osb_api_query_int(struct osb_http_req *req, const char *name, long lo, long hi, long def,
                      long *out)
{
    const char *v = osb_http_req_query(req, name);
    *out = def;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "query parameter '%s' must be an integer in %ld..%ld", name, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* ---------------------------------------------------------------- hook */

/* Equal-time comparison: the API key guards every sandbox. The loop runs
 * over the longer input so neither the position of the first difference
 * nor the key's length shows in the timing beyond "longer than the key". */
static bool prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* protocol.md 1.1: /health, /docs, /redoc, /openapi.json (and our /console) and the server
 * proxy ^(/v1)?/sandboxes/[^/]+/proxy/\d+(/|$) need no key; the proxy
 * path must not contain "..". Nor do signed URLs, .../signed/\d+/...,
 * whose handler checks the ticket. */
static bool auth_exempt(const char *target)
{
    size_t n = strcspn(target, "?");
    char *path = osb_xstrndup(target, n);
    bool ok = false;
    const char *p = path;
    if (prefix(p, "/health") || prefix(p, "/docs") || prefix(p, "/redoc") ||
        prefix(p, "/openapi.json") || strcmp(p, "/console") == 0 || prefix(p, "/console/")) {
        ok = true;
    } else if (!strstr(p, "..")) {
        if (prefix(p, "/v1/"))
            p += 3;
        if (prefix(p, "/sandboxes/")) {
            p += 11;
            size_t id = strcspn(p, "/");
            p += id;
            /* a signed URL (server/signing.h): its ticket is the key */
            bool is_signed = prefix(p, "/signed/");
            if (id > 0 && (prefix(p, "/proxy/") || is_signed)) {
                p += is_signed ? 8 : 7;
                size_t d = strspn(p, "0123456789");
                ok = d > 0 && (p[d] == '\0' || p[d] == '/');
            }
        }
    }
    free(path);
    return ok;
}

static bool request_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 200)
        return false;
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e)
            return false;
    return true;
}

static void add_request_id(struct osb_http_req *req)
{
    const char *rid = osb_http_req_header(req, "X-Request-ID");
    char gen[33];
    if (!rid || !request_id_ok(rid)) {
        osb_random_hex(gen, 16);
        rid = gen;
    }
    osb_http_add_header(req, "X-Request-ID", rid);
    osb_http_req_set_id(req, rid);
}

/* CORS as upstream configures it (allow_origins=*, credentials, every
 * method and header): with credentials the origin is echoed, not '*'. */
static bool cors(struct osb_http_req *req)
{
    const char *origin = osb_http_req_header(req, "Origin");
    if (!origin)
        return false;
    osb_http_add_header(req, "Access-Control-Allow-Origin", origin);
    osb_http_add_header(req, "Access-Control-Allow-Credentials", "true");
    osb_http_add_header(req, "Vary", "Origin");
    const char *want = osb_http_req_header(req, "Access-Control-Request-Method");
    if (strcmp(osb_http_req_method(req), "OPTIONS") != 0 || !want)
        return false;
    osb_http_add_header(req, "Access-Control-Allow-Methods",
                        "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
    const char *hdrs = osb_http_req_header(req, "Access-Control-Request-Headers");
    if (hdrs)
        osb_http_add_header(req, "Access-Control-Allow-Headers", hdrs);
    osb_http_add_header(req, "Access-Control-Max-Age", "600");
    osb_http_respond(req, 200, "text/plain; charset=utf-8", "OK", 2);
    return true;
}

static bool hook(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    add_request_id(req);
    if (cors(req))
        return false; /* preflight answered */
    if (!srv->api_key || auth_exempt(osb_http_req_target(req)))
        return true;
    const char *key = osb_http_req_header(req, API_KEY_HEADER);
    if (!key || !*key) {
        osb_apierr_reply(req, "MISSING_API_KEY",
                         "Authentication credentials are missing. Provide API key via "
                         "OPEN-SANDBOX-API-KEY header.");
        return false;
    }
    if (!osb_secret_eq(key, srv->api_key)) {
        osb_apierr_reply(req, "INVALID_API_KEY",
                         "Authentication credentials are invalid. Check your API key and "
                         "try again.");
        return false;
    }
    return true;
}

static void h_fallback(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_apierr_reply(req, "GENERAL::NOT_FOUND", "No route for %s %s.", osb_http_req_method(req),
                     osb_http_req_path(req));
}

/* ------------------------------------------------------- registration */

/* The patterns built for the /v1 copies live in srv until the HTTP server
 * is closed (it keeps pointers to them): osb_api_release. */
static void add_table(struct osb_server *srv, const struct osb_http_route *t, size_t n)
{
    struct osb_http_route *r = osb_xcalloc(2 * n, sizeof *r);
    srv->v1_patterns =
        osb_xrealloc(srv->v1_patterns, (srv->n_v1_patterns + n) * sizeof *srv->v1_patterns);
    for (size_t i = 0; i < n; i++) {
        char *p = osb_xasprintf("/v1%s", t[i].pattern);
        srv->v1_patterns[srv->n_v1_patterns++] = p;
        r[2 * i] = t[i];
        r[2 * i].pattern = p;
        r[2 * i].ud = srv;
        r[2 * i + 1] = t[i];
        r[2 * i + 1].ud = srv;
    }
    osb_http_server_add_routes(srv->http, r, 2 * n);
    free(r);
}

void osb_api_release(struct osb_server *srv)
{
    for (size_t i = 0; i < srv->n_v1_patterns; i++)
        free(srv->v1_patterns[i]);
    free(srv->v1_patterns);
    srv->v1_patterns = NULL;
    srv->n_v1_patterns = 0;
}

void osb_api_register(struct osb_server *srv)
{
    osb_http_server_set_auth(srv->http, hook, srv);
    osb_apierr_install(srv->http);
    osb_http_server_set_invalid_code(srv->http, "SANDBOX::INVALID_PARAMETER");
    add_table(srv, osb_api_sandbox_routes, osb_api_sandbox_nroutes);
    add_table(srv, osb_api_diag_routes, osb_api_diag_nroutes);
    add_table(srv, osb_api_egress_routes, osb_api_egress_nroutes); /* before the proxy's :port */
    add_table(srv, osb_api_proxy_routes, osb_api_proxy_nroutes);
    add_table(srv, osb_api_snapshot_routes, osb_api_snapshot_nroutes);
    add_table(srv, osb_api_misc_routes, osb_api_misc_nroutes);
    add_table(srv, osb_api_metrics_routes, osb_api_metrics_nroutes);
    add_table(srv, osb_api_audit_routes, osb_api_audit_nroutes);
    add_table(srv, osb_api_pool_routes, osb_api_pool_nroutes);
    add_table(srv, osb_api_image_routes, osb_api_image_nroutes);
    add_table(srv, osb_api_openapi_routes, osb_api_openapi_nroutes);
    /* the console is a page, not an API: no /v1 copy */
    osb_http_server_add_routes(srv->http, osb_api_console_routes, osb_api_console_nroutes);
    static const struct osb_http_route fallback = {NULL, "*rest", h_fallback, OSB_ROUTE_NO_BODY,
                                                   NULL};
    osb_http_server_add_routes(srv->http, &fallback, 1);
}
