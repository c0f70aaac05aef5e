/* A one-shot HTTP request to execd (execd_call.h). */
#include "server/execd_call.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct call {
    uv_pipe_t pipe;
    uv_timer_t timer;
    uv_connect_t conn;
    uv_write_t w;
    char *req;
    char resp[16];
    size_t got;
    int handles;
    bool done;
    osb_execd_call_cb cb;
    void *ud;
};

static void closed(uv_handle_t *h)
{
    struct call *c = h->data;
    if (--c->handles > 0)
        return;
    free(c->req);
    free(c);
}

static void finish(struct call *c, int status, const char *why)
{
    if (c->done)
        return;
    c->done = true;
    uv_close((uv_handle_t *)&c->pipe, closed);
    uv_close((uv_handle_t *)&c->timer, closed);
    c->cb(c->ud, status, why);
}

static void on_timeout(uv_timer_t *t)
{
    finish(t->data, -1, "execd did not answer in time");
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    struct call *c = h->data;
    *buf = uv_buf_init(c->resp + c->got, (unsigned)(sizeof c->resp - 1 - c->got));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    struct call *c = s->data;
    if (n < 0) {
        finish(c, -1, "execd closed the connection without an answer");
        return;
    }
    c->got += (size_t)n;
    if (c->got < 12)
        return;
    c->resp[c->got] = '\0';
    int status = 0;
    if (sscanf(c->resp, "HTTP/1.%*c %3d", &status) != 1)
        finish(c, -1, "execd answered something that is not HTTP");
    else
        finish(c, status, NULL);
}

static void on_written(uv_write_t *w, int status)
{
    if (status < 0)
        finish(w->data, -1, "write to execd failed");
}

static void on_connect(uv_connect_t *conn, int status)
{
    struct call *c = conn->data;
    if (c->done)
        return;
    if (status < 0) {
        finish(c, -1, status == UV_ENOENT ? "execd's socket is gone" : "execd refused");
        return;
    }
    uv_buf_t b = uv_buf_init(c->req, (unsigned)strlen(c->req));
    c->w.data = c;
    if (uv_write(&c->w, (uv_stream_t *)&c->pipe, &b, 1, on_written) < 0 ||
        uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0)
        finish(c, -1, "write to execd failed");
}

void osb_execd_call(uv_loop_t *loop, const char *sock_path, const char *token, const char *method,
                    const char *path, const char *body, int64_t timeout_ms, osb_execd_call_cb cb,
                    void *ud)
{
    struct call *c = osb_xcalloc(1, sizeof *c);
    c->cb = cb;
    c->ud = ud;
    c->req = osb_xasprintf("%s %s HTTP/1.1\r\nHost: execd\r\nX-EXECD-ACCESS-TOKEN: %s\r\n"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                           "Connection: close\r\n\r\n%s",
                           method, path, token, strlen(body), body);
    uv_pipe_init(loop, &c->pipe, 0);
    uv_timer_init(loop, &c->timer);
    c->pipe.data = c->timer.data = c->conn.data = c;
    c->handles = 2;
    uv_timer_start(&c->timer, on_timeout, (uint64_t)timeout_ms, 0);
    uv_pipe_connect(&c->conn, &c->pipe, sock_path, on_connect);
}
