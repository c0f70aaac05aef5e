/* HTTP/1.1 connections: accept, parse with http-parser, route, and frame
 * responses. One request per connection is handled at a time; bytes of a
 * pipelined next request wait in conn->in until the current response ends,
 * while reading continues (bounded) so a client hang-up is seen at once. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "http/conn.h"
#include "http/request.h"

/* Input kept while a request is being handled before reading stops. */
#define MAX_PENDING_INPUT (256 * 1024)

static void process(struct conn *c);
static const struct osb_http_mode http_mode;

static void head_sweep(uv_timer_t *t);

/* The client has OSB_HEAD_TIMEOUT_MS from now to send a whole request
 * head (head_sweep). The sweep runs only while a deadline is pending: an
 * idle execd (thousands per host) must not wake up for nothing. */
static void head_wait(struct conn *c)
{
    struct osb_http_server *srv = c->srv;
    c->head_until = uv_now(srv->loop) + OSB_HEAD_TIMEOUT_MS;
    if (!uv_is_active((uv_handle_t *)&srv->head_timer))
        uv_timer_start(&srv->head_timer, head_sweep, OSB_HEAD_TIMEOUT_MS / 4,
                       OSB_HEAD_TIMEOUT_MS / 4);
}

static void conn_start(struct osb_http_server *srv, struct conn *c)
{
    osb_buf_init(&c->in, MAX_PENDING_INPUT + 256 * 1024);
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    osb_http__conn_open(srv, c, &http_mode);
    head_wait(c);
    osb_http__conn_update_read(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct osb_http_server *srv = server->data;
    if (status < 0)
        return;
    struct conn *c = osb_xcalloc(1, sizeof *c);
    c->srv = srv;
    if (server->type == UV_TCP)
        uv_tcp_init(srv->loop, &c->h.tcp);
    else
        uv_pipe_init(srv->loop, &c->h.pipe, 0);
    c->h.handle.data = c;
    if (uv_accept(server, &c->h.stream) < 0 || srv->nconns >= OSB_MAX_CONNECTIONS) {
        osb_http__conn_discard(c);
        return;
    }
    if (server->type == UV_TCP) {
        struct sockaddr_storage ss;
        int len = sizeof ss;
        uv_tcp_nodelay(&c->h.tcp, 1);
        if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0)
            uv_ip_name((struct sockaddr *)&ss, c->peer, sizeof c->peer);
    } else {
        snprintf(c->peer, sizeof c->peer, "unix");
    }
    conn_start(srv, c);
}

int osb_http_server_adopt_fd(struct osb_http_server *srv, int fd, struct osb_err *err)
{
    struct conn *c = osb_xcalloc(1, sizeof *c);
    c->srv = srv;
    uv_pipe_init(srv->loop, &c->h.pipe, 0);
    c->h.handle.data = c;
    int r = uv_pipe_open(&c->h.pipe, fd);
    if (r < 0) {
        osb_http__conn_discard(c);
        return osb_err_set(err, OSB_E_SYS, "adopt fd %d: %s", fd, uv_strerror(r));
    }
    snprintf(c->peer, sizeof c->peer, "fd");
    conn_start(srv, c);
    return 0;
}

/* ---------- requests ---------- */

static void respond_error_as_is(struct osb_http_req *req, int status, const char *code,
                                const char *msg);

/* Answer a protocol-level error and close the connection afterwards. */
static void fail_conn(struct conn *c, int status, const char *code, const char *msg)
{
    struct osb_http_req *req = c->req;
    if (!req) {
        req = c->req = osb_http__req_new(c);
        snprintf(req->method, sizeof req->method, "GET");
    }
    req->keep_alive = false;
    c->head_until = 0; /* the answer is not cut short by the head deadline */
    if (req->started) {
        osb_http__conn_close(c);
        return;
    }
    /* A handler streaming this body loses it: tell it, then answer. */
    osb_http_close_cb cb = req->on_close;
    req->on_close = NULL;
    if (req->dispatched && !req->ended && cb)
        cb(req, req->close_ud);
    req->on_body = NULL;
    req->on_end = NULL;
    respond_error_as_is(req, status, code, msg);
}

