#include "vault/h1.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"

static struct osb_h1_msg *msg_of(http_parser *p)
{
    return p->data;
}

static int put(struct osb_h1_msg *m, const char *at, size_t len)
{
    if (len > sizeof m->arena - m->used) {
        m->overflow = true;
        return -1;
    }
    memcpy(m->arena + m->used, at, len);
    m->used += len;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct osb_h1_msg *m = msg_of(p);
    if (!m->url_len)
        m->url = m->used;
    m->url_len += len;
    return put(m, at, len);
}

static int on_status(http_parser *p, const char *at, size_t len)
{
    struct osb_h1_msg *m = msg_of(p);
    if (!m->reason_len)
        m->reason = m->used;
    m->reason_len += len;
    return put(m, at, len);
}

static int on_field(http_parser *p, const char *at, size_t len)
{
    struct osb_h1_msg *m = msg_of(p);
    if (m->in_value || m->nf == 0) {
        if (m->nf == OSB_H1_MAX_FIELDS) {
            m->overflow = true;
            return -1;
        }
        m->f[m->nf++] = (struct osb_h1_field){.name = m->used};
        m->in_value = false;
    }
    m->f[m->nf - 1].nlen += len;
    return put(m, at, len);
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct osb_h1_msg *m = msg_of(p);
    struct osb_h1_field *f = &m->f[m->nf - 1];
    if (!m->in_value) {
        f->value = m->used;
        m->in_value = true;
    }
    f->vlen += len;
    return put(m, at, len);
}

static int on_headers_complete(http_parser *p)
{
    struct osb_h1_msg *m = msg_of(p);
    m->head_done = true;
    m->chunked = (p->flags & F_CHUNKED) != 0;
    http_parser_pause(p, 1);
    return m->skip_body ? 1 : 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct osb_h1_msg *m = msg_of(p);
    int r = -1;
    if (m->sink && !m->chunked) {
        r = osb_vio_write(m->sink, at, len);
    } else if (m->sink && len <= sizeof m->scratch - 32) { /* one TLS record, not three */
        int n = snprintf(m->scratch, 32, "%zx\r\n", len);
        memcpy(m->scratch + n, at, len);
        memcpy(m->scratch + n + len, "\r\n", 2);
        r = osb_vio_write(m->sink, m->scratch, (size_t)n + len + 2);
    }
    if (r < 0)
        m->sink_failed = true;
    return r;
}

static int on_message_complete(http_parser *p)
{
    struct osb_h1_msg *m = msg_of(p);
    m->complete = true;
    if (m->chunked && m->sink && osb_vio_write(m->sink, "0\r\n\r\n", 5) < 0) {
        m->sink_failed = true;
        return -1;
    }
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_status = on_status,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void osb_h1_begin(struct osb_h1_msg *m, bool request, bool skip_body)
{
    http_parser_init(&m->p, request ? HTTP_REQUEST : HTTP_RESPONSE);
    m->p.data = m;
    m->request = request;
    m->skip_body = skip_body;
    m->head_done = m->complete = m->chunked = m->overflow = m->sink_failed = false;
    m->in_value = false;
    m->sink = NULL;
    m->url = m->url_len = m->reason = m->reason_len = m->nf = m->used = 0;
}

/* Feeds what is buffered to the parser: 0 progress (or paused), -1 error. */
static int feed(struct osb_h1_in *in, struct osb_h1_msg *m)
{
    http_parser_pause(&m->p, 0);
    size_t n = http_parser_execute(&m->p, &settings, in->buf + in->off, in->len - in->off);
    enum http_errno e = HTTP_PARSER_ERRNO(&m->p);
    in->off += n;
    return e == HPE_OK || e == HPE_PAUSED ? 0 : -1;
}

/* Reads more into in: > 0, 0 at the end of the stream, -1. */
static ssize_t fill(struct osb_h1_in *in)
{
    if (in->off == in->len)
        in->off = in->len = 0;
    if (in->len == sizeof in->buf) { /* compact */
        memmove(in->buf, in->buf + in->off, in->len - in->off);
        in->len -= in->off;
        in->off = 0;
    }
    ssize_t r = osb_vio_read(in->io, in->buf + in->len, sizeof in->buf - in->len);
    if (r > 0)
        in->len += (size_t)r;
    return r;
}

int osb_h1_head(struct osb_h1_in *in, struct osb_h1_msg *m)
{
    bool any = false;
    while (!m->head_done) {
        if (in->off == in->len) {
            ssize_t r = fill(in);
            if (r == 0)
                return any ? OSB_H1_BAD : OSB_H1_EOF;
            if (r < 0)
                return OSB_H1_IO;
        }
        any = true;
        if (feed(in, m) < 0 || m->overflow)
            return OSB_H1_BAD;
    }
    return OSB_H1_OK;
}

int osb_h1_body(struct osb_h1_in *in, struct osb_h1_msg *m, struct osb_vio *to)
{
    m->sink = to;
    while (!m->complete) {
        if (in->off == in->len) {
            ssize_t r = fill(in);
            if (r < 0)
                return OSB_H1_IO;
            if (r == 0) { /* a body read to the end of the stream ends here */
                http_parser_pause(&m->p, 0);
                http_parser_execute(&m->p, &settings, NULL, 0);
                return m->complete ? OSB_H1_OK : OSB_H1_BAD;
            }
        }
        if (feed(in, m) < 0)
            return m->sink_failed ? OSB_H1_IO : OSB_H1_BAD;
    }
    return OSB_H1_OK;
}

const char *osb_h1_get(const struct osb_h1_msg *m, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < m->nf; i++)
        if (m->f[i].nlen == nl && strncasecmp(m->arena + m->f[i].name, name, nl) == 0) {
            *len = m->f[i].vlen;
            return m->arena + m->f[i].value;
        }
    return NULL;
}

