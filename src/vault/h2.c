#include "vault/h2.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/xalloc.h"
#include "vault/h1.h"

enum {
    T_DATA,
    T_HEADERS,
    T_PRIORITY,
    T_RST,
    T_SETTINGS,
    T_PUSH,
    T_PING,
    T_GOAWAY,
    T_WINDOW,
    T_CONT
};
enum { F_END_STREAM = 0x1, F_ACK = 0x1, F_END_HEADERS = 0x4, F_PADDED = 0x8, F_PRIORITY = 0x20 };
enum { S_TABLE_SIZE = 1, S_ENABLE_PUSH = 2, S_MAX_FRAME = 5 };

#define PREFACE_LEN 24
#define BLOCK_MAX (256 * 1024) /* one compressed header block */
#define HEAD_MAX 65536         /* decoded, as OSB_H1_HEAD_MAX */
#define MAX_FIELDS 256
#define SETTINGS_MAX 1536
#define OUT_FLUSH 65536
#define MAX_REFUSED 64

/* A decoded header block: names and values NUL-terminated in arena. */
struct head {
    struct osb_buf arena;
    size_t name[MAX_FIELDS], value[MAX_FIELDS], vlen[MAX_FIELDS];
    size_t n;
};

/* One peer: the frames it sends us, and what we write to it. */
struct side {
    struct osb_vio *io;
    bool client;
    size_t preface; /* client: preface bytes still to come */
    unsigned char in[65536 + 9];
    size_t len;
    bool in_frame;
    uint32_t flen, left, sid;
    uint8_t type, flags;
    enum { PASS, COLLECT, DROP } mode;
    struct osb_buf frame; /* a collected payload */
    struct osb_buf block; /* a header block over HEADERS + CONTINUATION */
    bool in_block, bend;  /* bend: its HEADERS ended the stream */
    uint32_t bsid;
    nghttp2_hd_inflater *inf; /* what this peer encodes */
    nghttp2_hd_deflater *def; /* what we encode for it */
    uint32_t max_frame;       /* its SETTINGS_MAX_FRAME_SIZE */
    struct osb_buf out;
    /* The proxy's own frames for the sandbox wait in held until the
     * upstream's SETTINGS went to it: a server's first frame is SETTINGS. */
    bool ready;
    struct osb_buf held;
};

struct stream {
    uint32_t id;
    char *binding, *authority, *method, *path;
};

struct h2 {
    struct side c, u;
    const struct osb_h2_ops *ops;
    uint32_t last_sid; /* the sandbox's highest stream so far */
    struct stream st[OSB_H2_MAX_STREAMS];
    size_t nst;
    uint32_t refused[MAX_REFUSED];
    size_t nref;
};