static bool head_grow(struct conn *c, size_t n)
{
    c->head_bytes += n;
    return c->head_bytes <= OSB_MAX_HEAD_BYTES;
}

static int on_message_begin(http_parser *p)
{
    struct conn *c = p->data;
    c->req = osb_http__req_new(c);
    c->head_bytes = 0;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    if (!head_grow(c, n) || osb_buf_add(&c->req->target, at, n) < 0)
        return -1;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct osb_http_req *r = c->req;
    if (!head_grow(c, n))
        return -1;
    if (r->header_value_last || r->nheaders == 0) {
        if (r->nheaders >= OSB_MAX_HEADERS)
            return -1;
        r->headers = osb_xrealloc(r->headers, (r->nheaders + 1) * sizeof *r->headers);
        r->headers[r->nheaders].name = osb_xstrndup(at, n);
        r->headers[r->nheaders].value = osb_xstrdup("");
        r->nheaders++;
        r->header_value_last = false;
        return 0;
    }
    struct kv *h = &r->headers[r->nheaders - 1];
    size_t l = strlen(h->name);
    h->name = osb_xrealloc(h->name, l + n + 1);
    memcpy(h->name + l, at, n);
    h->name[l + n] = '\0';
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct osb_http_req *r = c->req;
    if (!head_grow(c, n) || r->nheaders == 0)
        return -1;
    struct kv *h = &r->headers[r->nheaders - 1];
    size_t l = strlen(h->value);
    h->value = osb_xrealloc(h->value, l + n + 1);
    memcpy(h->value + l, at, n);
    h->value[l + n] = '\0';
    r->header_value_last = true;
    return 0;
}

static void dispatch(struct conn *c)
{
    struct osb_http_req *req = c->req;
    req->dispatched = true;
    const struct osb_http_route *rt = req->route;
    if (!rt) {
        osb_http_respond(req, 404, "text/plain", "404 page not found", 18);
        return;
    }
    rt->fn(req, rt->ud);
}

/* Runs at the end of the headers, before any body byte is buffered and
 * before "100 Continue": the auth hook, then the control-byte check of the
 * decoded target. A refused request is answered with Connection: close and
 * its body is never read. Returns false if it was answered. */
static bool admit(struct conn *c, struct osb_http_req *r, const struct osb_err *ctl)
{
    struct osb_http_server *srv = c->srv;
    bool keep = r->keep_alive;
    r->keep_alive = false;
    if (r->route && !(r->route->flags & OSB_ROUTE_PUBLIC) && srv->auth &&
        !srv->auth(r, srv->auth_ud)) {
        if (!r->ended) /* a hook that forgot to answer */
            osb_http_respond_empty(r, 401);
        return false;
    }
    if (ctl->code != OSB_E_OK) {
        osb_http_respond_error(r, 400, srv->invalid_code, "%s", ctl->msg);
        return false;
    }
    r->keep_alive = keep;
    return true;
}

/* A body is announced that the handler will not read (OSB_ROUTE_NO_BODY,
 * or no route): it is never buffered. */
static bool body_unwanted(const http_parser *p, const struct osb_http_route *rt)
{
    bool body =
        (p->flags & F_CHUNKED) || (p->content_length > 0 && p->content_length != ULLONG_MAX);
    return body && (!rt || (rt->flags & OSB_ROUTE_NO_BODY));
}

/* A small unwanted body of known length is dropped as it comes and the
 * answer follows it, so the connection lives on (Go's server does so up
 * to 256 KiB); the head deadline covers it. Any other is answered now, as
 * is one whose client waits for "100 Continue". */
static bool body_droppable(const http_parser *p)
{
    return !(p->flags & F_CHUNKED) && p->content_length <= OSB_MAX_DROPPED_BODY;
}

