/* Lifecycle routes on sandboxes (protocol.md 1.3-1.7): create, list, get,
 * delete, metadata merge patch, pause, resume, renew-expiration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/random.h"
#include "common/xalloc.h"
#include "server/admit.h"
#include "server/create.h"
#include "server/idem.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/timefmt.h"

#define BAD "SANDBOX::INVALID_PARAMETER"

/* -------------------------------------------------------------- create */

/* A create without an idempotency key belongs to its client. */
struct created {
    struct osb_server *srv;
    struct osb_http_req *req;
    struct osb_create_job *job;
};

static void on_client_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct created *c = ud;
    osb_create_detach(c->job);
    free(c);
}

static void on_created(void *ud, struct osb_sbx *s, const struct osb_apierr *e)
{
    struct created *c = ud;
    osb_http_req_on_close(c->req, NULL, NULL);
    if (e)
        osb_admit_respond(c->srv, c->req, e);
    else
        osb_http_respond_json(c->req, 202, osb_api_sandbox_json(s, false));
    free(c);
}

/* The spec parsed and started: by the key's owner (idem.h) when op is
 * set, else by the request. */
static void start(struct osb_server *srv, struct osb_http_req *req, struct osb_idem_op *op,
                  struct osb_create_spec *spec)
{
    if (op) {
        struct osb_create_job *job = osb_create_start(srv, spec, osb_idem_done, op);
        if (job)
            osb_idem_set_job(op, job);
        return;
    }
    struct created *c = osb_xcalloc(1, sizeof *c);
    c->srv = srv;
    c->req = req;
    /* on_created frees c when the create is over inside the call. */
    struct osb_create_job *job = osb_create_start(srv, spec, on_created, c);
    if (job) {
        c->job = job;
        osb_http_req_on_close(req, on_client_gone, c);
    }
}

static void h_create(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    /* The id comes first, so that a failure at any phase can name it. */
    char id[sizeof((struct osb_create_spec *)0)->id];
    osb_random_uuid4(id);
    json_t *body = osb_api_body(req, false);
    if (!body) {
        osb_lc_create_failed(id, "request", 400, BAD, "the request body is not valid JSON");
        return;
    }
    struct osb_idem_op *op = NULL;
    if (osb_idem_begin(srv, req, body, &op) < 0) {
        json_decref(body);
        return;
    }
    struct osb_create_spec spec;
    struct osb_apierr e;
    int rc = osb_spec_parse_create(body, &srv->limits, &spec, &e);
    json_decref(body);
    if (rc < 0) {
        osb_lc_create_failed(id, "request", e.status, e.code, e.msg);
        if (op)
            osb_idem_done(op, NULL, &e);
        else
            osb_apierr_respond(req, &e);
        return;
    }
    memcpy(spec.id, id, sizeof spec.id);
    start(srv, req, op, &spec);
}

/* ---------------------------------------------------------------- list */

/* One parse_qsl(strict_parsing=True) field: "k=v", both percent-decoded
 * (with '+' as space); then decoded once more, because the Python SDK
 * encodes keys and values twice (protocol.md 6.5.1) and labels cannot
 * contain '%'. */
static int filter_field(char *part, json_t *out)
{
    char *eq = strchr(part, '=');
    if (!eq || eq == part)
        return -1;
    *eq = '\0';
    char *k = part, *v = eq + 1;
    if (osb_http_url_decode(k, true) < 0 || osb_http_url_decode(v, true) < 0)
        return -1;
    if (strchr(k, '%') && osb_http_url_decode(k, false) < 0)
        return -1;
    if (strchr(v, '%') && osb_http_url_decode(v, false) < 0)
        return -1;
    json_object_set_new(out, k, json_string(v));
    return 0;
}

