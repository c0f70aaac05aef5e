/* HTTP server: requests over a socketpair adopted by the server; a client
 * thread writes raw bytes and reads the answer to EOF. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/limits.h"
#include "http/http.h"
#include "tap.h"

static uv_loop_t *loop;
static struct osb_http_server *srv;

/* ---- handlers ---- */

static void h_hello(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond(req, 200, "text/plain", "hi", 2);
}

static void h_echo(struct osb_http_req *req, void *ud)
{
    (void)ud;
    size_t n;
    const char *b = osb_http_req_body(req, &n);
    osb_http_respond(req, 200, "text/plain", b ? b : "", n);
}

struct stream_ctx {
    size_t bytes;
    int chunks;
    uv_timer_t t;
    struct osb_http_req *req;
};

static void resume_cb(uv_timer_t *t)
{
    struct stream_ctx *s = t->data;
    osb_http_req_resume(s->req);
}

static void s_body(struct osb_http_req *req, const char *d, size_t n, void *ud)
{
    (void)d;
    struct stream_ctx *s = ud;
    s->bytes += n;
    if (s->chunks++ == 0) { /* exercise backpressure once */
        osb_http_req_pause(req);
        uv_timer_start(&s->t, resume_cb, 5, 0);
    }
}

static void s_end(struct osb_http_req *req, void *ud)
{
    struct stream_ctx *s = ud;
    char out[64];
    int n = snprintf(out, sizeof out, "got %zu", s->bytes);
    osb_http_respond(req, 200, "text/plain", out, (size_t)n);
}

static struct stream_ctx sctx;

static int stream_calls;

static void h_stream(struct osb_http_req *req, void *ud)
{
    (void)ud;
    stream_calls++;
    sctx.bytes = 0;
    sctx.chunks = 0;
    sctx.req = req;
    osb_http_req_on_body(req, s_body, s_end, &sctx);
}

static void h_sse(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_sse_start(req);
    osb_http_write(req, "{\"a\":1}\n\n", 9);
    osb_http_write(req, "{\"a\":2}\n\n", 9);
    osb_http_end(req);
}

static void h_params(struct osb_http_req *req, void *ud)
{
    (void)ud;
    char out[256];
    const char *const *v;
    size_t n = osb_http_req_query_all(req, "a", &v);
    int len = snprintf(out, sizeof out, "%s|%s|%zu|%s|%s", osb_http_req_param(req, "id"),
                       osb_http_req_param(req, "rest"), n, n ? v[0] : "", n > 1 ? v[1] : "");
    osb_http_respond(req, 200, "text/plain", out, (size_t)len);
}

static void h_abort(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_start(req, 200, "text/plain", 10);
    osb_http_write(req, "abc", 3);
    osb_http_abort(req);
    osb_http_write(req, "late", 4); /* a no-op after abort */
}

/* Response headers past the head cap (64 KiB): 2 KiB each, 40 of them. */
static void h_bigheaders(struct osb_http_req *req, void *ud)
{
    (void)ud;
    char v[2048];
    memset(v, 'v', sizeof v - 1);
    v[sizeof v - 1] = '\0';
    for (int i = 0; i < 40; i++)
        osb_http_add_header(req, "X-Big", v);
    osb_http_respond(req, 200, "text/plain", "whole", 5);
}

static bool auth(struct osb_http_req *req, void *ud)
{
    (void)ud;
    const char *t = osb_http_req_header(req, "x-token");
    if (t && strcmp(t, "s3cret") == 0)
        return true;
    osb_http_respond_error(req, 401, "UNAUTHORIZED", "no token");
    return false;
}

static const struct osb_http_route routes[] = {
    {"GET", "/hello", h_hello, OSB_ROUTE_PUBLIC, NULL},
    {"POST", "/echo", h_echo, OSB_ROUTE_PUBLIC, NULL},
    {"POST", "/stream", h_stream, OSB_ROUTE_PUBLIC | OSB_ROUTE_STREAM_BODY, NULL},
    {"GET", "/sse", h_sse, OSB_ROUTE_PUBLIC, NULL},
    {"GET", "/p/:id/*rest", h_params, OSB_ROUTE_PUBLIC, NULL},
    {"GET", "/secret", h_hello, 0, NULL},
    {"POST", "/secret-echo", h_echo, 0, NULL},
    {"POST", "/secret-stream", h_stream, OSB_ROUTE_STREAM_BODY, NULL},
    {"GET", "/abort", h_abort, OSB_ROUTE_PUBLIC, NULL},
    {"GET", "/bigheaders", h_bigheaders, OSB_ROUTE_PUBLIC, NULL},
};