static int on_headers_complete(http_parser *p)
{
    struct conn *c = p->data;
    struct osb_http_req *r = c->req;
    r->headers_done = true;
    snprintf(r->method, sizeof r->method, "%s", http_method_str(p->method));
    r->head_only = p->method == HTTP_HEAD;
    r->keep_alive = http_should_keep_alive(p);
    struct osb_err ctl;
    if (osb_http__req_parse_target(r, &ctl) < 0)
        return -1;
    r->route = osb_http__route_match(c->srv, r);
    if (!admit(c, r, &ctl)) {
        http_parser_pause(p, 1); /* the body stays unread */
        return 0;
    }
    /* Clients that sent "Expect: 100-continue" wait for a 100 before the
     * body (curl stalls 1 s otherwise), or take the final answer instead. */
    const char *expect = osb_http_req_header(r, "expect");
    bool cont = expect && strcasecmp(expect, "100-continue") == 0;
    bool unwanted = body_unwanted(p, r->route);
    if (unwanted && !cont && body_droppable(p)) {
        r->drop_body = true;
        return 0;
    }
    c->head_until = 0;
    if ((r->route && (r->route->flags & OSB_ROUTE_STREAM_BODY)) || unwanted)
        dispatch(c);
    if (c->req == r && !r->started && cont)
        osb_http__conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct conn *c = p->data;
    struct osb_http_req *r = c->req;
    if (!r || r->ended)
        return 0; /* the handler answered early; the rest is discarded */
    if (r->drop_body)
        return 0;
    if (r->dispatched && !r->collect) {
        if (r->on_body)
            r->on_body(r, at, n, r->body_ud);
        if (c->req == r && r->paused)
            http_parser_pause(p, 1);
        return 0;
    }
    if (osb_buf_add(&r->body, at, n) < 0) {
        fail_conn(c, 413, "REQUEST_TOO_LARGE", "request body exceeds 16 MiB");
        http_parser_pause(p, 1);
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct conn *c = p->data;
    struct osb_http_req *r = c->req;
    if (!r)
        return 0;
    r->complete = true;
    if (!r->dispatched)
        dispatch(c);
    else if (!r->ended && r->on_end)
        r->on_end(r, r->body_ud);
    /* Hold further input until this response is done. */
    http_parser_pause(p, 1);
    return 0;
}

static void parse_error(struct conn *c)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (c->head_bytes > OSB_MAX_HEAD_BYTES) {
        fail_conn(c, 431, "HEADERS_TOO_LARGE", "request head exceeds 64 KiB");
    } else if (c->req && c->req->nheaders >= OSB_MAX_HEADERS && e == HPE_CB_header_field) {
        fail_conn(c, 431, "HEADERS_TOO_LARGE", "more than 100 request headers");
    } else if (e == HPE_HEADER_OVERFLOW) {
        fail_conn(c, 431, "HEADERS_TOO_LARGE", "request head too large");
    } else {
        char msg[128];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", http_errno_description(e));
        fail_conn(c, 400, "BAD_REQUEST", msg);
    }
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Finish a request whose response has ended: free it, and decide whether
 * the connection lives on. Returns false if the connection is done. */
static bool retire(struct conn *c)
{
    struct osb_http_req *r = c->req;
    bool keep = r->keep_alive && r->complete && !c->parser.upgrade;
    bool unread = !r->complete && !c->eof;
    c->req = NULL;
    osb_http__req_free(r);
    if (!keep) {
        if (unread)
            osb_http__linger(c);
        else
            osb_http__conn_close_after_flush(c);
        return false;
    }
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    head_wait(c);
    return true;
}

static void process(struct conn *c)
{
    if (c->in_process || c->closing)
        return;
    c->in_process = true;
    while (!c->closing && c->mode == &http_mode) {
        struct osb_http_req *r = c->req;
        if (r && r->ended) {
            if (!retire(c))
                break;
            continue;
        }
        if ((r && r->complete) || (r && r->paused) || c->in.len == 0 || c->close_after_flush)
            break;
        http_parser_pause(&c->parser, 0);
        size_t n = http_parser_execute(&c->parser, &settings, c->in.data, c->in.len);
        enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
        if (e != HPE_OK && e != HPE_PAUSED) {
            if (!c->req || !c->req->ended)
                parse_error(c);
            osb_buf_reset(&c->in);
            continue;
        }
        osb_buf_consume(&c->in, n);
        if (c->parser.upgrade && c->req && !c->req->ended && !c->req->taken_over)
            c->req->keep_alive = false;
    }
    c->in_process = false;
    if (c->eof && c->mode == &http_mode && !(c->req && c->req->complete)) {
        osb_http__conn_close_after_flush(c);
        return;
    }
    /* A protocol switch inside the parser leaves the rest of the input to
     * the new mode. */
    if (!c->closing && c->mode != &http_mode && c->in.len) {
        struct osb_buf rest = c->in;
        osb_buf_init(&c->in, 0);
        c->mode->on_data(c, rest.data, rest.len);
        osb_buf_free(&rest);
    }
    if (!c->closing)
        osb_http__conn_update_read(c);
}

/* ---------- the HTTP mode ---------- */

static void http_on_data(struct conn *c, const char *data, size_t len)
{
    /* The input is capped above what http_want_read lets in, so it does
     * not fill up; if it did, the bytes could not be parsed in order. */
    if (osb_buf_add(&c->in, data, len) < 0) {
        osb_http__conn_close(c);
        return;
    }
    process(c);
}

/* Like Go's server, EOF while a request is being handled means the client
 * is gone (SSE streams rely on this). Otherwise answer what is already
 * buffered, then close. */
static void http_on_eof(struct conn *c)
{
    if (c->req && c->req->complete && !c->req->ended) {
        osb_http__conn_close(c);
        return;
    }
    process(c);
}

static void http_on_drain(struct conn *c)
{
    if (c->req && c->req->on_drain)
        c->req->on_drain(c->req, c->req->drain_ud);
}

static bool http_want_read(const struct conn *c)
{
    return c->in.len < MAX_PENDING_INPUT && !(c->req && c->req->paused);
}

static const struct osb_http_mode http_mode = {
    .on_data = http_on_data,
    .on_eof = http_on_eof,
    .on_drain = http_on_drain,
    .want_read = http_want_read,
};

void osb_http__take_over(struct osb_http_req *req, const struct osb_http_mode *mode, void *ctx)
{
    struct conn *c = req->c;
    req->ended = true;
    req->taken_over = true;
    osb_http__conn_set_mode(c, mode, ctx);
    /* The request object dies here; the parser (still inside its callback
     * when called from a handler) must not see it again. */
    c->req = NULL;
    req->c = NULL;
    osb_http__req_free(req);
    http_parser_pause(&c->parser, 1);
    if (!c->in_process)
        process(c);
}

/* ---------- responses ---------- */

/* A head that cannot be built (a handler's headers past the head cap) is
 * logged and the connection dropped: a response cut short would be worse. */
static void write_head(struct osb_http_req *req, int status, const char *ctype, int64_t clen)
{
    struct conn *c = req->c;
    char date[40];
    osb_time_http(time(NULL), date, sizeof date);
    struct osb_buf h;
    osb_buf_init(&h, SIZE_MAX);
    int rc =
        osb_buf_addf(&h, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, osb_http_reason(status), date);
    if (ctype)
        rc |= osb_buf_addf(&h, "Content-Type: %s\r\n", ctype);
    if (clen >= 0)
        rc |= osb_buf_addf(&h, "Content-Length: %lld\r\n", (long long)clen);
    else if (status != 101 && status != 204 && status != 304)
        rc |= osb_buf_adds(&h, "Transfer-Encoding: chunked\r\n");
    if (!req->keep_alive && status != 101)
        rc |= osb_buf_adds(&h, "Connection: close\r\n");
    rc |= osb_buf_add(&h, req->resp_headers.data, req->resp_headers.len);
    rc |= osb_buf_adds(&h, "\r\n");
    if (rc < 0 || req->head_overflow) {
        osb_err_log("%s %s: response headers past %d bytes; connection dropped", req->method,
                    osb_http_req_path(req), OSB_MAX_HEAD_BYTES);
        osb_http__conn_doom(c);
    } else {
        osb_http__conn_write(c, h.data, h.len);
    }
    osb_buf_free(&h);
}

void osb_http_add_header(struct osb_http_req *req, const char *name, const char *value)
{
    if (req->started)
        return;
    if (osb_buf_addf(&req->resp_headers, "%s: %s\r\n", name, value) < 0)
        req->head_overflow = true; /* write_head refuses to send the head */
}

void osb_http_start(struct osb_http_req *req, int status, const char *content_type,
                    int64_t content_length)
{
    if (req->started || req->ended)
        return;
    req->started = true;
    req->status = status;
    req->chunked = content_length < 0 && status != 101 && status != 204 && status != 304;
    if (!req->complete && !(req->route && (req->route->flags & OSB_ROUTE_STREAM_BODY)))
        req->keep_alive = false;
    if (req->c)
        write_head(req, status, content_type, content_length);
}

size_t osb_http_write(struct osb_http_req *req, const void *data, size_t len)
{
    struct conn *c = req->c;
    if (!c || req->ended || !req->started)
        return c ? c->queued : 0;
    if (len == 0 || req->head_only)
        return c->queued;
    req->bytes += len;
    if (!req->chunked) {
        osb_http__conn_write(c, data, len);
        return c->queued;
    }
    char pre[24];
    int n = snprintf(pre, sizeof pre, "%zx\r\n", len);
    uv_buf_t b[3] = {uv_buf_init(pre, (unsigned)n), uv_buf_init((char *)data, (unsigned)len),
                     uv_buf_init("\r\n", 2)};
    osb_http__conn_writev(c, b, 3);
    return c->queued;
}

void osb_http_end(struct osb_http_req *req)
{
    if (req->ended)
        return;
    if (!req->started)
        osb_http_start(req, 200, NULL, 0);
    req->ended = true;
    struct conn *c = req->c;
    if (!c) {
        osb_http__req_free(req);
        return;
    }
    if (req->chunked && !req->head_only)
        osb_http__conn_write(c, "0\r\n\r\n", 5);
    /* An answer sent before the body was read ends the connection: the rest
     * of the body cannot be told apart from a next request cheaply. */
    if (!req->complete)
        req->keep_alive = false;
    if (!c->in_process)
        process(c);
}

void osb_http_abort(struct osb_http_req *req)
{
    if (req->ended)
        return;
    req->on_close = NULL;
    req->keep_alive = false;
    if (!req->c) {
        req->ended = true;
        osb_http__req_free(req);
        return;
    }
    osb_http__conn_doom(req->c);
    /* The request lives until the reaper closes the connection. */
    req->ended = true;
    req->on_body = NULL;
    req->on_end = NULL;
    req->on_drain = NULL;
}

bool osb_http_started(const struct osb_http_req *req)
{
    return req->started;
}

void osb_http_respond(struct osb_http_req *req, int status, const char *content_type,
                      const void *body, size_t len)
{
    if (req->started || req->ended)
        return;
    osb_http_start(req, status, content_type, (int64_t)len);
    osb_http_write(req, body, len);
    osb_http_end(req);
}

void osb_http_respond_empty(struct osb_http_req *req, int status)
{
    osb_http_respond(req, status, NULL, "", 0);
}

void osb_http_respond_json(struct osb_http_req *req, int status, json_t *j)
{
    size_t n;
    char *s = osb_json_dump(j, &n);
    json_decref(j);
    osb_http_respond(req, status, "application/json; charset=utf-8", s, n);
    free(s);
}

static void respond_error_as_is(struct osb_http_req *req, int status, const char *code,
                                const char *msg)
{
    json_t *j = json_object();
    json_object_set_new(j, "code", json_string(code));
    json_object_set_new(j, "message", json_string(msg));
    osb_http_respond_json(req, status, j);
}

void osb_http_respond_error(struct osb_http_req *req, int status, const char *code, const char *fmt,
                            ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct osb_http_server *srv = req->c ? req->c->srv : NULL;
    if (req->dispatched && srv && srv->status_map)
        status = srv->status_map(req, status, srv->status_ud);
    respond_error_as_is(req, status, code, msg);
}

void osb_http_sse_start(struct osb_http_req *req)
{
    osb_http_add_header(req, "Cache-Control", "no-cache");
    osb_http_add_header(req, "Connection", "keep-alive");
    osb_http_add_header(req, "X-Accel-Buffering", "no");
    osb_http_start(req, 200, "text/event-stream", -1);
}

void osb_http_req_on_body(struct osb_http_req *req, osb_http_body_cb body_cb,
                          osb_http_end_cb end_cb, void *ud)
{
    req->on_body = body_cb;
    req->on_end = end_cb;
    req->body_ud = ud;
}

void osb_http_req_collect(struct osb_http_req *req, osb_http_end_cb on_end, void *ud)
{
    req->collect = true;
    osb_http_req_on_body(req, NULL, on_end, ud);
}

void osb_http_req_pause(struct osb_http_req *req)
{
    req->paused = true;
    if (req->c) {
        http_parser_pause(&req->c->parser, 1);
        osb_http__conn_update_read(req->c);
    }
}

void osb_http_req_resume(struct osb_http_req *req)
{
    if (!req->paused)
        return;
    req->paused = false;
    if (req->c && !req->c->in_process)
        process(req->c);
}

void osb_http_req_on_close(struct osb_http_req *req, osb_http_close_cb fn, void *ud)
{
    req->on_close = fn;
    req->close_ud = ud;
}

void osb_http_req_on_drain(struct osb_http_req *req, osb_http_drain_cb fn, void *ud)
{
    req->on_drain = fn;
    req->drain_ud = ud;
}

/* ---------- server ---------- */

/* A connection past its head deadline: a partial head gets a 408 (the
 * client may be slow, not hostile, and deserves to know), an idle one is
 * closed silently, as keep-alive timeouts are. */
static void head_sweep(uv_timer_t *t)
{
    struct osb_http_server *srv = t->data;
    uint64_t now = uv_now(srv->loop);
    bool pending = false;
    for (struct conn *c = srv->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != &http_mode || !c->head_until || c->doomed || c->close_after_flush)
            continue;
        if (c->head_until > now) {
            pending = true;
            continue;
        }
        c->head_until = 0;
        char msg[64];
        snprintf(msg, sizeof msg, "the request head did not arrive within %d s",
                 OSB_HEAD_TIMEOUT_MS / 1000);
        if (c->req && !c->req->dispatched) /* a partial head, or a dropped body */
            fail_conn(c, 408, "REQUEST_TIMEOUT", msg);
        else
            osb_http__conn_close(c);
    }
    if (!pending)
        uv_timer_stop(t);
}

