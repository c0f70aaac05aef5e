/* Sandbox lifecycle calls (protocol.md 1.3) and the readiness wait the SDKs
 * do after create and resume (protocol.md 3.10). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "create_req.h"

static bool empty(const char *s)
{
    return !s || !*s;
}

/* "/v1/sandboxes/<id><tail>" */
static char *sbx_path(const char *id, const char *tail, struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/v1/sandboxes/");
    osbcl_sb_esc(&p, id);
    if (tail)
        osbcl_sb_adds(&p, tail);
    return osbcl_sb_done(&p, err);
}

static int sbx_call(osbc_client *c, const char *method, const char *id, const char *tail,
                    const char *body, char **out, struct osbc_error *err)
{
    if (out)
        *out = NULL;
    if (empty(id))
        return osbcl_fail(err, OSBC_E_ARG, "no sandbox id");
    char *p = sbx_path(id, tail, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_api(c, method, p, body, out, err);
    free(p);
    return rc;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int osbc_sandbox_ping(osbc_client *c, const char *id, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", "/ping", NULL, NULL, err);
}

/* Polls /ping as the SDKs do: a sandbox whose execd answers is ready. A
 * 404 from the lifecycle server (resolving the endpoint) means the sandbox
 * is gone: no point waiting. A local error record, so this works when the
 * caller passes err NULL. */
int osbc_sandbox_wait_ready(osbc_client *c, const char *id, long timeout_ms, struct osbc_error *err)
{
    if (empty(id))
        return osbcl_fail(err, OSBC_E_ARG, "no sandbox id");
    long long end = now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
    int delay = 5;
    struct osbc_error e = {0};
    for (;;) {
        int rc = osbc_sandbox_ping(c, id, &e);
        if (rc == 0)
            return 0;
        if (rc == OSBC_E_ARG || rc == OSBC_E_NOMEM ||
            (e.http_status == 404 && !strncmp(e.message, "GET /v1/", 8))) {
            if (err)
                *err = e;
            return rc;
        }
        if (now_ms() >= end)
            return osbcl_fail(err, OSBC_E_TIMEOUT, "sandbox %s was not ready in time (%s)", id,
                              e.message);
        poll(NULL, 0, delay);
        if (delay < 200)
            delay *= 2;
    }
}

static int answer_id(const char *body, char **id, const char *what, struct osbc_error *err)
{
    json_t *j = osbcl_json_parse(body, strlen(body), what, err);
    if (!j)
        return OSBC_E_PROTOCOL;
    const char *v = json_string_value(json_object_get(j, "id"));
    int rc = 0;
    if (!v || !*v)
        rc = osbcl_fail(err, OSBC_E_PROTOCOL, "%s: the answer has no id", what);
    else if (!(*id = strdup(v)))
        rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    json_decref(j);
    return rc;
}

static int post_create(osbc_client *c, const struct osbc_create_opts *o, const char *body,
                       char **out, struct osbc_error *err)
{
    char idem[300] = "";
    const char *hdrs[] = {"Accept: application/json", NULL, NULL};
    if (!empty(o->idempotency_key)) {
        if (strpbrk(o->idempotency_key, "\r\n") || strlen(o->idempotency_key) > 255)
            return osbcl_fail(err, OSBC_E_ARG, "create: a bad idempotency key");
        snprintf(idem, sizeof idem, "Idempotency-Key: %s", o->idempotency_key);
        hdrs[1] = idem;
    }
    struct osbcl_req rq = {.method = "POST",
                           .path = "/v1/sandboxes",
                           .headers = hdrs,
                           .content_type = "application/json",
                           .body = body,
                           .body_len = strlen(body)};
    struct osbcl_resp rs = {0};
    int rc = osbcl_http(c, &rq, &rs, err);
    if (rc < 0)
        return rc;
    if (rs.status < 200 || rs.status >= 300)
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "POST /v1/sandboxes");
    else
        *out = rs.body, rs.body = NULL;
    osbcl_resp_free(&rs);
    return rc;
}

int osbc_sandbox_create(osbc_client *c, const struct osbc_create_opts *o, char **json, char **id,
                        struct osbc_error *err)
{
    if (json)
        *json = NULL;
    if (id)
        *id = NULL;
    if (!c || !o)
        return osbcl_fail(err, OSBC_E_ARG, "create: no options");
    json_t *b;
    int rc = osbcl_create_body(o, &b, err);
    if (rc < 0)
        return rc;
    char *text = osbcl_json_dump(b);
    json_decref(b);
    if (!text)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    char *body = NULL, *sid = NULL;
    rc = post_create(c, o, text, &body, err);
    free(text);
    if (rc == 0)
        rc = answer_id(body, &sid, "POST /v1/sandboxes", err);
    if (rc == 0 && !o->skip_health_check) {
        rc = osbc_sandbox_wait_ready(c, sid, o->ready_timeout_ms, err);
        if (rc < 0) /* as the SDKs: a sandbox that never got ready is removed */
            osbc_sandbox_delete(c, sid, NULL);
    }
    if (rc < 0) {
        free(body);
        free(sid);
        return rc;
    }
    if (json)
        *json = body;
    else
        free(body);
    if (id)
        *id = sid;
    else
        free(sid);
    return 0;
}

int osbc_sandbox_list(osbc_client *c, const struct osbc_list_opts *o, char **json,
                      struct osbc_error *err)
{
    struct osbcl_sb p = {0}, meta = {0};
    osbcl_sb_adds(&p, "/v1/sandboxes");
    char sep = '?';
    for (size_t i = 0; o && i < o->n_states; i++) {
        osbcl_sb_addf(&p, "%cstate=", sep);
        osbcl_sb_esc(&p, o->states[i]);
        sep = '&';
    }
    /* metadata=k=v&k2=v2 as one value (docs/server.md) */
    for (size_t i = 0; o && i < o->n_metadata; i++)
        osbcl_sb_addf(&meta, "%s%s=%s", i ? "&" : "", o->metadata[i].key, o->metadata[i].value);
    if (meta.len) {
        osbcl_sb_addf(&p, "%cmetadata=", sep);
        osbcl_sb_esc(&p, meta.p);
        sep = '&';
    }
    osbcl_sb_free(&meta);
    if (o && o->page > 0)
        osbcl_sb_addf(&p, "%cpage=%d", sep, o->page), sep = '&';
    if (o && o->page_size > 0)
        osbcl_sb_addf(&p, "%cpageSize=%d", sep, o->page_size);
    char *path = osbcl_sb_done(&p, err);
    if (!path)
        return OSBC_E_NOMEM;
    int rc = osbcl_api(c, "GET", path, NULL, json, err);
    free(path);
    return rc;
}

int osbc_sandbox_get(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return sbx_call(c, "GET", id, NULL, NULL, json, err);
}

int osbc_sandbox_delete(osbc_client *c, const char *id, struct osbc_error *err)
{
    int rc = sbx_call(c, "DELETE", id, NULL, NULL, NULL, err);
    if (!empty(id))
        osbcl_endpoint_forget(c, id);
    return rc;
}

int osbc_sandbox_pause(osbc_client *c, const char *id, struct osbc_error *err)
{
    return sbx_call(c, "POST", id, "/pause", NULL, NULL, err);
}

int osbc_sandbox_resume(osbc_client *c, const char *id, long ready_timeout_ms,
                        struct osbc_error *err)
{
    int rc = sbx_call(c, "POST", id, "/resume", NULL, NULL, err);
    if (rc == 0 && ready_timeout_ms >= 0)
        rc = osbc_sandbox_wait_ready(c, id, ready_timeout_ms, err);
    return rc;
}

int osbc_sandbox_renew(osbc_client *c, const char *id, long seconds, char **json,
                       struct osbc_error *err)
{
    if (seconds <= 0)
        return osbcl_fail(err, OSBC_E_ARG, "renew: %ld s; want a positive duration", seconds);
    time_t t = time(NULL) + seconds;
    struct tm tm;
    char body[64];
    if (!gmtime_r(&t, &tm))
        return osbcl_fail(err, OSBC_E_ARG, "renew: %ld s is out of range", seconds);
    strftime(body, sizeof body, "{\"expiresAt\":\"%Y-%m-%dT%H:%M:%SZ\"}", &tm);
    return sbx_call(c, "POST", id, "/renew-expiration", body, json, err);
}

int osbc_sandbox_patch_metadata(osbc_client *c, const char *id, const char *merge_patch_json,
                                char **json, struct osbc_error *err)
{
    json_t *j = merge_patch_json ? json_loads(merge_patch_json, 0, NULL) : NULL;
    bool ok = json_is_object(j);
    json_decref(j);
    if (!ok)
        return osbcl_fail(err, OSBC_E_ARG, "metadata patch: want a JSON object");
    return sbx_call(c, "PATCH", id, "/metadata", merge_patch_json, json, err);
}

int osbc_sandbox_endpoint(osbc_client *c, const char *id, int port, int use_server_proxy,
                          char **json, struct osbc_error *err)
{
    if (port < 1 || port > 65535)
        return osbcl_fail(err, OSBC_E_ARG, "endpoint: port %d is not in 1..65535", port);
    char tail[80];
    bool proxy = use_server_proxy < 0 ? osbcl_use_server_proxy(c) : use_server_proxy != 0;
    snprintf(tail, sizeof tail, "/endpoints/%d?use_server_proxy=%s", port,
             proxy ? "true" : "false");
    return sbx_call(c, "GET", id, tail, NULL, json, err);
}

int osbc_sandbox_metrics(osbc_client *c, const char *id, char **json, struct osbc_error *err)
{
    return osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", "/metrics", NULL, json, err);
}

struct watch {
    osbc_json_cb cb;
    void *ud;
    struct osbcl_sb line;
    bool stopped, oom;
};

static int watch_data(void *ud, const char *data, size_t len)
{
    struct watch *w = ud;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        osbcl_sb_add(&w->line, data, take);
        if (w->line.oom || w->line.len > 1024 * 1024)
            return w->oom = true, 1;
        if (!nl)
            return 0;
        data += take + 1;
        len -= take + 1;
        if (w->line.len && w->line.p[0] == '{' && w->cb(w->ud, w->line.p))
            return w->stopped = true, 1;
        w->line.len = 0;
    }
    return 0;
}