/* ---- client side ---- */

struct client {
    int fd;
    const char *req;
    size_t req_len;
    bool half_close;
    struct osb_buf resp;
    uv_async_t done;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    size_t off = 0;
    while (off < c->req_len) {
        ssize_t n = write(c->fd, c->req + off, c->req_len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    if (c->half_close)
        shutdown(c->fd, SHUT_WR);
    char buf[65536];
    ssize_t n;
    while ((n = read(c->fd, buf, sizeof buf)) > 0)
        MUST(osb_buf_add(&c->resp, buf, (size_t)n));
    /* The server may be lingering on a connection it answered early. */
    shutdown(c->fd, SHUT_WR);
    uv_async_send(&c->done);
    return NULL;
}

static void on_done(uv_async_t *a)
{
    uv_close((uv_handle_t *)a, NULL);
}

/* Send raw request bytes, return everything the server answered until it
 * closed the connection (caller frees). */
static bool half_close_next;

static char *exchange(const char *req, size_t len)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    struct osb_err err = {0};
    MUST(osb_http_server_adopt_fd(srv, sv[0], &err));
    struct client c = {.fd = sv[1], .req = req, .req_len = len, .half_close = half_close_next};
    half_close_next = false;
    osb_buf_init(&c.resp, 64 << 20);
    uv_async_init(loop, &c.done, on_done);
    pthread_t th;
    pthread_create(&th, NULL, client_main, &c);
    uv_run(loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    close(sv[1]);
    char *r = osb_buf_steal(&c.resp, NULL);
    return r ? r : strdup("");
}

static char *xs(const char *req)
{
    return exchange(req, strlen(req));
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_basic(void)
{
    _cleanup_free_ char *r = xs("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    OK(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0, "GET answers 200");
    OK(strstr(r, "Content-Length: 2\r\n") && strstr(r, "\r\n\r\nhi"), "body with length");
    OK(strstr(r, "Connection: close\r\n"), "close honoured");
}

static void test_pipelining(void)
{
    _cleanup_free_ char *r = xs("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"
                                "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    IS_INT(count(r, "HTTP/1.1 "), 3, "three pipelined answers");
    const char *a = strstr(r, "\r\n\r\nhi"), *b = strstr(r, "\r\n\r\nabcde"),
               *c = strstr(r, "404 page not found");
    OK(a && b && c && a < b && b < c, "answers in request order");
}

static void test_chunked_request(void)
{
    _cleanup_free_ char *r = xs("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                "Connection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    OK(strstr(r, "\r\n\r\nabcde"), "chunked body decoded");
}

static void test_streaming_body(void)
{
    size_t n = 3 << 20;
    char *body = malloc(n);
    memset(body, 'x', n);
    struct osb_buf req;
    osb_buf_init(&req, SIZE_MAX);
    MUST(osb_buf_addf(&req,
                      "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      n));
    MUST(osb_buf_add(&req, body, n));
    free(body);
    _cleanup_free_ char *r = exchange(req.data, req.len);
    osb_buf_free(&req);
    OK(strstr(r, "got 3145728"), "streamed 3 MiB body with pause/resume");
}

static void test_sse(void)
{
    _cleanup_free_ char *r = xs("GET /sse HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    OK(strstr(r, "Content-Type: text/event-stream\r\n"), "sse content type");
    OK(strstr(r, "Transfer-Encoding: chunked\r\n"), "sse chunked");
    OK(strstr(r, "X-Accel-Buffering: no\r\n"), "sse no buffering");
    OK(strstr(r, "9\r\n{\"a\":1}\n\n\r\n9\r\n{\"a\":2}\n\n\r\n0\r\n\r\n"), "sse chunk framing");
}

static void test_params(void)
{
    _cleanup_free_ char *r =
        xs("GET /p/a%20b/x/y%2Fz?a=1&a=two+words&b HTTP/1.1\r\nConnection: close\r\n\r\n");
    OK(strstr(r, "\r\n\r\na b|x/y%2Fz|2|1|two words"), "captures and query");
}

static void test_errors(void)
{
    _cleanup_free_ char *r1 = xs("BLAH\r\n\r\n");
    OK(strstr(r1, "HTTP/1.1 400 ") && strstr(r1, "\"code\":\"BAD_REQUEST\""), "garbage -> 400");
    struct osb_buf big;
    osb_buf_init(&big, SIZE_MAX);
    MUST(osb_buf_adds(&big, "GET /hello HTTP/1.1\r\nX-Big: "));
    for (int i = 0; i < 70000; i++)
        MUST(osb_buf_adds(&big, "a"));
    MUST(osb_buf_adds(&big, "\r\n\r\n"));
    _cleanup_free_ char *r2 = exchange(big.data, big.len);
    osb_buf_free(&big);
    OK(strstr(r2, "HTTP/1.1 431 ") && strstr(r2, "\"message\""), "huge header -> 431");
    char head[128];
    snprintf(head, sizeof head, "POST /echo HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
             OSB_MAX_JSON_BODY + 10);
    struct osb_buf b;
    osb_buf_init(&b, SIZE_MAX);
    MUST(osb_buf_adds(&b, head));
    char *pad = calloc(1, OSB_MAX_JSON_BODY + 10);
    MUST(osb_buf_add(&b, pad, OSB_MAX_JSON_BODY + 10));
    free(pad);
    _cleanup_free_ char *r3 = exchange(b.data, b.len);
    osb_buf_free(&b);
    OK(strstr(r3, "HTTP/1.1 413 "), "oversized buffered body -> 413");
    _cleanup_free_ char *r4 = xs("GET /secret HTTP/1.1\r\nConnection: close\r\n\r\n");
    OK(strstr(r4, "HTTP/1.1 401 "), "auth hook rejects");
    _cleanup_free_ char *r5 =
        xs("GET /secret HTTP/1.1\r\nX-Token: s3cret\r\nConnection: close\r\n\r\n");
    OK(strstr(r5, "HTTP/1.1 200 "), "auth hook admits");
    half_close_next = true;
    _cleanup_free_ char *r6 = xs("GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hel");
    IS_INT(count(r6, "HTTP/1.1 200"), 1, "truncated second request: first still answered");
}

/* A request refused by the auth hook is answered at the end of its headers:
 * no 100 Continue, Connection: close, its body never reaches a buffer or a
 * handler, and nothing pipelined after it runs. */
static void test_auth_early(void)
{
    _cleanup_free_ char *r1 =
        xs("POST /secret-echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000000\r\n"
           "Expect: 100-continue\r\n\r\n");
    OK(strncmp(r1, "HTTP/1.1 401 ", 13) == 0, "huge body, no token: 401 before the body");
    OK(!strstr(r1, "100 Continue"), "no 100 Continue for an unauthenticated request");
    OK(strstr(r1, "Connection: close\r\n") && strstr(r1, "\"code\":\"UNAUTHORIZED\""),
       "401 says Connection: close and carries the hook's body");
    _cleanup_free_ char *r2 = xs("POST /secret-echo HTTP/1.1\r\nHost: x\r\nX-Token: s3cret\r\n"
                                 "Content-Length: 3\r\nExpect: 100-continue\r\n"
                                 "Connection: close\r\n\r\nabc");
    OK(strncmp(r2, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ", 37) == 0 &&
           strstr(r2, "\r\n\r\nabc"),
       "with the token: 100 Continue, then the buffered body");
    _cleanup_free_ char *r3 = xs("GET /secret HTTP/1.1\r\nHost: x\r\n\r\n"
                                 "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    IS_INT(count(r3, "HTTP/1.1 "), 1, "a request pipelined after a 401 is not processed");

    size_t n = 8 << 20;
    struct osb_buf req;
    osb_buf_init(&req, SIZE_MAX);
    MUST(osb_buf_addf(&req,
                      "POST /secret-stream HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", n));
    char *body = calloc(1, n);
    MUST(osb_buf_add(&req, body, n));
    free(body);
    stream_calls = 0;
    _cleanup_free_ char *r4 = exchange(req.data, req.len);
    osb_buf_free(&req);
    OK(strncmp(r4, "HTTP/1.1 401 ", 13) == 0,
       "streaming route, no token: the sender still gets 401");
    IS_INT(stream_calls, 0, "the streaming handler never ran");
}

/* Control bytes in the decoded path or query: 400 with the server's code,
 * before the handler; ordinary escapes still pass. */
static void test_control_bytes(void)
{
    static const char *const bad[] = {
        "/p/a%00b/x",    "/p/ab/x%0a",     "/p/a%1fb/x",   "/p/a%7Fb/x", "/p/ab/x?a=1%00",
        "/p/ab/x?a=%0d", "/p/ab/x?a%00=1", "/hello?x=%7f", "/nope%00",
    };
    for (size_t i = 0; i < OSB_ARRAY_LEN(bad); i++) {
        char q[256];
        snprintf(q, sizeof q, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", bad[i]);
        _cleanup_free_ char *r = xs(q);
        char name[128];
        snprintf(name, sizeof name, "%s -> 400 TEST_INVALID", bad[i]);
        OK(strncmp(r, "HTTP/1.1 400 ", 13) == 0 && strstr(r, "\"code\":\"TEST_INVALID\"") &&
               strstr(r, "control byte 0x"),
           name);
    }
    _cleanup_free_ char *r1 = xs("GET /secret?a=%00 HTTP/1.1\r\nHost: x\r\n\r\n");
    OK(strncmp(r1, "HTTP/1.1 401 ", 13) == 0, "auth is checked first");
    _cleanup_free_ char *r2 =
        xs("GET /p/a%09b/c?a=%E2%82%AC HTTP/1.1\r\nConnection: close\r\n\r\n");
    OK(strstr(r2, "HTTP/1.1 400 "), "a tab is a control byte too");
    _cleanup_free_ char *r3 =
        xs("GET /p/a%20b/c?a=%E2%82%AC HTTP/1.1\r\nConnection: close\r\n\r\n");
    OK(strstr(r3, "HTTP/1.1 200 ") && strstr(r3, "a b|c|1|\xe2\x82\xac"),
       "spaces and UTF-8 are not control bytes");
}

static void test_abort(void)
{
    /* Keep-alive request: only the abort can end this exchange. */
    _cleanup_free_ char *r = xs("GET /abort HTTP/1.1\r\nHost: x\r\n\r\n");
    OK(strstr(r, "Content-Length: 10\r\n"), "aborted response started");
    OK(strstr(r, "\r\n\r\nabc") && !strstr(r, "late"), "abort closes after the bytes sent");
}

static void test_head(void)
{
    _cleanup_free_ char *r = xs("HEAD /hello HTTP/1.1\r\nConnection: close\r\n\r\n");
    OK(strstr(r, "Content-Length: 2\r\n") && !strstr(r, "\r\n\r\nhi"), "HEAD has no body");
}

static void test_head_overflow(void)
{
    /* Keep-alive request: only dropping the connection ends it. */
    _cleanup_free_ char *r = xs("GET /bigheaders HTTP/1.1\r\nHost: x\r\n\r\n");
    IS_INT(strlen(r), 0, "headers past the cap: nothing is sent, not a cut head");
    _cleanup_free_ char *r2 = xs("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    OK(strncmp(r2, "HTTP/1.1 200 OK\r\n", 17) == 0, "the server answers the next connection");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    loop = uv_default_loop();
    srv = osb_http_server_new(loop);
    osb_http_server_add_routes(srv, routes, OSB_ARRAY_LEN(routes));
    osb_http_server_set_auth(srv, auth, NULL);
    osb_http_server_set_invalid_code(srv, "TEST_INVALID");
    uv_timer_init(loop, &sctx.t);
    sctx.t.data = &sctx;
    uv_unref((uv_handle_t *)&sctx.t);
    test_basic();
    test_pipelining();
    test_chunked_request();
    test_streaming_body();
    test_sse();
    test_params();
    test_errors();
    test_head();
    test_abort();
    test_auth_early();
    test_control_bytes();
    test_head_overflow();
    return tap_done();
}
