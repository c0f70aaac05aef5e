/* Reverse proxy: forward one request to an upstream (TCP or unix socket)
 * and stream the answer back untouched. The request body is re-framed as it
 * is decoded (Content-Length kept, chunked re-chunked); the upstream is told
 * "Connection: close", so its answer ends with its connection and the client
 * connection is closed after it. An Upgrade request (WebSocket) switches the
 * client connection to raw mode and splices bytes both ways. With a rewrite
 * (http.h), an answer that fits it is held whole, rewritten and relayed with
 * a new Content-Length; every other answer is streamed as it comes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/limits.h"
#include "common/xalloc.h"
#include "http/conn.h"

/* What a client sees when nothing answers behind the proxy: the same
 * {code,message} shape as every other error. */
#define BAD_GATEWAY_JSON \
    "{\"code\":\"PROXY::BAD_GATEWAY\",\"message\":\"Bad Gateway: nothing answered on the " \
    "proxied port.\"}"

static const struct osb_http_mode proxy_mode;

struct proxy {
    struct osb_http_server *srv;
    struct conn *c;           /* client connection, NULL once gone */
    struct osb_http_req *req; /* until the request is done or taken over */
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } up;
    uv_connect_t connect;
    struct osb_buf pending; /* bytes for upstream before it is connected */
    size_t up_queued;
    bool connected, closing, upgrade, chunked, got_answer, client_paused;
    struct osb_http_tap tap;    /* all NULL without one, and once it ended */
    struct osb_http_rewrite rw; /* fn NULL: nothing (more) to rewrite */
    struct osb_buf held;        /* the answer while it may be rewritten */
};

struct pwrite {
    uv_write_t w;
    struct proxy *p;
    size_t len;
    char data[];
};

static void proxy_close(struct proxy *p);

/* The tap's end, once; nothing is shown to it after (its owner may be
 * freed with the request right after). */
static void tap_end(struct proxy *p, bool client_left)
{
    void (*end)(void *, bool) = p->tap.on_end;
    void *ud = p->tap.ud;
    p->tap = (struct osb_http_tap){0};
    if (end)
        end(ud, client_left);
}

static void up_written(uv_write_t *w, int status)
{
    struct pwrite *pw = (struct pwrite *)w;
    struct proxy *p = pw->p;
    p->up_queued -= pw->len;
    free(pw);
    if (status < 0) {
        proxy_close(p);
        return;
    }
    if (p->client_paused && p->up_queued < OSB_WRITE_HIGH_WATER / 2) {
        p->client_paused = false;
        if (p->req)
            osb_http_req_resume(p->req);
        else if (p->c)
            osb_http__conn_update_read(p->c);
    }
}

static void up_send(struct proxy *p, const void *data, size_t len)
{
    if (p->closing || len == 0)
        return;
    if (!p->connected) {
        if (osb_buf_add(&p->pending, data, len) < 0)
            proxy_close(p); /* unbounded: only a size_t wrap-around gets here */
        return;
    }
    struct pwrite *pw = osb_xmalloc(sizeof *pw + len);
    pw->p = p;
    pw->len = len;
    memcpy(pw->data, data, len);
    uv_buf_t b = uv_buf_init(pw->data, (unsigned)len);
    p->up_queued += len;
    if (uv_write(&pw->w, &p->up.stream, &b, 1, up_written) < 0) {
        p->up_queued -= len;
        free(pw);
        proxy_close(p);
    }
}

static void up_closed(uv_handle_t *h)
{
    struct proxy *p = h->data;
    osb_buf_free(&p->pending);
    osb_buf_free(&p->held);
    if (p->rw.free_ud)
        p->rw.free_ud(p->rw.ud);
    free(p);
}

/* Tear down both sides. */
static void proxy_close(struct proxy *p)
{
    if (p->closing)
        return;
    p->closing = true;
    struct osb_http_req *req = p->req;
    struct conn *c = p->c;
    tap_end(p, !req && !c);
    p->req = NULL;
    p->c = NULL;
    if (req) {
        req->on_close = NULL;
        req->on_body = NULL;
        req->on_end = NULL;
        req->on_drain = NULL;
        if (!req->started)
            osb_http_respond(req, 502, "application/json; charset=utf-8", BAD_GATEWAY_JSON,
                             sizeof BAD_GATEWAY_JSON - 1);
        else {
            req->keep_alive = false;
            osb_http_end(req);
        }
    } else if (c && c->mode == &proxy_mode) {
        c->mode_ctx = NULL;
        if (!p->got_answer) {
            static const char bad[] =
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json; charset=utf-8\r\n"
                "Content-Length: %d\r\nConnection: close\r\n\r\n%s";
            static const char body[] = BAD_GATEWAY_JSON;
            char head[sizeof bad + sizeof body + 8];
            int n = snprintf(head, sizeof head, bad, (int)(sizeof body - 1), body);
            osb_http__conn_write(c, head, (size_t)n);
        }
        osb_http__conn_close_after_flush(c);
    }
    uv_close(&p->up.handle, up_closed);
}