static uint32_t be24(const unsigned char *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Where the proxy's own frames for s go (see held). */
static struct osb_buf *own(struct side *s)
{
    return s->ready ? &s->out : &s->held;
}

static int put_frame(struct osb_buf *out, int type, int flags, uint32_t sid, const void *p,
                     size_t n)
{
    unsigned char h[9] = {
        (unsigned char)(n >> 16),   (unsigned char)(n >> 8),   (unsigned char)n,
        (unsigned char)type,        (unsigned char)flags,      (unsigned char)(sid >> 24),
        (unsigned char)(sid >> 16), (unsigned char)(sid >> 8), (unsigned char)sid};
    return osb_buf_add(out, h, 9) < 0 || (n && osb_buf_add(out, p, n) < 0) ? -1 : 0;
}

static int flush(struct side *s)
{
    if (!s->out.len)
        return 0;
    int r = osb_vio_write(s->io, s->out.data, s->out.len);
    osb_buf_reset(&s->out);
    return r;
}

/* ------------------------------------------------------------ streams */

static struct stream *stream_of(struct h2 *h, uint32_t id)
{
    for (size_t i = 0; i < h->nst; i++)
        if (h->st[i].id == id)
            return &h->st[i];
    return NULL;
}

/* Reports a forwarded request's status and forgets the stream. */
static void stream_done(struct h2 *h, struct stream *s, int status)
{
    h->ops->answered(h->ops->ud, s->binding, s->authority, s->method, s->path, status);
    free(s->binding);
    free(s->authority);
    free(s->method);
    free(s->path);
    *s = h->st[--h->nst];
}

static bool is_refused(const struct h2 *h, uint32_t id)
{
    for (size_t i = 0; i < h->nref; i++)
        if (h->refused[i] == id)
            return true;
    return false;
}

static void unrefuse(struct h2 *h, uint32_t id)
{
    for (size_t i = 0; i < h->nref; i++)
        if (h->refused[i] == id)
            h->refused[i] = h->refused[--h->nref];
}

/* ------------------------------------------------------------ header blocks */

static const char *hname(const struct head *hd, size_t i)
{
    return hd->arena.data + hd->name[i];
}

static const char *hvalue(const struct head *hd, size_t i)
{
    return hd->arena.data + hd->value[i];
}

static int keep(struct head *hd, const nghttp2_nv *nv)
{
    if (hd->n == MAX_FIELDS)
        return -1;
    hd->name[hd->n] = hd->arena.len;
    if (osb_buf_add(&hd->arena, nv->name, nv->namelen) < 0 || osb_buf_add(&hd->arena, "", 1) < 0)
        return -1;
    hd->value[hd->n] = hd->arena.len;
    hd->vlen[hd->n] = nv->valuelen;
    if (osb_buf_add(&hd->arena, nv->value, nv->valuelen) < 0 || osb_buf_add(&hd->arena, "", 1) < 0)
        return -1;
    hd->n++;
    return 0;
}

/* The whole block through the peer's HPACK state: 0, or -1 (the
 * connection cannot go on: the tables are out of step). */
static int decode(nghttp2_hd_inflater *inf, struct osb_buf *blk, struct head *hd)
{
    uint8_t *in = (uint8_t *)blk->data;
    size_t len = blk->len;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &fl, in, len, 1);
        if (r < 0)
            return -1;
        in += r;
        len -= (size_t)r;
        if ((fl & NGHTTP2_HD_INFLATE_EMIT) && keep(hd, &nv) < 0)
            return -1;
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(inf);
            return 0;
        }
        if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && len == 0)
            return -1;
    }
}

/* Encodes nv for `to` as HEADERS + CONTINUATION within its frame size, into
 * out (to's, or where the proxy's own frames for it wait). */
static int send_block(struct side *to, struct osb_buf *out, uint32_t sid, bool end, nghttp2_nv *nv,
                      size_t n)
{
    size_t bound = nghttp2_hd_deflate_bound(to->def, nv, n);
    uint8_t *buf = osb_xmalloc(bound);
    ssize_t bl = nghttp2_hd_deflate_hd(to->def, buf, bound, nv, n);
    int r = bl < 0 ? -1 : 0;
    size_t off = 0;
    while (r == 0) {
        size_t k = (size_t)bl - off < to->max_frame ? (size_t)bl - off : to->max_frame;
        int fl = (off + k == (size_t)bl ? F_END_HEADERS : 0) | (off == 0 && end ? F_END_STREAM : 0);
        r = put_frame(out, off == 0 ? T_HEADERS : T_CONT, fl, sid, buf + off, k);
        off += k;
        if (off == (size_t)bl)
            break;
    }
    free(buf);
    return r;
}

static nghttp2_nv nv_of(const char *name, const char *value, size_t vlen, uint8_t flags)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), vlen, flags};
}

/* ------------------------------------------------------------ requests */

/* A field value the request may carry: no NUL, CR or LF (RFC 9113 8.2.1). */
static bool clean(const char *v, size_t n)
{
    return !memchr(v, 0, n) && !memchr(v, '\r', n) && !memchr(v, '\n', n);
}