struct osb_http_server *osb_http_server_new(uv_loop_t *loop)
{
    struct osb_http_server *srv = osb_xcalloc(1, sizeof *srv);
    srv->loop = loop;
    srv->invalid_code = "BAD_REQUEST";
    uv_prepare_init(loop, &srv->reaper);
    srv->reaper.data = srv;
    uv_timer_init(loop, &srv->linger_timer);
    srv->linger_timer.data = srv;
    uv_timer_init(loop, &srv->head_timer);
    srv->head_timer.data = srv;
    uv_unref((uv_handle_t *)&srv->head_timer);
    return srv;
}

void osb_http_server_add_routes(struct osb_http_server *srv, const struct osb_http_route *r,
                                size_t n)
{
    srv->routes = osb_xrealloc(srv->routes, (srv->nroutes + n) * sizeof *r);
    memcpy(srv->routes + srv->nroutes, r, n * sizeof *r);
    srv->nroutes += n;
}

void osb_http_server_set_auth(struct osb_http_server *srv, osb_http_auth_fn fn, void *ud)
{
    srv->auth = fn;
    srv->auth_ud = ud;
}

void osb_http_server_set_status_map(struct osb_http_server *srv, osb_http_status_fn fn, void *ud)
{
    srv->status_map = fn;
    srv->status_ud = ud;
}