/* The status of an answer's first bytes ("HTTP/1.1 200 ..."), 0 if not one. */
static int status_of(const char *p, size_t n)
{
    if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ')
        return 0;
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        st = st * 10 + (p[i] - '0');
    }
    return st;
}

/* Bytes of the answer to the client, as they are. */
static void relay(struct proxy *p, const char *data, size_t n)
{
    if (n == 0 || !p->c)
        return;
    if (p->req && !p->got_answer) {
        p->req->started = true; /* the upstream's answer is the response */
        p->req->chunked = false;
        p->req->status = status_of(data, n);
    }
    p->got_answer = true;
    if (p->tap.on_response)
        p->tap.on_response(p->tap.ud, data, n);
    if (p->req)
        p->req->bytes += (uint64_t)n;
    osb_http__conn_write(p->c, data, n);
    if (p->c->queued > OSB_WRITE_HIGH_WATER)
        uv_read_stop(&p->up.stream);
}

/* Stop holding: what was held goes out as it came, and so will the rest. */
static void release(struct proxy *p)
{
    p->rw.fn = NULL;
    struct osb_buf h = p->held;
    osb_buf_init(&p->held, 0);
    relay(p, h.data, h.len);
    osb_buf_free(&h);
}

/* Value of header `name` in a head (lines after the status line), or NULL;
 * *len is its length without surrounding blanks. */
static const char *head_value(const char *head, size_t n, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *l = memchr(head, '\n', n); l && (size_t)(l + 1 - head) < n;
         l = memchr(l + 1, '\n', n - (size_t)(l + 1 - head))) {
        const char *ln = l + 1, *eol = memchr(ln, '\n', n - (size_t)(ln - head));
        if (!eol || (size_t)(eol - ln) <= nl || ln[nl] != ':' || strncasecmp(ln, name, nl) != 0)
            continue;
        const char *v = ln + nl + 1;
        while (v < eol && (*v == ' ' || *v == '\t'))
            v++;
        const char *e = eol;
        while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        *len = (size_t)(e - v);
        return v;
    }
    return NULL;
}

/* The body length of a held head the rewrite takes, or -1. */
static long rewritable(const struct proxy *p, const char *head, size_t n)
{
    size_t tl, cl, xl;
    const char *ct = head_value(head, n, "Content-Type", &tl);
    const char *len = head_value(head, n, "Content-Length", &cl);
    size_t want = strlen(p->rw.content_type);
    if (status_of(head, n) != 200 || !ct || tl < want ||
        strncasecmp(ct, p->rw.content_type, want) != 0 || !len || cl == 0 || cl > 9 ||
        strspn(len, "0123456789") < cl || head_value(head, n, "Transfer-Encoding", &xl) ||
        head_value(head, n, "Content-Encoding", &xl))
        return -1;
    long v = strtol(len, NULL, 10);
    return (size_t)v <= p->rw.max ? v : -1;
}

/* The head's lines that stay when the body and the framing change. */
static bool head_line_kept(const char *ln)
{
    return strncasecmp(ln, "Content-Length:", 15) != 0 && strncasecmp(ln, "Connection:", 11) != 0 &&
           strncasecmp(ln, "Keep-Alive:", 11) != 0;
}

/* Send the held head with the new body (or the old one when fn keeps it),
 * and end there: the upstream was told to close, but need not (Chromium
 * does not), so the client is told that the connection closes, lest it
 * send another request on it. */
static void send_rewritten(struct proxy *p, size_t body_at, size_t len)
{
    size_t out_len = 0;
    char *out = p->req ? p->rw.fn(p->rw.ud, p->held.data + body_at, len, &out_len) : NULL;
    p->rw.fn = NULL;
    if (!p->req) {
        proxy_close(p);
        return;
    }
    struct osb_buf h;
    osb_buf_init(&h, SIZE_MAX);
    const char *head = p->held.data, *first = memchr(head, '\n', body_at);
    int rc = osb_buf_add(&h, head, (size_t)(first + 1 - head));
    for (const char *ln = first + 1; ln < head + body_at - 2;) {
        const char *eol = memchr(ln, '\n', (size_t)(head + body_at - ln));
        if (head_line_kept(ln))
            rc |= osb_buf_add(&h, ln, (size_t)(eol + 1 - ln));
        ln = eol + 1;
    }
    rc |= osb_buf_addf(&h, "Content-Length: %zu\r\nConnection: close\r\n\r\n", out ? out_len : len);
    rc |= osb_buf_add(&h, out ? out : p->held.data + body_at, out ? out_len : len);
    free(out);
    if (rc == 0)
        relay(p, h.data, h.len);
    osb_buf_free(&h);
    proxy_close(p);
}