/* The pseudo-header fields of a request head, or false when malformed. */
static bool request_of(const struct head *hd, uint32_t sid, struct osb_h2_req *rq)
{
    const char *host = NULL, *protocol = NULL;
    const char **slot;
    bool regular = false;
    *rq = (struct osb_h2_req){.stream = sid};
    for (size_t i = 0; i < hd->n; i++) {
        const char *n = hname(hd, i), *v = hvalue(hd, i);
        size_t nl = strlen(n);
        if (!nl || nl != hd->value[i] - hd->name[i] - 1 || !clean(v, hd->vlen[i]))
            return false;
        if (n[0] != ':') {
            regular = true;
            if (strcmp(n, "host") == 0) {
                if (host)
                    return false;
                host = v;
            }
            continue;
        }
        if (regular)
            return false;
        slot = !strcmp(n, ":method")      ? &rq->method
               : !strcmp(n, ":scheme")    ? &rq->scheme
               : !strcmp(n, ":authority") ? &rq->authority
               : !strcmp(n, ":path")      ? &rq->path
               : !strcmp(n, ":protocol")  ? &protocol
                                          : NULL;
        if (!slot || *slot)
            return false;
        *slot = v;
    }
    if (host && rq->authority && strcmp(host, rq->authority) != 0)
        return false;
    if (!rq->authority)
        rq->authority = host;
    if (!rq->method || !rq->authority || !rq->scheme || !rq->path || !*rq->path)
        return false;
    return strcmp(rq->method, "CONNECT") != 0 || protocol; /* only extended CONNECT */
}

/* The proxy's own answer on a stream; whatever the sandbox still sends on
 * it is dropped. */
static int answer(struct h2 *h, uint32_t sid, bool ended, const struct osb_h2_verdict *v)
{
    char body[1024], st[8], cl[24];
    int bl =
        snprintf(body, sizeof body, "{\"code\":\"%s\",\"message\":\"%s\"}\n", v->code, v->message);
    if (bl < 0 || (size_t)bl >= sizeof body)
        return -1;
    snprintf(st, sizeof st, "%d", v->status);
    snprintf(cl, sizeof cl, "%d", bl);
    nghttp2_nv nv[] = {nv_of(":status", st, strlen(st), 0),
                       nv_of("content-type", "application/json", 16, 0),
                       nv_of("content-length", cl, strlen(cl), 0)};
    if (send_block(&h->c, own(&h->c), sid, false, nv, 3) < 0 ||
        put_frame(own(&h->c), T_DATA, F_END_STREAM, sid, body, (size_t)bl) < 0)
        return -1;
    if (ended)
        return 0;
    static const unsigned char no_error[4];
    if (h->nref == MAX_REFUSED)
        return -1;
    h->refused[h->nref++] = sid;
    return put_frame(own(&h->c), T_RST, 0, sid, no_error, 4);
}

/* The head forwarded with the verdict's fields in place of the sandbox's
 * own of those names. */
