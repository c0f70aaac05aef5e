/* Lingering close (as nginx and Apache do it): an answer sent before the
 * request body was read (401 at the end of the headers, 413, an upload
 * refused halfway) is followed by a shutdown of the write side, then the
 * client's remaining bytes are dropped until it closes, OSB_LINGER_BYTES
 * have come, or OSB_LINGER_MS have passed. Nothing is buffered. */
#include "common/limits.h"
#include "http/conn.h"

static void linger_on_data(struct conn *c, const char *data, size_t len)
{
    (void)data;
    if (len >= c->linger_left) {
        osb_http__conn_close(c);
        return;
    }
    c->linger_left -= len;
}

static void linger_on_close(struct conn *c)
{
    if (--c->srv->nlinger == 0)
        uv_timer_stop(&c->srv->linger_timer);
}

static const struct osb_http_mode linger_mode = {
    .on_data = linger_on_data,
    .on_close = linger_on_close,
};

static void linger_timer(uv_timer_t *t)
{
    struct osb_http_server *srv = t->data;
    uint64_t now = uv_now(srv->loop);
    for (struct conn *c = srv->conns, *next; c && srv->nlinger; c = next) {
        next = c->next;
        if (c->mode == &linger_mode && c->linger_until <= now)
            osb_http__conn_close(c);
    }
}

static void on_shutdown(uv_shutdown_t *s, int status)
{
    struct conn *c = s->data;
    if (status < 0 && !c->closing)
        osb_http__conn_close(c);
}

void osb_http__linger(struct conn *c)
{
    struct osb_http_server *srv = c->srv;
    osb_http__conn_set_mode(c, &linger_mode, NULL);
    osb_buf_reset(&c->in);
    c->linger_left = OSB_LINGER_BYTES;
    c->linger_until = uv_now(srv->loop) + OSB_LINGER_MS;
    if (srv->nlinger++ == 0)
        uv_timer_start(&srv->linger_timer, linger_timer, OSB_LINGER_MS / 4, OSB_LINGER_MS / 4);
    /* libuv shuts down once every queued write is out. */
    c->shut.data = c;
    if (uv_shutdown(&c->shut, &c->h.stream, on_shutdown) < 0) {
        osb_http__conn_close_after_flush(c);
        return;
    }
    osb_http__conn_update_read(c);
}