size_t osb_h1_count(const struct osb_h1_msg *m, const char *name)
{
    size_t nl = strlen(name), n = 0;
    for (size_t i = 0; i < m->nf; i++)
        n += m->f[i].nlen == nl && strncasecmp(m->arena + m->f[i].name, name, nl) == 0;
    return n;
}

const char *osb_h1_target(const struct osb_h1_msg *m, size_t *len)
{
    *len = m->url_len;
    return m->arena + m->url;
}

const char *osb_h1_method(const struct osb_h1_msg *m)
{
    return http_method_str((enum http_method)m->p.method);
}

static bool dropped(const struct osb_h1_edit *ed, const char *name, size_t nl)
{
    for (size_t i = 0; ed && ed->drop && ed->drop[i]; i++)
        if (strlen(ed->drop[i]) == nl && strncasecmp(ed->drop[i], name, nl) == 0)
            return true;
    for (size_t i = 0; ed && ed->add && ed->add[i]; i += 2)
        if (strlen(ed->add[i]) == nl && strncasecmp(ed->add[i], name, nl) == 0)
            return true;
    return false;
}

int osb_h1_redact(struct osb_buf *b, const char *v, size_t n, const char *const *secret,
                  size_t n_secret)
{
    size_t i = 0;
    while (i < n) {
        size_t hit = 0;
        for (size_t k = 0; k < n_secret && !hit; k++) {
            size_t sl = strlen(secret[k]);
            if (sl >= 4 && sl <= n - i && memcmp(v + i, secret[k], sl) == 0)
                hit = sl;
        }
        if (hit) {
            if (osb_buf_adds(b, "[REDACTED]") < 0)
                return -1;
            i += hit;
        } else if (osb_buf_add(b, v + i++, 1) < 0) {
            return -1;
        }
    }
    return 0;
}

int osb_h1_write_head(struct osb_vio *to, const struct osb_h1_msg *m, const struct osb_h1_edit *ed)
{
    struct osb_buf b;
    osb_buf_init(&b, 4 * OSB_H1_HEAD_MAX);
    int r = m->request
                ? osb_buf_addf(&b, "%s %.*s HTTP/%u.%u\r\n", osb_h1_method(m), (int)m->url_len,
                               m->arena + m->url, m->p.http_major, m->p.http_minor)
                : osb_buf_addf(&b, "HTTP/%u.%u %u %.*s\r\n", m->p.http_major, m->p.http_minor,
                               m->p.status_code, (int)m->reason_len, m->arena + m->reason);
    for (size_t i = 0; r == 0 && i < m->nf; i++) {
        const struct osb_h1_field *f = &m->f[i];
        if (dropped(ed, m->arena + f->name, f->nlen))
            continue;
        if (osb_buf_add(&b, m->arena + f->name, f->nlen) < 0 || osb_buf_adds(&b, ": ") < 0 ||
            osb_h1_redact(&b, m->arena + f->value, f->vlen, ed ? ed->secret : NULL,
                          ed ? ed->n_secret : 0) < 0 ||
            osb_buf_adds(&b, "\r\n") < 0)
            r = -1;
    }
    for (size_t i = 0; r == 0 && ed && ed->add && ed->add[i]; i += 2)
        r = osb_buf_addf(&b, "%s: %s\r\n", ed->add[i], ed->add[i + 1]);
    if (r == 0)
        r = osb_buf_adds(&b, "\r\n");
    if (r == 0)
        r = osb_vio_write(to, b.data, b.len);
    osb_buf_free(&b);
    return r;
}

int osb_h1_answer(struct osb_vio *to, int status, const char *reason, const char *code,
                  const char *message)
{
    char body[1024], head[256];
    int bl = snprintf(body, sizeof body, "{\"code\":\"%s\",\"message\":\"%s\"}\n", code, message);
    if (bl < 0 || (size_t)bl >= sizeof body)
        return -1;
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: "
                      "%d\r\nConnection: close\r\n\r\n",
                      status, reason, bl);
    if (hl < 0 || (size_t)hl >= sizeof head)
        return -1;
    return osb_vio_write(to, head, (size_t)hl) < 0 ? -1 : osb_vio_write(to, body, (size_t)bl);
}