/* Hold the answer's bytes while it may be the one to rewrite. */
static void hold(struct proxy *p, const char *data, size_t n)
{
    if (osb_buf_add(&p->held, data, n) < 0) {
        release(p);
        relay(p, data, n);
        return;
    }
    const char *h = p->held.data, *end = memmem(h, p->held.len, "\r\n\r\n", 4);
    if (!end)
        return; /* the head is not whole yet (the cap bounds it) */
    size_t body_at = (size_t)(end + 4 - h);
    long len = rewritable(p, h, body_at);
    if (len < 0)
        release(p);
    else if (p->held.len - body_at >= (size_t)len)
        send_rewritten(p, body_at, (size_t)len);
}

static void up_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct proxy *p = s->data;
    if (n < 0) {
        if (p->rw.fn)
            release(p); /* cut short: the client gets what came */
        proxy_close(p);
        return;
    }
    if (p->rw.fn)
        hold(p, buf->base, (size_t)n);
    else
        relay(p, buf->base, (size_t)n);
}

static void up_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    struct proxy *p = h->data;
    *buf = osb_http__slab(p->srv);
}

static void client_drained(struct proxy *p)
{
    if (p && !p->closing && p->connected)
        uv_read_start(&p->up.stream, up_alloc, up_read);
}

static void on_connect(uv_connect_t *cr, int status)
{
    struct proxy *p = cr->data;
    if (p->closing)
        return;
    if (status < 0) {
        proxy_close(p);
        return;
    }
    p->connected = true;
    struct osb_buf pend = p->pending;
    osb_buf_init(&p->pending, SIZE_MAX);
    up_send(p, pend.data, pend.len);
    osb_buf_free(&pend);
    uv_read_start(&p->up.stream, up_alloc, up_read);
}

/* ---- request side ---- */

static void body_chunk(struct osb_http_req *req, const char *data, size_t len, void *ud)
{
    struct proxy *p = ud;
    if (p->tap.on_request)
        p->tap.on_request(p->tap.ud, data, len);
    if (p->chunked) {
        char pre[24];
        int n = snprintf(pre, sizeof pre, "%zx\r\n", len);
        up_send(p, pre, (size_t)n);
        up_send(p, data, len);
        up_send(p, "\r\n", 2);
    } else {
        up_send(p, data, len);
    }
    if (p->up_queued + p->pending.len > OSB_WRITE_HIGH_WATER) {
        p->client_paused = true;
        osb_http_req_pause(req);
    }
}

static void body_end(struct osb_http_req *req, void *ud)
{
    struct proxy *p = ud;
    if (p->chunked)
        up_send(p, "0\r\n\r\n", 5);
    if (p->upgrade) {
        tap_end(p, false); /* the request is freed now */
        p->req = NULL;
        p->c = req->c;
        osb_http__take_over(req, &proxy_mode, p);
    }
}

static void client_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct proxy *p = ud;
    p->req = NULL;
    p->c = NULL;
    proxy_close(p);
}

static void client_drain(struct osb_http_req *req, void *ud)
{
    (void)req;
    client_drained(ud);
}

