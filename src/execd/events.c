#include "execd/events.h"

#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define PING_INTERVAL_MS 3000

struct osb_sse {
    struct osb_http_req *req;
    uv_timer_t ping;
    void (*on_gone)(void *ud);
    void *ud;
    void (*on_drain)(void *ud);
    void *drain_ud;
};

char *osb_execd_event_json(const struct osb_execd_event *ev, int64_t now_ms, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(ev->type));
    if (ev->text) {
        size_t n = ev->text_len ? ev->text_len : strlen(ev->text);
        if (n)
            json_object_set_new(o, "text", json_stringn_nocheck(ev->text, n));
    }
    if (ev->execution_count)
        json_object_set_new(o, "execution_count", json_integer(ev->execution_count));
    if (ev->execution_time)
        json_object_set_new(o, "execution_time", json_integer(ev->execution_time));
    json_object_set_new(o, "timestamp", json_integer(now_ms));
    if (ev->results)
        json_object_set(o, "results", ev->results);
    if (ev->ename) {
        json_t *e = json_object();
        json_object_set_new(e, "ename", json_string(ev->ename));
        json_object_set_new(e, "evalue", json_string(ev->evalue ? ev->evalue : ""));
        json_object_set_new(e, "traceback",
                            ev->traceback ? json_incref(ev->traceback) : json_array());
        json_object_set_new(o, "error", e);
    }
    char *s = osb_json_dump(o, len);
    json_decref(o);
    return s;
}

static void sse_free(uv_handle_t *h)
{
    free(h->data);
}

static void release(struct osb_sse *s)
{
    uv_timer_stop(&s->ping);
    s->ping.data = s;
    uv_close((uv_handle_t *)&s->ping, sse_free);
}

static void on_close(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct osb_sse *s = ud;
    s->req = NULL;
    if (s->on_gone)
        s->on_gone(s->ud);
    release(s);
}

static void on_ping(uv_timer_t *t)
{
    struct osb_sse *s = t->data;
    struct osb_execd_event ev = {.type = "ping", .text = "pong"};
    osb_sse_send(s, &ev);
}

struct osb_sse *osb_sse_open(uv_loop_t *loop, struct osb_http_req *req, void (*on_gone)(void *ud),
                             void *ud)
{
    struct osb_sse *s = osb_xcalloc(1, sizeof *s);
    s->req = req;
    s->on_gone = on_gone;
    s->ud = ud;
    uv_timer_init(loop, &s->ping);
    s->ping.data = s;
    uv_timer_start(&s->ping, on_ping, PING_INTERVAL_MS, PING_INTERVAL_MS);
    osb_http_req_on_close(req, on_close, s);
    osb_http_sse_start(req);
    return s;
}

void osb_sse_send_raw(struct osb_sse *s, const char *data, size_t len)
{
    if (s && s->req)
        osb_http_write(s->req, data, len);
}

void osb_sse_send(struct osb_sse *s, const struct osb_execd_event *ev)
{
    if (!s || !s->req)
        return;
    size_t n;
    char *j = osb_execd_event_json(ev, osb_now_ms(), &n);
    j = osb_xrealloc(j, n + 2);
    j[n] = '\n';
    j[n + 1] = '\n';
    osb_http_write(s->req, j, n + 2);
    free(j);
}

size_t osb_sse_queued(const struct osb_sse *s)
{
    return s && s->req ? osb_http_write(s->req, NULL, 0) : 0;
}

static void drained(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct osb_sse *s = ud;
    if (s->on_drain)
        s->on_drain(s->drain_ud);
}

void osb_sse_on_drain(struct osb_sse *s, void (*fn)(void *ud), void *ud)
{
    if (!s)
        return;
    s->on_drain = fn;
    s->drain_ud = ud;
    if (s->req)
        osb_http_req_on_drain(s->req, fn ? drained : NULL, fn ? s : NULL);
}

void osb_sse_close(struct osb_sse *s)
{
    if (!s)
        return;
    if (s->req) {
        osb_http_req_on_close(s->req, NULL, NULL);
        osb_http_req_on_drain(s->req, NULL, NULL);
        osb_http_end(s->req);
    }
    release(s);
}