/* "k1=v1&k2=v2" -> {k1: v1, k2: v2}; -1 on a malformed string. */
static int parse_filter(const char *q, json_t *out)
{
    if (!*q)
        return 0;
    char *dup = osb_xstrdup(q);
    int rc = 0;
    char *p = dup;
    for (;;) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        if (filter_field(p, out) < 0) {
            rc = -1;
            break;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    free(dup);
    return rc;
}

static bool metadata_match(const struct osb_sbx *s, json_t *filter)
{
    const char *k;
    json_t *v;
    json_object_foreach(filter, k, v)
    {
        const char *have;
        struct osb_err err;
        if (osb_json_str(s->metadata, k, false, &have, &err) <= 0 ||
            strcmp(have, json_string_value(v)) != 0)
            return false;
    }
    return true;
}

/* Repeated and comma-separated state= values, case-insensitive. Unknown
 * names match nothing (upstream compares strings). Returns a bit mask, 0
 * when no state filter was given. */
static unsigned state_mask(struct osb_http_req *req, bool *given)
{
    const char *const *vals;
    size_t n = osb_http_req_query_all(req, "state", &vals);
    unsigned mask = 0;
    *given = false;
    for (size_t i = 0; i < n; i++) {
        char *dup = osb_xstrdup(vals[i]), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            t += strspn(t, " ");
            t[strcspn(t, " ")] = '\0';
            if (!*t)
                continue;
            *given = true;
            enum osb_sbx_state st;
            if (osb_state_parse(t, &st) == 0)
                mask |= 1u << st;
        }
        free(dup);
    }
    return mask;
}

static json_t *metadata_filter(struct osb_http_req *req)
{
    const char *const *vals;
    size_t n = osb_http_req_query_all(req, "metadata", &vals);
    json_t *f = json_object();
    for (size_t i = 0; i < n; i++) {
        if (parse_filter(vals[i], f) < 0) {
            osb_apierr_reply(req, "INVALID_METADATA_FORMAT",
                             "query parameter 'metadata' must be a query string of key=value "
                             "pairs joined by '&' (got '%s')",
                             vals[i]);
            json_decref(f);
            return NULL;
        }
    }
    return f;
}

static void h_list(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    long page, size;
    if (osb_api_page(req, &page, &size) < 0)
        return;
    json_t *filter = metadata_filter(req);
    if (!filter)
        return;
    bool by_state;
    unsigned mask = state_mask(req, &by_state);
    json_t *items = json_array();
    size_t total = 0, first = (size_t)(page - 1) * (size_t)size;
    for (size_t i = 0, n = osb_reg_count(srv->reg); i < n; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        if (osb_sbx_pool_member(s)) /* an unclaimed pool member (server/pools.h) */
            continue;
        if ((by_state && !(mask & (1u << s->state))) || !metadata_match(s, filter))
            continue;
        if (total >= first && total < first + (size_t)size)
            json_array_append_new(items, osb_api_sandbox_json(s, true));
        total++;
    }
    json_decref(filter);
    osb_http_respond_json(req, 200,
                          json_pack("{s:o,s:o}", "items", items, "pagination",
                                    osb_api_pagination(page, size, total)));
}

/* ------------------------------------------------------- get / delete */

static void h_get(struct osb_http_req *req, void *ud)
{
    struct osb_sbx *s = osb_api_find(ud, req);
    if (s)
        osb_http_respond_json(req, 200, osb_api_sandbox_json(s, true));
}

static void h_delete(struct osb_http_req *req, void *ud)
{
    struct osb_sbx *s = osb_api_find(ud, req);
    if (s)
        osb_lc_delete(ud, s, req);
}

/* ----------------------------------------------------- metadata patch */

static int check_patch(json_t *patch, struct osb_apierr *e)
{
    if (!json_is_object(patch))
        return osb_apierr(e, BAD,
                          "request body must be a JSON object (an RFC 7396 merge patch of the "
                          "metadata)");
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        if (osb_label_reserved(k))
            return osb_apierr(e, "INVALID_METADATA_LABEL",
                              "metadata key '%s' uses the reserved prefix 'opensandbox.io/'", k);
        if (!json_is_null(v) && !json_is_string(v))
            return osb_apierr(e, BAD, "metadata value for '%s' must be a string or null", k);
        char msg[400];
        if (osb_label_check(k, json_is_string(v) ? json_string_value(v) : NULL, msg, sizeof msg) <
            0)
            return osb_apierr(e, "INVALID_METADATA_LABEL", "%s", msg);
    }
    return 0;
}

static void h_patch(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    if (!s)
        return;
    json_t *patch = osb_api_body(req, false);
    if (!patch)
        return;
    struct osb_apierr e;
    if (check_patch(patch, &e) < 0) {
        json_decref(patch);
        osb_apierr_respond(req, &e);
        return;
    }
    json_t *old = s->metadata, *md = json_deep_copy(old);
    const char *k;
    json_t *v;
    json_object_foreach(patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(md, k);
        else
            json_object_set(md, k, v);
    }
    json_decref(patch);
    s->metadata = md;
    if (osb_sbx_save(srv, s, NULL, NULL, &e) < 0) {
        s->metadata = old;
        json_decref(md);
        osb_apierr_respond(req, &e);
        return;
    }
    json_decref(old);
    osb_http_respond_json(req, 200, osb_api_sandbox_json(s, true));
}