int osbc_sandbox_metrics_watch(osbc_client *c, const char *id, osbc_json_cb cb, void *ud,
                               struct osbc_error *err)
{
    if (!cb)
        return osbcl_fail(err, OSBC_E_ARG, "metrics watch: no callback");
    struct watch w = {.cb = cb, .ud = ud};
    struct osbcl_req rq = {
        .method = "GET", .path = "/metrics/watch", .on_data = watch_data, .data_ud = &w};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300))
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "GET /metrics/watch");
    if (rs.status)
        osbcl_resp_free(&rs);
    osbcl_sb_free(&w.line);
    if (w.stopped)
        return osbcl_fail(err, OSBC_E_CANCELLED, "stopped by the caller");
    if (w.oom)
        return osbcl_fail(err, OSBC_E_PROTOCOL, "metrics watch: a line over 1 MiB");
    return rc;
}

int osbc_diagnostics(osbc_client *c, const char *id, const char *kind, const char *scope,
                     char **body, struct osbc_error *err)
{
    if (!kind || (strcmp(kind, "logs") && strcmp(kind, "events")))
        return osbcl_fail(err, OSBC_E_ARG, "diagnostics: kind is logs or events");
    struct osbcl_sb t = {0};
    osbcl_sb_addf(&t, "/diagnostics/%s", kind);
    if (!empty(scope)) {
        osbcl_sb_adds(&t, "?scope=");
        osbcl_sb_esc(&t, scope);
    }
    char *tail = osbcl_sb_done(&t, err);
    if (!tail)
        return OSBC_E_NOMEM;
    int rc = sbx_call(c, "GET", id, tail, NULL, body, err);
    free(tail);
    return rc;
}
