#include "execd/cmd_out.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/cleanup.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/lines.h"

/* One read; a pipe holds 64 KiB by default, and a bounded read keeps the
 * encoded batch (up to ~60x for a chunk of empty lines) reasonable. */
#define READ_CHUNK (64 * 1024)
/* What finish() still takes from a pipe that has not reached EOF: a full
 * pipe buffer and then some, but not a grandchild's endless stream. */
#define FINISH_BUDGET (4 * 1024 * 1024)
/* Encoded batches above this are freed after sending instead of kept. */
#define OBUF_KEEP (4 * 1024 * 1024)
#define MAX_SRC 2

/* The constant parts around the text: '{"type":"stdout","text":"' and
 * '","timestamp":1700000000000}\n\n', built once per chunk so a line costs
 * two small copies plus its escaping. */
struct frame {
    char pre[48], post[48];
    size_t npre, npost;
};

struct src {
    uv_pipe_t h;
    struct osb_cmd_out *o;
    const char *type;
    struct osb_lines lines;
    bool open, eof, reading;
};

struct osb_cmd_out {
    struct src src[MAX_SRC];
    int nsrc;
    struct osb_sse *sse;
    char *rbuf;
    char *obuf; /* encoded events waiting for one write */
    size_t olen, ocap;
    struct frame frame; /* event type and timestamp of the chunk being encoded */
    bool paused;        /* socket queue above the high-water mark */
    bool finishing, grace_over;
    size_t budget;
    void (*done)(void *ud);
    void *done_ud;
    uv_loop_t *loop;
    uv_timer_t timer;
    int handles; /* open libuv handles; freed when 0 after free() */
    bool freed;
};

/* ---- event encoding (Go encoding/json with HTML escaping) ---- */

/* 1: must be escaped (ASCII); 2: non-ASCII, needs UTF-8 validation. */
static const uint8_t esc_class[256] = {
    [0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1,          ['<'] = 1,
    ['>'] = 1,           ['&'] = 1, [0x80 ... 0xff] = 2,
};

/* Length of a valid UTF-8 sequence at p (n bytes available), 0 if invalid;
 * the same rules as Go's utf8.DecodeRune (no overlongs, no surrogates). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t k = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (!k || n < k)
        return 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

static char *put_u(char *o, unsigned v)
{
    static const char hex[] = "0123456789abcdef";
    *o++ = '\\';
    *o++ = 'u';
    for (int s = 12; s >= 0; s -= 4)
        *o++ = hex[(v >> s) & 15];
    return o;
}

static char *put_ascii_escape(char *o, unsigned char c)
{
    switch (c) {
    case '"':
        *o++ = '\\';
        *o++ = '"';
        return o;
    case '\\':
        *o++ = '\\';
        *o++ = '\\';
        return o;
    case '\n':
        *o++ = '\\';
        *o++ = 'n';
        return o;
    case '\r':
        *o++ = '\\';
        *o++ = 'r';
        return o;
    case '\t':
        *o++ = '\\';
        *o++ = 't';
        return o;
    default: return put_u(o, c);
    }
}

/* A non-ASCII sequence at p: copied if valid (U+2028/2029 escaped like Go),
 * else one byte becomes \ufffd. Returns the input bytes consumed. */
static size_t put_utf8(char **out, const unsigned char *p, size_t n)
{
    size_t k = utf8_len(p, n);
    if (!k) {
        *out = put_u(*out, 0xFFFD);
        return 1;
    }
    if (k == 3 && p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
        *out = put_u(*out, p[2] == 0xA8 ? 0x2028 : 0x2029);
        return 3;
    }
    memcpy(*out, p, k);
    *out += k;
    return k;
}

static char *put_escaped(char *o, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && !esc_class[p[run]])
            run++;
        memcpy(o, p + i, run - i);
        o += run - i;
        i = run;
        if (i >= n)
            break;
        if (esc_class[p[i]] == 1)
            o = put_ascii_escape(o, p[i++]);
        else
            i += put_utf8(&o, p + i, n - i);
    }
    return o;
}

size_t osb_cmd_out_event_max(size_t len)
{
    return 64 + 6 * len;
}

static void frame_init(struct frame *f, const char *type, long long timestamp)
{
    f->npre = (size_t)snprintf(f->pre, sizeof f->pre, "{\"type\":\"%s\",\"text\":\"", type);
    f->npost = (size_t)snprintf(f->post, sizeof f->post, "\",\"timestamp\":%lld}\n\n", timestamp);
}

static size_t frame_event(char *buf, const struct frame *f, const char *line, size_t len)
{
    char *o = buf;
    memcpy(o, f->pre, f->npre);
    o += f->npre;
    if (len) {
        o = put_escaped(o, line, len);
    } else {
        *o++ = '\\'; /* an empty line is sent as "\n" */
        *o++ = 'n';
    }
    memcpy(o, f->post, f->npost);
    return (size_t)(o + f->npost - buf);
}

