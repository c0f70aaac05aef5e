#include "server/ping.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/xalloc.h"

struct attempt {
    uv_pipe_t pipe;
    uv_connect_t conn;
    uv_write_t w;
    struct osb_ping *p;
    char req[256];
    char resp[16];
    size_t got;
    bool ended;
};

#define ATTEMPT_OF(ptr, member) \
    ((struct attempt *)(void *)((char *)(ptr)-offsetof(struct attempt, member)))

struct osb_ping {
    uv_loop_t *loop;
    uv_timer_t timer;
    char *sock_path, *token;
    int64_t deadline;
    osb_ping_cb cb;
    void *ud;
    struct attempt *a; /* the attempt in flight, if any */
    int handles;       /* open uv handles (timer + attempt pipe) */
    bool done;         /* result delivered or cancelled */
    char why[128];
};

static void try_once(struct osb_ping *p);

static void retry(uv_timer_t *t)
{
    try_once(t->data);
}

static void maybe_free(struct osb_ping *p)
{
    if (p->handles > 0 || !p->done)
        return;
    free(p->sock_path);
    free(p->token);
    free(p);
}

static void handle_closed(uv_handle_t *h)
{
    struct osb_ping *p = h->data;
    if (h != (uv_handle_t *)&p->timer)
        free(ATTEMPT_OF(h, pipe));
    p->handles--;
    maybe_free(p);
}

static void finish(struct osb_ping *p, int ok)
{
    if (p->done)
        return;
    p->done = true;
    uv_close((uv_handle_t *)&p->timer, handle_closed);
    p->cb(p->ud, ok, p->why);
}

static void attempt_end(struct attempt *a, int ok, const char *why)
{
    struct osb_ping *p = a->p;
    if (a->ended)
        return;
    a->ended = true;
    if (p->a == a)
        p->a = NULL;
    if (!uv_is_closing((uv_handle_t *)&a->pipe))
        uv_close((uv_handle_t *)&a->pipe, handle_closed);
    if (p->done)
        return;
    if (ok == 0) {
        finish(p, 0);
        return;
    }
    snprintf(p->why, sizeof p->why, "%s", why);
    if (osb_mono_ms() >= p->deadline) {
        finish(p, -1);
        return;
    }
    uv_timer_start(&p->timer, retry, 1, 0);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    struct attempt *a = ATTEMPT_OF(h, pipe);
    *buf = uv_buf_init(a->resp + a->got, (unsigned)(sizeof a->resp - a->got));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    struct attempt *a = ATTEMPT_OF(s, pipe);
    if (n < 0) {
        attempt_end(a, -1, "execd closed the connection without an answer");
        return;
    }
    a->got += (size_t)n;
    if (a->got < 12 && a->got < sizeof a->resp)
        return;
    uv_read_stop(s);
    if (memcmp(a->resp, "HTTP/1.1 200", 12) == 0 || memcmp(a->resp, "HTTP/1.0 200", 12) == 0)
        attempt_end(a, 0, NULL);
    else
        attempt_end(a, -1, "execd answered /ping with an error");
}

static void on_written(uv_write_t *w, int status)
{
    struct attempt *a = ATTEMPT_OF(w, w);
    if (status < 0)
        attempt_end(a, -1, "write to execd failed");
}

static void on_connect(uv_connect_t *c, int status)
{
    struct attempt *a = ATTEMPT_OF(c, conn);
    if (a->p->done || status < 0) {
        attempt_end(a, -1,
                    status == UV_ENOENT ? "execd socket not there yet"
                                        : "execd socket refused the connection");
        return;
    }
    uv_buf_t b = uv_buf_init(a->req, (unsigned)strlen(a->req));
    if (uv_write(&a->w, (uv_stream_t *)&a->pipe, &b, 1, on_written) < 0 ||
        uv_read_start((uv_stream_t *)&a->pipe, on_alloc, on_read) < 0)
        attempt_end(a, -1, "write to execd failed");
}

static void try_once(struct osb_ping *p)
{
    if (p->done)
        return;
    struct attempt *a = osb_xcalloc(1, sizeof *a);
    a->p = p;
    snprintf(a->req, sizeof a->req,
             "GET /ping HTTP/1.1\r\nHost: execd\r\nX-EXECD-ACCESS-TOKEN: %s\r\n"
             "Connection: close\r\n\r\n",
             p->token);
    uv_pipe_init(p->loop, &a->pipe, 0);
    a->pipe.data = p;
    p->handles++;
    p->a = a;
    uv_pipe_connect(&a->conn, &a->pipe, p->sock_path, on_connect);
}

struct osb_ping *osb_ping_start(uv_loop_t *loop, const char *sock_path, const char *token,
                                int64_t timeout_ms, osb_ping_cb cb, void *ud)
{
    struct osb_ping *p = osb_xcalloc(1, sizeof *p);
    p->loop = loop;
    p->sock_path = osb_xstrdup(sock_path);
    p->token = osb_xstrdup(token ? token : "");
    p->deadline = osb_mono_ms() + timeout_ms;
    p->cb = cb;
    p->ud = ud;
    snprintf(p->why, sizeof p->why, "no answer yet");
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    p->handles++;
    try_once(p);
    return p;
}

void osb_ping_cancel(struct osb_ping *p)
{
    if (!p || p->done)
        return;
    p->done = true;
    uv_close((uv_handle_t *)&p->timer, handle_closed);
    if (p->a) {
        struct attempt *a = p->a;
        p->a = NULL;
        if (!uv_is_closing((uv_handle_t *)&a->pipe))
            uv_close((uv_handle_t *)&a->pipe, handle_closed);
    }
}