void osb_http_server_set_observer(struct osb_http_server *srv, osb_http_observe_fn fn, void *ud)
{
    srv->observe = fn;
    srv->observe_ud = ud;
}

void osb_http_server_set_invalid_code(struct osb_http_server *srv, const char *code)
{
    srv->invalid_code = code;
}

int osb_http_listen_tcp(struct osb_http_server *srv, const char *host, int port,
                        struct osb_err *err)
{
    struct sockaddr_storage ss;
    int r = strchr(host, ':') ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss)
                              : uv_ip4_addr(host, port, (struct sockaddr_in *)&ss);
    if (r < 0)
        return osb_err_set(err, OSB_E_INVALID, "bad listen address %s: %s", host, uv_strerror(r));
    uv_tcp_init(srv->loop, &srv->tcp);
    srv->tcp.data = srv;
    srv->tcp_on = true;
    if ((r = uv_tcp_bind(&srv->tcp, (struct sockaddr *)&ss, 0)) < 0 ||
        (r = uv_listen((uv_stream_t *)&srv->tcp, 1024, on_connection)) < 0)
        return osb_err_set(err, OSB_E_SYS, "listen on %s:%d: %s", host, port, uv_strerror(r));
    return 0;
}

int osb_http_server_port(struct osb_http_server *srv)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (!srv->tcp_on || uv_tcp_getsockname(&srv->tcp, (struct sockaddr *)&ss, &len) < 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int osb_http_listen_unix(struct osb_http_server *srv, const char *path, struct osb_err *err)
{
    unlink(path);
    uv_pipe_init(srv->loop, &srv->unix_sock, 0);
    srv->unix_sock.data = srv;
    srv->unix_on = true;
    int r;
    mode_t old = umask(0077);
    r = uv_pipe_bind(&srv->unix_sock, path);
    umask(old);
    if (r < 0 || (r = uv_listen((uv_stream_t *)&srv->unix_sock, 1024, on_connection)) < 0)
        return osb_err_set(err, OSB_E_SYS, "listen on unix:%s: %s", path, uv_strerror(r));
    return 0;
}

int osb_http_listen_unix_fd(struct osb_http_server *srv, int fd, struct osb_err *err)
{
    if (srv->unix_on)
        return osb_err_set(err, OSB_E_INVALID, "already listening on a unix socket");
    uv_pipe_init(srv->loop, &srv->unix_sock, 0);
    srv->unix_sock.data = srv;
    srv->unix_on = true;
    int r = uv_pipe_open(&srv->unix_sock, fd);
    if (r < 0 || (r = uv_listen((uv_stream_t *)&srv->unix_sock, 1024, on_connection)) < 0)
        return osb_err_set(err, OSB_E_SYS, "listen on unix fd %d: %s", fd, uv_strerror(r));
    return 0;
}

static void listener_closed(uv_handle_t *h)
{
    struct osb_http_server *srv = h->data;
    if (--srv->pending_handles == 0) {
        free(srv->routes);
        free(srv);
    }
}

void osb_http_server_close(struct osb_http_server *srv)
{
    srv->closing = true;
    while (srv->conns)
        osb_http__conn_close(srv->conns);
    srv->pending_handles = 4;
    uv_close((uv_handle_t *)&srv->reaper, listener_closed);
    uv_close((uv_handle_t *)&srv->linger_timer, listener_closed);
    uv_close((uv_handle_t *)&srv->head_timer, listener_closed);
    if (srv->tcp_on) {
        srv->pending_handles++;
        uv_close((uv_handle_t *)&srv->tcp, listener_closed);
    }
    if (srv->unix_on) {
        srv->pending_handles++;
        uv_close((uv_handle_t *)&srv->unix_sock, listener_closed);
    }
    uv_handle_t fake = {.data = srv};
    listener_closed(&fake);
}