size_t osb_cmd_out_event(char *buf, const char *type, const char *line, size_t len,
                         long long timestamp)
{
    struct frame f;
    frame_init(&f, type, timestamp);
    return frame_event(buf, &f, line, len);
}

/* ---- batching and backpressure ---- */

static void reserve(struct osb_cmd_out *o, size_t more)
{
    if (o->olen + more <= o->ocap)
        return;
    size_t cap = o->ocap ? o->ocap : 64 * 1024;
    while (cap < o->olen + more)
        cap *= 2;
    o->obuf = osb_xrealloc(o->obuf, cap);
    o->ocap = cap;
}

static void on_line(void *ud, const char *line, size_t len)
{
    struct osb_cmd_out *o = ud;
    reserve(o, osb_cmd_out_event_max(len));
    o->olen += frame_event(o->obuf + o->olen, &o->frame, line, len);
}

static void stop_reading(struct osb_cmd_out *o)
{
    for (int i = 0; i < o->nsrc; i++) {
        if (o->src[i].reading)
            uv_read_stop((uv_stream_t *)&o->src[i].h);
        o->src[i].reading = false;
    }
}

static void start_reading(struct osb_cmd_out *o);
static void check_finish(struct osb_cmd_out *o);

static void on_drain(void *ud)
{
    struct osb_cmd_out *o = ud;
    if (!o->paused)
        return;
    o->paused = false;
    osb_sse_on_drain(o->sse, NULL, NULL);
    if (o->finishing && o->grace_over)
        check_finish(o);
    else
        start_reading(o);
}

/* Hand the encoded batch to the socket; pause reading above high water. */
static void flush_out(struct osb_cmd_out *o)
{
    if (o->olen && o->sse)
        osb_sse_send_raw(o->sse, o->obuf, o->olen);
    o->olen = 0;
    if (o->ocap > OBUF_KEEP) {
        free(o->obuf);
        o->obuf = NULL;
        o->ocap = 0;
    }
    if (o->sse && !o->paused && osb_sse_queued(o->sse) > OSB_WRITE_HIGH_WATER) {
        o->paused = true;
        stop_reading(o);
        osb_sse_on_drain(o->sse, on_drain, o);
    }
}

static void consume(struct src *s, const char *data, size_t n)
{
    struct osb_cmd_out *o = s->o;
    if (!o->sse)
        return; /* between session runs: drop */
    frame_init(&o->frame, s->type, osb_now_ms());
    osb_lines_feed(&s->lines, data, n, on_line, o);
    flush_out(o);
}

/* ---- libuv reading ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct src *s = h->data;
    buf->base = s->o->rbuf;
    buf->len = READ_CHUNK;
}

static void mark_eof(struct src *s)
{
    if (s->reading)
        uv_read_stop((uv_stream_t *)&s->h);
    s->reading = false;
    s->eof = true;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct src *s = st->data;
    if (n > 0) {
        consume(s, buf->base, (size_t)n);
        return;
    }
    if (n == 0)
        return; /* EAGAIN */
    if (n != UV_EOF)
        osb_debug("command output pipe: %s", uv_strerror((int)n));
    mark_eof(s);
    check_finish(s->o);
}

static void start_reading(struct osb_cmd_out *o)
{
    if (o->paused || o->freed)
        return;
    for (int i = 0; i < o->nsrc; i++) {
        struct src *s = &o->src[i];
        if (s->open && !s->eof && !s->reading &&
            uv_read_start((uv_stream_t *)&s->h, on_alloc, on_read) == 0)
            s->reading = true;
    }
}

/* ---- lifecycle ---- */

static void on_handle_closed(uv_handle_t *h)
{
    struct osb_cmd_out *o = h->data;
    if (h->type == UV_NAMED_PIPE)
        o = ((struct src *)h->data)->o;
    if (--o->handles > 0)
        return;
    for (int i = 0; i < o->nsrc; i++)
        osb_lines_free(&o->src[i].lines);
    free(o->rbuf);
    free(o->obuf);
    free(o);
}

struct osb_cmd_out *osb_cmd_out_new(uv_loop_t *loop)
{
    struct osb_cmd_out *o = osb_xcalloc(1, sizeof *o);
    o->loop = loop;
    o->rbuf = osb_xmalloc(READ_CHUNK);
    uv_timer_init(loop, &o->timer);
    o->timer.data = o;
    o->handles = 1;
    return o;
}

