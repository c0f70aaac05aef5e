/* Connection primitives shared by every connection mode: writing with
 * backpressure, reading into the server's slab, and closing, which is
 * never done on the spot from inside a caller (see osb_http__conn_doom).
 * What the bytes mean is the mode's business (struct osb_http_mode). */
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/xalloc.h"
#include "http/conn.h"
#include "http/request.h"

struct wreq {
    uv_write_t w;
    struct conn *c;
    size_t len;
    char data[];
};

uv_buf_t osb_http__slab(struct osb_http_server *srv)
{
    return uv_buf_init(srv->slab, sizeof srv->slab);
}

static void alloc_slab(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    struct conn *c = h->data;
    *buf = osb_http__slab(c->srv);
}

static void on_written(uv_write_t *w, int status)
{
    struct wreq *r = (struct wreq *)w;
    struct conn *c = r->c;
    size_t before = c->queued;
    c->queued -= r->len;
    free(r);
    if (status < 0) {
        osb_http__conn_close(c);
        return;
    }
    if (c->closing)
        return;
    if (c->queued == 0 && c->close_after_flush) {
        osb_http__conn_close(c);
        return;
    }
    if (before >= OSB_WRITE_HIGH_WATER / 2 && c->queued < OSB_WRITE_HIGH_WATER / 2 &&
        c->mode->on_drain)
        c->mode->on_drain(c);
}

static void reap_doomed(uv_prepare_t *h)
{
    struct osb_http_server *srv = h->data;
    struct conn *c = srv->conns;
    while (c && srv->ndoomed) {
        struct conn *next = c->next;
        if (c->doomed)
            osb_http__conn_close(c);
        c = next;
    }
    srv->ndoomed = 0;
    uv_prepare_stop(h);
}

/* Closing a connection frees its request, so a failure seen while a
 * handler is writing must not close it on the spot: the connection is
 * marked and closed by the server's prepare hook, outside any caller. */
void osb_http__conn_doom(struct conn *c)
{
    if (c->doomed || c->closing)
        return;
    c->doomed = true;
    if (c->srv->ndoomed++ == 0)
        uv_prepare_start(&c->srv->reaper, reap_doomed);
}

void osb_http__conn_writev(struct conn *c, uv_buf_t *bufs, unsigned n)
{
    if (c->closing || c->doomed)
        return;
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += bufs[i].len;
    if (total == 0)
        return;
    size_t skip = 0;
    if (c->queued == 0) {
        int w = uv_try_write(&c->h.stream, bufs, n);
        if (w > 0)
            skip = (size_t)w;
        if (skip == total)
            return;
    }
    struct wreq *r = osb_xmalloc(sizeof *r + total - skip);
    r->c = c;
    r->len = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t l = bufs[i].len, drop = skip < l ? skip : l;
        skip -= drop;
        memcpy(r->data + r->len, bufs[i].base + drop, l - drop);
        r->len += l - drop;
    }
    uv_buf_t b = uv_buf_init(r->data, (unsigned)r->len);
    c->queued += r->len;
    if (uv_write(&r->w, &c->h.stream, &b, 1, on_written) < 0) {
        c->queued -= r->len;
        free(r);
        osb_http__conn_doom(c);
    }
}

void osb_http__conn_write(struct conn *c, const void *data, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    osb_http__conn_writev(c, &b, 1);
}

static void conn_freed(uv_handle_t *h)
{
    struct conn *c = h->data;
    osb_buf_free(&c->in);
    free(c);
}

void osb_http__conn_discard(struct conn *c)
{
    uv_close(&c->h.handle, conn_freed);
}

void osb_http__conn_open(struct osb_http_server *srv, struct conn *c,
                         const struct osb_http_mode *mode)
{
    c->mode = mode;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
}

void osb_http__conn_set_mode(struct conn *c, const struct osb_http_mode *mode, void *ctx)
{
    c->mode = mode;
    c->mode_ctx = ctx;
}

void osb_http__conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    struct osb_http_server *srv = c->srv;
    if (c->doomed)
        srv->ndoomed--;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    struct osb_http_req *req = c->req;
    c->req = NULL;
    if (req) {
        req->c = NULL;
        if (!req->ended && req->on_close)
            req->on_close(req, req->close_ud);
        osb_http__req_free(req);
    }
    if (c->mode->on_close)
        c->mode->on_close(c);
    uv_close(&c->h.handle, conn_freed);
}

/* Never closes on the spot (the caller may be deep inside a parser or a
 * handler): with nothing queued the reaper closes it before the next poll. */
void osb_http__conn_close_after_flush(struct conn *c)
{
    c->close_after_flush = true;
    if (c->queued == 0)
        osb_http__conn_doom(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (n < 0) {
        c->eof = true;
        if (n != UV_EOF || !c->mode->on_eof) {
            osb_http__conn_close(c);
            return;
        }
        uv_read_stop(s);
        c->reading = false;
        c->mode->on_eof(c);
        return;
    }
    if (n > 0)
        c->mode->on_data(c, buf->base, (size_t)n);
}

void osb_http__conn_update_read(struct conn *c)
{
    if (c->closing || c->eof)
        return;
    bool want = !c->mode->want_read || c->mode->want_read(c);
    if (want && !c->reading)
        uv_read_start(&c->h.stream, alloc_slab, on_read);
    else if (!want && c->reading)
        uv_read_stop(&c->h.stream);
    c->reading = want;
}