/* ------------------------------------------------------- pause/resume */

typedef int (*state_op)(struct osb_server *, struct osb_sbx *, struct osb_apierr *);

/* Pause and resume answer 202 with an empty body (Content-Length: 0). */
static void pause_or_resume(struct osb_http_req *req, struct osb_server *srv, state_op op)
{
    struct osb_sbx *s = osb_api_find(srv, req);
    struct osb_apierr e;
    if (!s)
        return;
    if (op(srv, s, &e) < 0)
        osb_apierr_respond(req, &e);
    else
        osb_http_respond_empty(req, 202);
}

static void h_pause(struct osb_http_req *req, void *ud)
{
    pause_or_resume(req, ud, osb_lc_pause);
}

static void h_resume(struct osb_http_req *req, void *ud)
{
    pause_or_resume(req, ud, osb_lc_resume);
}

/* --------------------------------------------------------------- renew */

static int renew(struct osb_server *srv, struct osb_sbx *s, json_t *body, int64_t *t,
                 struct osb_apierr *e)
{
    if (!json_is_object(body))
        return osb_apierr(e, BAD, "request body must be a JSON object {\"expiresAt\": ...}");
    const char *v = NULL;
    struct osb_err err;
    int r = osb_json_str(body, "expiresAt", false, &v, &err);
    if (r == 0)
        return osb_apierr(e, BAD, "field 'expiresAt' is required");
    if (r < 0 || osb_timefmt_parse(v, t) < 0)
        return osb_apierr(e, BAD,
                          "field 'expiresAt' must be an RFC 3339 date-time such as "
                          "\"2030-01-02T03:04:05Z\"");
    if (!s->expires_us)
        return osb_apierr(e, "SANDBOX::INVALID_EXPIRATION#manual",
                          "Sandbox %s has no expiration (manual cleanup); it cannot be renewed.",
                          s->id);
    int64_t now = osb_now_us();
    if (*t <= now)
        return osb_apierr(e, "SANDBOX::INVALID_EXPIRATION",
                          "New expiration time must be in the future.");
    int64_t max = srv->limits.max_timeout_s;
    if (max > 0 && *t - now > max * 1000000)
        return osb_apierr(e, "SANDBOX::INVALID_EXPIRATION",
                          "New expiration time must be at most %lld seconds from now "
                          "(server.max_sandbox_timeout_seconds).",
                          (long long)max);
    return 0;
}

static void h_renew(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_api_find(srv, req);
    if (!s)
        return;
    json_t *body = osb_api_body(req, false);
    if (!body)
        return;
    int64_t t = 0, old = s->expires_us;
    struct osb_apierr e;
    int rc = renew(srv, s, body, &t, &e);
    json_decref(body);
    char when[OSB_TIMEFMT_LEN];
    osb_timefmt_us(t, when);
    s->expires_us = t;
    if (rc < 0 || osb_sbx_save(srv, s, "Renewed", when, &e) < 0) {
        s->expires_us = old;
        osb_apierr_respond(req, &e);
        return;
    }
    osb_metrics_event(srv->metrics, OSB_M_RENEW);
    osb_lc_ttl_rearm(srv);
    osb_http_respond_json(req, 200, json_pack("{s:s}", "expiresAt", when));
}

const struct osb_http_route osb_api_sandbox_routes[] = {
    {"POST", "/sandboxes", h_create, 0, NULL},
    {"POST", "/sandboxes/batch", osb_api_batch_create, 0, NULL},
    {"GET", "/sandboxes", h_list, 0, NULL},
    {"GET", "/sandboxes/:id", h_get, 0, NULL},
    {"DELETE", "/sandboxes/:id", h_delete, 0, NULL},
    {"PATCH", "/sandboxes/:id/metadata", h_patch, 0, NULL},
    {"POST", "/sandboxes/:id/pause", h_pause, 0, NULL},
    {"POST", "/sandboxes/:id/resume", h_resume, 0, NULL},
    {"POST", "/sandboxes/:id/renew-expiration", h_renew, 0, NULL},
};
const size_t osb_api_sandbox_nroutes =
    sizeof osb_api_sandbox_routes / sizeof osb_api_sandbox_routes[0];