static bool hop_by_hop(const char *name)
{
    static const char *const hop[] = {"connection", "keep-alive",     "proxy-connection",
                                      "te",         "trailer",        "transfer-encoding",
                                      "upgrade",    "x-forwarded-for"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (strcasecmp(name, hop[i]) == 0)
            return true;
    return false;
}

static bool listed(const char *name, const char *const *list)
{
    for (; list && *list; list++)
        if (strcasecmp(name, *list) == 0)
            return true;
    return false;
}

static int build_head(struct proxy *p, struct osb_http_req *req, const char *target,
                      const char *const *extra, const char *const *drop)
{
    struct osb_buf *h = &p->pending;
    int rc = osb_buf_addf(h, "%s %s HTTP/1.1\r\n", req->method, target);
    const char *name, *value;
    for (size_t i = 0; osb_http_req_header_at(req, i, &name, &value); i++)
        if (!hop_by_hop(name) && !listed(name, drop))
            rc |= osb_buf_addf(h, "%s: %s\r\n", name, value);
    for (; extra && extra[0] && extra[1]; extra += 2)
        rc |= osb_buf_addf(h, "%s: %s\r\n", extra[0], extra[1]);
    if (p->chunked)
        rc |= osb_buf_adds(h, "Transfer-Encoding: chunked\r\n");
    if (p->upgrade)
        rc |= osb_buf_addf(h, "Connection: Upgrade\r\nUpgrade: %s\r\n",
                           osb_http_req_header(req, "upgrade"));
    else
        rc |= osb_buf_adds(h, "Connection: close\r\n");
    /* One X-Forwarded-For: the client's chain plus this hop's peer (a unix
     * socket peer has no address to add). */
    const char *xff = osb_http_req_header(req, "x-forwarded-for");
    const char *peer = osb_http_req_peer(req);
    bool has_peer = *peer && strcmp(peer, "unix") != 0 && strcmp(peer, "fd") != 0;
    if (xff && has_peer)
        rc |= osb_buf_addf(h, "X-Forwarded-For: %s, %s\r\n", xff, peer);
    else if (xff || has_peer)
        rc |= osb_buf_addf(h, "X-Forwarded-For: %s\r\n", xff ? xff : peer);
    rc |= osb_buf_adds(h, "\r\n");
    return rc;
}

static int start_connect(struct proxy *p, struct conn *c, const struct osb_http_upstream *up)
{
    uv_loop_t *loop = c->srv->loop;
    p->connect.data = p;
    if (up->unix_path) {
        uv_pipe_init(loop, &p->up.pipe, 0);
        p->up.handle.data = p;
        uv_pipe_connect(&p->connect, &p->up.pipe, up->unix_path, on_connect);
        return 0;
    }
    uv_tcp_init(loop, &p->up.tcp);
    p->up.handle.data = p;
    struct sockaddr_storage ss;
    int r = strchr(up->host, ':') ? uv_ip6_addr(up->host, up->port, (struct sockaddr_in6 *)&ss)
                                  : uv_ip4_addr(up->host, up->port, (struct sockaddr_in *)&ss);
    if (r == 0)
        r = uv_tcp_connect(&p->connect, &p->up.tcp, (struct sockaddr *)&ss, on_connect);
    return r;
}

void osb_http_proxy(struct osb_http_req *req, const struct osb_http_upstream *up,
                    const char *target, const char *const *extra_headers)
{
    struct conn *c = req->c;
    if (!c) {
        if (up->tap && up->tap->on_end)
            up->tap->on_end(up->tap->ud, true);
        if (up->rewrite && up->rewrite->free_ud)
            up->rewrite->free_ud(up->rewrite->ud);
        return;
    }
    struct proxy *p = osb_xcalloc(1, sizeof *p);
    if (up->tap)
        p->tap = *up->tap;
    p->srv = c->srv;
    p->c = c;
    p->req = req;
    osb_buf_init(&p->pending, SIZE_MAX);
    const char *te = osb_http_req_header(req, "transfer-encoding");
    p->chunked = te && strcasestr(te, "chunked");
    p->upgrade =
        c->parser.upgrade || (osb_http_req_header(req, "upgrade") &&
                              strcasestr(osb_http_req_header(req, "connection") ?: "", "upgrade"));
    if (up->rewrite) {
        p->rw = *up->rewrite; /* owned from here: up_closed frees ud */
        if (p->upgrade)
            p->rw.fn = NULL;
    }
    /* The head is capped too: a huge one is not an answer to rewrite. */
    osb_buf_init(&p->held, p->rw.max + OSB_MAX_HEAD_BYTES);
    /* The head goes into the unbounded pending buffer, so building it
     * fails only on a size_t wrap-around: answered as any failed proxy. The
     * connect is started first because proxy_close closes its handle. */
    if (start_connect(p, c, up) < 0 ||
        build_head(p, req, target, extra_headers, up->drop_headers) < 0) {
        proxy_close(p);
        return;
    }
    osb_http_req_on_body(req, body_chunk, body_end, p);
    osb_http_req_on_close(req, client_gone, p);
    osb_http_req_on_drain(req, client_drain, p);
    if (req->complete)
        body_end(req, p);
}

/* ---- raw mode hooks (after an upgrade) ---- */

static void proxy_on_data(struct conn *c, const char *data, size_t len)
{
    struct proxy *p = c->mode_ctx;
    if (!p)
        return;
    up_send(p, data, len);
    if (p->up_queued + p->pending.len > OSB_WRITE_HIGH_WATER) {
        p->client_paused = true;
        osb_http__conn_update_read(c);
    }
}

static void proxy_on_close(struct conn *c)
{
    struct proxy *p = c->mode_ctx;
    c->mode_ctx = NULL;
    if (!p)
        return;
    p->c = NULL;
    proxy_close(p);
}

/* Raw mode reads the client only while the upstream keeps up. */
static bool proxy_want_read(const struct conn *c)
{
    const struct proxy *p = c->mode_ctx;
    return !p || !p->client_paused;
}

static void proxy_on_drain(struct conn *c)
{
    client_drained(c->mode_ctx);
}

static const struct osb_http_mode proxy_mode = {
    .on_data = proxy_on_data,
    .on_drain = proxy_on_drain,
    .on_close = proxy_on_close,
    .want_read = proxy_want_read,
};