static int forward_request(struct h2 *h, const struct head *hd, uint32_t sid, bool end,
                           const struct osb_h2_verdict *v)
{
    nghttp2_nv nv[MAX_FIELDS + 32];
    char lower[32][256];
    size_t n = 0, na = 0;
    for (size_t i = 0; v->add && v->add[i] && na < 32; i += 2, na++) {
        snprintf(lower[na], sizeof lower[na], "%s", v->add[i]);
        for (char *p = lower[na]; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    }
    for (size_t i = 0; i < hd->n; i++) {
        bool replaced = false;
        for (size_t k = 0; k < na && !replaced; k++)
            replaced = strcasecmp(hname(hd, i), lower[k]) == 0;
        if (!replaced)
            nv[n++] = nv_of(hname(hd, i), hvalue(hd, i), hd->vlen[i], 0);
    }
    for (size_t k = 0; k < na; k++) /* never indexed: a secret stays out of the tables */
        nv[n++] =
            nv_of(lower[k], v->add[2 * k + 1], strlen(v->add[2 * k + 1]), NGHTTP2_NV_FLAG_NO_INDEX);
    return send_block(&h->u, &h->u.out, sid, end, nv, n);
}

static char *dup_or_empty(const char *s)
{
    return osb_xstrdup(s ? s : "");
}

static int new_request(struct h2 *h, const struct head *hd, uint32_t sid, bool end)
{
    struct osb_h2_req rq;
    struct osb_h2_verdict v = {0};
    h->last_sid = sid;
    if (!request_of(hd, sid, &rq)) {
        rq = (struct osb_h2_req){.stream = sid}; /* malformed: the proxy answers 400 */
    }
    h->ops->request(h->ops->ud, &rq, &v);
    if (v.status)
        return answer(h, sid, end, &v);
    if (h->nst == OSB_H2_MAX_STREAMS || forward_request(h, hd, sid, end, &v) < 0)
        return -1;
    h->st[h->nst++] =
        (struct stream){sid, v.binding ? osb_xstrdup(v.binding) : NULL, dup_or_empty(rq.authority),
                        dup_or_empty(rq.method), dup_or_empty(rq.path)};
    return 0;
}

/* A header block as it was (trailers), or with secrets redacted. */
static int relay_block(struct h2 *h, struct side *to, const struct head *hd, uint32_t sid, bool end,
                       bool redact)
{
    nghttp2_nv nv[MAX_FIELDS];
    struct osb_buf red;
    size_t ns = 0, at[MAX_FIELDS];
    const char *const *sec = redact ? h->ops->secrets(h->ops->ud, &ns) : NULL;
    osb_buf_init(&red, 4 * HEAD_MAX);
    int r = 0;
    for (size_t i = 0; i < hd->n && r == 0; i++) {
        at[i] = red.len;
        r = osb_h1_redact(&red, hvalue(hd, i), hd->vlen[i], sec, ns);
    }
    for (size_t i = 0; i < hd->n && r == 0; i++) {
        size_t end_at = i + 1 < hd->n ? at[i + 1] : red.len;
        nv[i] = nv_of(hname(hd, i), red.data ? red.data + at[i] : "", end_at - at[i], 0);
    }
    if (r == 0)
        r = send_block(to, &to->out, sid, end, nv, hd->n);
    osb_buf_free(&red);
    return r;
}

static int client_block(struct h2 *h, const struct head *hd, uint32_t sid, bool end)
{
    if (sid == 0 || !(sid & 1))
        return -1;
    if (is_refused(h, sid)) {
        if (end)
            unrefuse(h, sid);
        return 0;
    }
    if (sid > h->last_sid)
        return new_request(h, hd, sid, end);
    return end ? relay_block(h, &h->u, hd, sid, end, false) : -1; /* trailers end a stream */
}

static int upstream_block(struct h2 *h, const struct head *hd, uint32_t sid, bool end)
{
    struct stream *s = stream_of(h, sid);
    if (s && hd->n && strcmp(hname(hd, 0), ":status") == 0) {
        const char *v = hvalue(hd, 0);
        int status = hd->vlen[0] == 3 && v[0] >= '1' && v[0] <= '5' && v[1] >= '0' && v[1] <= '9' &&
                             v[2] >= '0' && v[2] <= '9'
                         ? (v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0')
                         : 0;
        if (status >= 200 || status == 101 || status == 0)
            stream_done(h, s, status);
    }
    return relay_block(h, &h->c, hd, sid, end, true);
}

static int block_done(struct h2 *h, struct side *s)
{
    struct head *hd = osb_xcalloc(1, sizeof *hd);
    osb_buf_init(&hd->arena, HEAD_MAX);
    int r = decode(s->inf, &s->block, hd);
    s->in_block = false;
    osb_buf_reset(&s->block);
    if (r == 0)
        r = s->client ? client_block(h, hd, s->bsid, s->bend)
                      : upstream_block(h, hd, s->bsid, s->bend);
    osb_buf_free(&hd->arena);
    free(hd);
    return r;
}

/* ------------------------------------------------------------ frames */

/* HEADERS' fragment without its padding and priority. */
static int headers_frame(struct h2 *h, struct side *s)
{
    const unsigned char *p = (const unsigned char *)s->frame.data;
    size_t n = s->frame.len, pad = 0;
    if (s->flags & F_PADDED) {
        if (n < 1)
            return -1;
        pad = p[0];
        p++, n--;
    }
    if (s->flags & F_PRIORITY) {
        if (n < 5)
            return -1;
        p += 5, n -= 5;
    }
    if (pad > n || osb_buf_add(&s->block, p, n - pad) < 0)
        return -1;
    s->in_block = true;
    s->bsid = s->sid;
    s->bend = s->flags & F_END_STREAM;
    return s->flags & F_END_HEADERS ? block_done(h, s) : 0;
}

/* A peer's SETTINGS: what it says about itself shapes how we encode for
 * it; the sandbox's also switch server push off. */
static int settings_frame(struct side *s, struct side *o)
{
    unsigned char *p = (unsigned char *)s->frame.data;
    size_t n = s->frame.len;
    bool push = false;
    if (s->flags & F_ACK)
        return n ? -1 : put_frame(&o->out, T_SETTINGS, F_ACK, 0, NULL, 0);
    if (n % 6 || s->sid)
        return -1;
    for (size_t i = 0; i < n; i += 6) {
        unsigned id = (unsigned)p[i] << 8 | p[i + 1];
        uint32_t v = be32(p + i + 2);
        if (id == S_TABLE_SIZE && (nghttp2_hd_deflate_change_table_size(s->def, v) != 0 ||
                                   nghttp2_hd_inflate_change_table_size(o->inf, v) != 0))
            return -1;
        if (id == S_MAX_FRAME) {
            if (v < 16384 || v > 16777215)
                return -1;
            s->max_frame = v;
        }
        if (id == S_ENABLE_PUSH && s->client) {
            memset(p + i + 2, 0, 4);
            push = true;
        }
    }
    static const unsigned char no_push[6] = {0, S_ENABLE_PUSH, 0, 0, 0, 0};
    if (s->client && !push && osb_buf_add(&s->frame, no_push, 6) < 0)
        return -1;
    if (put_frame(&o->out, T_SETTINGS, 0, 0, s->frame.data, s->frame.len) < 0)
        return -1;
    if (!o->ready) { /* the upstream's preface is out: what the proxy held follows */
        o->ready = true;
        if (o->held.len && osb_buf_add(&o->out, o->held.data, o->held.len) < 0)
            return -1;
        osb_buf_reset(&o->held);
    }
    return 0;
}

/* A frame whose payload has arrived (or was passed or dropped). */
static int end_frame(struct h2 *h, struct side *s, struct side *o)
{
    int r = 0;
    s->in_frame = false;
    if (s->mode == DROP) {
        if (s->type == T_DATA && s->flen) { /* give the sandbox its window back */
            unsigned char inc[4] = {(unsigned char)(s->flen >> 24), (unsigned char)(s->flen >> 16),
                                    (unsigned char)(s->flen >> 8), (unsigned char)s->flen};
            r = put_frame(own(s), T_WINDOW, 0, 0, inc, 4);
        }
        if ((s->type == T_DATA && (s->flags & F_END_STREAM)) || s->type == T_RST)
            unrefuse(h, s->sid);
    } else if (s->type == T_HEADERS) {
        r = headers_frame(h, s);
    } else if (s->type == T_CONT) {
        if (osb_buf_add(&s->block, s->frame.data, s->frame.len) < 0)
            r = -1;
        else if (s->flags & F_END_HEADERS)
            r = block_done(h, s);
    } else if (s->type == T_SETTINGS) {
        r = settings_frame(s, o);
    } else if (s->type == T_RST) {
        struct stream *st = stream_of(h, s->sid);
        if (st)
            stream_done(h, st, 0);
    }
    osb_buf_reset(&s->frame);
    return r;
}

/* A frame header: how its payload is handled. */
static int begin_frame(struct h2 *h, struct side *s, struct side *o, const unsigned char *p)
{
    s->flen = s->left = be24(p);
    s->type = p[3];
    s->flags = p[4];
    s->sid = be32(p + 5) & 0x7fffffffu;
    s->in_frame = true;
    if (s->in_block && (s->type != T_CONT || s->sid != s->bsid))
        return -1; /* a header block is not interleaved with anything */
    if (s->type == T_PUSH || (s->type == T_CONT && !s->in_block))
        return -1;
    if (s->type == T_SETTINGS && s->flen > SETTINGS_MAX)
        return -1;
    if (s->client && s->sid && is_refused(h, s->sid) && s->type != T_HEADERS && s->type != T_CONT) {
        s->mode = DROP;
        return 0;
    }
    if (s->type == T_HEADERS || s->type == T_CONT || s->type == T_SETTINGS) {
        s->mode = COLLECT;
        return s->flen > BLOCK_MAX ? -1 : 0;
    }
    s->mode = PASS;
    return osb_buf_add(&o->out, p, 9);
}

/* The sandbox's first bytes are the fixed preface: checked, passed on. */
static size_t preface(struct side *s, struct side *o, int *bad)
{
    static const char want[] = OSB_H2_PREFACE;
    size_t k = s->len < s->preface ? s->len : s->preface, at = PREFACE_LEN - s->preface;
    if (memcmp(s->in, want + at, k) != 0 || osb_buf_add(&o->out, s->in, k) < 0)
        *bad = 1;
    s->preface -= k;
    return k;
}

/* Everything s sent that is in its buffer, through. */
static int process(struct h2 *h, struct side *s, struct side *o)
{
    size_t off = 0;
    int bad = 0;
    if (s->preface)
        off = preface(s, o, &bad);
    while (!bad && off < s->len) {
        if (!s->in_frame) {
            if (s->len - off < 9)
                break;
            bad = begin_frame(h, s, o, s->in + off) < 0;
            off += 9;
        } else {
            size_t k = s->left < s->len - off ? s->left : s->len - off;
            if (s->mode == PASS)
                bad = osb_buf_add(&o->out, s->in + off, k) < 0;
            else if (s->mode == COLLECT)
                bad = osb_buf_add(&s->frame, s->in + off, k) < 0;
            off += k;
            s->left -= (uint32_t)k;
        }
        if (!bad && s->in_frame && s->left == 0)
            bad = end_frame(h, s, o) < 0;
        if (!bad && o->out.len >= OUT_FLUSH)
            bad = flush(o) < 0;
    }
    memmove(s->in, s->in + off, s->len - off);
    s->len -= off;
    return bad ? -1 : 0;
}

/* What s has now: 1 something moved, 0 nothing yet, -1 the end. */
static int pull(struct h2 *h, struct side *s, struct side *o)
{
    ssize_t n = osb_vio_try_read(s->io, s->in + s->len, sizeof s->in - s->len);
    if (n == OSB_VIO_AGAIN)
        return 0;
    if (n <= 0)
        return -1;
    s->len += (size_t)n;
    if (process(h, s, o) < 0) {
        flush(s); /* what the proxy answered before the end */
        return -1;
    }
    return flush(o) < 0 || flush(s) < 0 ? -1 : 1;
}

/* ------------------------------------------------------------ the relay */

static void side_init(struct side *s, struct osb_vio *io, bool client)
{
    s->io = io;
    s->client = client;
    s->preface = client ? PREFACE_LEN : 0;
    s->max_frame = 16384;
    osb_buf_init(&s->frame, BLOCK_MAX + SETTINGS_MAX);
    osb_buf_init(&s->block, BLOCK_MAX);
    osb_buf_init(&s->out, 4 * BLOCK_MAX);
    osb_buf_init(&s->held, BLOCK_MAX);
    s->ready = !client;
    if (nghttp2_hd_inflate_new(&s->inf) != 0 || nghttp2_hd_deflate_new(&s->def, 4096) != 0)
        abort(); /* out of memory, as osb_xmalloc */
}

static void side_free(struct side *s)
{
    osb_buf_free(&s->frame);
    osb_buf_free(&s->block);
    osb_buf_free(&s->out);
    osb_buf_free(&s->held);
    nghttp2_hd_inflate_del(s->inf);
    nghttp2_hd_deflate_del(s->def);
}

/* Both ways until an end; bytes TLS already holds first (poll misses
 * them). */
static void run(struct h2 *h, int idle_ms)
{
    struct side *sides[2] = {&h->c, &h->u};
    for (;;) {
        int moved = 1;
        while (moved > 0) {
            moved = 0;
            for (int i = 0; i < 2; i++) {
                if (!osb_vio_pending(sides[i]->io))
                    continue;
                int r = pull(h, sides[i], sides[1 - i]);
                if (r < 0)
                    return;
                moved += r;
            }
        }
        struct pollfd p[2] = {{.fd = h->c.io->fd, .events = POLLIN},
                              {.fd = h->u.io->fd, .events = POLLIN}};
        int r = poll(p, 2, idle_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        for (int i = 0; i < 2; i++)
            if (p[i].revents && pull(h, sides[i], sides[1 - i]) < 0)
                return;
    }
}

void osb_h2_relay(struct osb_vio *c, struct osb_vio *u, const struct osb_h2_ops *ops, int idle_ms)
{
    struct h2 *h = osb_xcalloc(1, sizeof *h);
    h->ops = ops;
    side_init(&h->c, c, true);
    side_init(&h->u, u, false);
    run(h, idle_ms);
    while (h->nst)
        stream_done(h, &h->st[h->nst - 1], 0);
    side_free(&h->c);
    side_free(&h->u);
    free(h);
}