int osb_cmd_out_add(struct osb_cmd_out *o, int fd, const char *type, struct osb_err *err)
{
    if (o->nsrc >= MAX_SRC) {
        close(fd);
        return osb_err_set(err, OSB_E_INTERNAL, "too many output pipes");
    }
    struct src *s = &o->src[o->nsrc++];
    s->o = o;
    s->type = type;
    osb_lines_init(&s->lines, OSB_MAX_OUTPUT_LINE);
    uv_pipe_init(o->loop, &s->h, 0);
    s->h.data = s;
    o->handles++;
    s->open = true;
    int r = uv_pipe_open(&s->h, fd);
    if (r < 0) {
        close(fd);
        s->eof = true;
        return osb_err_set(err, OSB_E_SYS, "open output pipe: %s", uv_strerror(r));
    }
    start_reading(o);
    return 0;
}

void osb_cmd_out_set_sse(struct osb_cmd_out *o, struct osb_sse *sse)
{
    if (o->sse && o->sse != sse)
        osb_sse_on_drain(o->sse, NULL, NULL);
    o->sse = sse;
    for (int i = 0; i < o->nsrc; i++)
        osb_lines_reset(&o->src[i].lines);
    if (o->paused) {
        o->paused = false;
        if (o->finishing && o->grace_over)
            check_finish(o); /* no drain will come from the old stream */
        else
            start_reading(o);
    }
}

bool osb_cmd_out_eof(const struct osb_cmd_out *o)
{
    for (int i = 0; i < o->nsrc; i++)
        if (!o->src[i].eof)
            return false;
    return true;
}

/* Everything is read: flush the unterminated last lines and report. */
static void complete(struct osb_cmd_out *o)
{
    int64_t now = osb_now_ms();
    for (int i = 0; i < o->nsrc; i++) {
        frame_init(&o->frame, o->src[i].type, now);
        if (o->sse)
            osb_lines_flush(&o->src[i].lines, on_line, o);
        osb_lines_reset(&o->src[i].lines);
    }
    flush_out(o);
    o->paused = false;
    o->finishing = o->grace_over = false;
    uv_timer_stop(&o->timer);
    void (*done)(void *) = o->done;
    o->done = NULL;
    start_reading(o);
    if (done)
        done(o->done_ud);
}

/* Read what the pipe holds right now (until EAGAIN or the budget), pausing
 * for the socket like normal reading. Returns false if paused. */
static bool drain_now(struct osb_cmd_out *o, struct src *s)
{
    int fd;
    if (uv_fileno((uv_handle_t *)&s->h, &fd) < 0) {
        s->eof = true;
        return true;
    }
    while (!s->eof && o->budget) {
        size_t want = o->budget < READ_CHUNK ? o->budget : READ_CHUNK;
        ssize_t n = read(fd, o->rbuf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->eof = n == 0 || errno != EAGAIN;
            return true; /* empty for now (or gone): done with this pipe */
        }
        o->budget -= (size_t)n;
        consume(s, o->rbuf, (size_t)n);
        if (o->paused || o->freed) /* freed: the stream's owner went away */
            return false;
    }
    return true;
}

static void check_finish(struct osb_cmd_out *o)
{
    if (!o->finishing || o->freed)
        return;
    if (osb_cmd_out_eof(o)) {
        complete(o);
        return;
    }
    if (!o->grace_over || o->paused)
        return;
    stop_reading(o);
    for (int i = 0; i < o->nsrc; i++)
        if (!drain_now(o, &o->src[i]))
            return; /* on_drain comes back here */
    complete(o);
}

static void on_grace(uv_timer_t *t)
{
    struct osb_cmd_out *o = t->data;
    o->grace_over = true;
    check_finish(o);
}

void osb_cmd_out_finish(struct osb_cmd_out *o, int eof_wait_ms, void (*done)(void *ud), void *ud)
{
    o->finishing = true;
    o->grace_over = false;
    o->budget = FINISH_BUDGET;
    o->done = done;
    o->done_ud = ud;
    if (osb_cmd_out_eof(o) || eof_wait_ms <= 0) {
        o->grace_over = true;
        check_finish(o);
        return;
    }
    uv_timer_start(&o->timer, on_grace, (uint64_t)eof_wait_ms, 0);
}

void osb_cmd_out_free(struct osb_cmd_out *o)
{
    if (!o || o->freed)
        return;
    o->freed = true;
    o->done = NULL;
    if (o->sse)
        osb_sse_on_drain(o->sse, NULL, NULL);
    o->sse = NULL;
    stop_reading(o);
    for (int i = 0; i < o->nsrc; i++)
        uv_close((uv_handle_t *)&o->src[i].h, on_handle_closed);
    uv_timer_stop(&o->timer);
    uv_close((uv_handle_t *)&o->timer, on_handle_closed);
}
