/* The blocking HTTP/1.1 transport: one request at a time on the client's
 * keep-alive connection, the response read with http-parser. Request
 * bodies come from memory or a read callback (sized or chunked); a 2xx
 * response body can be streamed to a callback (SSE, downloads). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <http_parser.h>

#include "client.h"

#define HEAD_MAX (64 * 1024)            /* response head bytes */
#define BODY_MAX (1024LL * 1024 * 1024) /* a body kept in memory */

struct rx {
    http_parser p;
    const struct osbcl_req *rq;
    struct osbcl_resp *rs;
    struct osbcl_sb body, field, value;
    char **hdr; /* name, value, ... */
    size_t n_hdr;
    size_t head_bytes;
    bool in_value, stream, done, cancelled, oom, toobig;
};

static int add_header(struct rx *x)
{
    if (!x->field.len)
        return 0;
    char **h = realloc(x->hdr, (x->n_hdr + 3) * sizeof *h);
    if (!h)
        return -1;
    x->hdr = h;
    for (char *p = x->field.p; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    h[x->n_hdr] = osbcl_sb_done(&x->field, NULL);
    h[x->n_hdr + 1] = x->value.len ? osbcl_sb_done(&x->value, NULL) : strdup("");
    h[x->n_hdr + 2] = NULL;
    osbcl_sb_free(&x->value);
    if (!h[x->n_hdr] || !h[x->n_hdr + 1]) {
        free(h[x->n_hdr]);
        free(h[x->n_hdr + 1]);
        h[x->n_hdr] = NULL;
        return -1;
    }
    x->n_hdr += 2;
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t len)
{
    struct rx *x = p->data;
    if ((x->head_bytes += len) > HEAD_MAX)
        return x->toobig = true, -1;
    if (x->in_value && add_header(x) < 0)
        return x->oom = true, -1;
    x->in_value = false;
    osbcl_sb_add(&x->field, at, len);
    return x->field.oom ? (x->oom = true, -1) : 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct rx *x = p->data;
    if ((x->head_bytes += len) > HEAD_MAX)
        return x->toobig = true, -1;
    x->in_value = true;
    osbcl_sb_add(&x->value, at, len);
    return x->value.oom ? (x->oom = true, -1) : 0;
}

static int on_headers_complete(http_parser *p)
{
    struct rx *x = p->data;
    if (x->in_value && add_header(x) < 0)
        return x->oom = true, -1;
    x->in_value = false;
    x->rs->status = p->status_code;
    x->rs->headers = x->hdr;
    x->stream = x->rq->on_data && p->status_code >= 200 && p->status_code < 300;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    struct rx *x = p->data;
    if (x->stream) {
        if (x->rq->on_data(x->rq->data_ud, at, len))
            return x->cancelled = true, -1;
        return 0;
    }
    if ((long long)(x->body.len + len) > BODY_MAX)
        return x->toobig = true, -1;
    osbcl_sb_add(&x->body, at, len);
    return x->body.oom ? (x->oom = true, -1) : 0;
}

static int on_complete(http_parser *p)
{
    struct rx *x = p->data;
    x->done = true;
    http_parser_pause(p, 1); /* leave whatever follows in the buffer */
    return 0;
}

static const http_parser_settings settings = {
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_complete,
};

static bool clean_line(const char *s)
{
    return !strpbrk(s, "\r\n");
}

static bool has_header(const char *const *h, const char *name)
{
    size_t n = strlen(name);
    for (; h && *h; h++)
        if (!strncasecmp(*h, name, n) && (*h)[n] == ':')
            return true;
    return false;
}

/* The request head; NULL with err set. */
static char *build_head(osbc_client *c, const struct osbcl_req *rq, const struct osbcl_base *b,
                        struct osbc_error *err)
{
    struct osbcl_sb sb = {0};
    if (!clean_line(rq->path) || strchr(rq->path, ' '))
        return osbcl_fail(err, OSBC_E_ARG, "a request path with a space or line break"), NULL;
    bool def_port = !strcmp(b->port, b->tls ? "443" : "80");
    bool v6 = strchr(b->host, ':') != NULL;
    osbcl_sb_addf(&sb, "%s %s%s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n", rq->method, b->prefix, rq->path,
                  v6 ? "[" : "", b->host, v6 ? "]" : "", def_port ? "" : ":",
                  def_port ? "" : b->port);
    osbcl_sb_addf(&sb, "User-Agent: %s\r\n", c->user_agent);
    if (!has_header(rq->headers, "Accept"))
        osbcl_sb_adds(&sb, "Accept: */*\r\n");
    if (!rq->base && c->api_key)
        osbcl_sb_addf(&sb, "OPEN-SANDBOX-API-KEY: %s\r\n", c->api_key);
    for (int pass = 0; pass < 2; pass++) {
        const char *const *h = pass ? rq->headers : (const char *const *)b->headers;
        for (; h && *h; h++) {
            if (!clean_line(*h)) {
                osbcl_sb_free(&sb);
                return osbcl_fail(err, OSBC_E_ARG, "a header with a line break"), NULL;
            }
            osbcl_sb_addf(&sb, "%s\r\n", *h);
        }
    }
    if (rq->content_type)
        osbcl_sb_addf(&sb, "Content-Type: %s\r\n", rq->content_type);
    if (rq->body_read && rq->body_size < 0)
        osbcl_sb_adds(&sb, "Transfer-Encoding: chunked\r\n");
    else if (rq->body_read)
        osbcl_sb_addf(&sb, "Content-Length: %lld\r\n", rq->body_size);
    else if (rq->body || strcmp(rq->method, "GET") != 0)
        osbcl_sb_addf(&sb, "Content-Length: %zu\r\n", rq->body_len);
    osbcl_sb_adds(&sb, "\r\n");
    return osbcl_sb_done(&sb, err);
}

static int tmo(osbc_client *c, const struct osbcl_req *rq)
{
    long t = rq->timeout_ms ? rq->timeout_ms : c->timeout_ms;
    return t < 0 ? -1 : t > INT_MAX ? INT_MAX : (int)t;
}

/* Streams the body from rq->body_read, framed as the head announced. */
static int send_stream(struct osbcl_io *io, const struct osbcl_req *rq, int t,
                       struct osbc_error *err)
{
    enum { CHUNK = 64 * 1024 };
    char *buf = malloc(CHUNK + 32);
    if (!buf)
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    long long sent = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = rq->body_read(rq->body_ud, buf + 16, CHUNK, err);
        if (n < 0) {
            rc = err ? err->code : OSBC_E_IO;
            break;
        }
        if (rq->body_size >= 0 && sent + n > rq->body_size) {
            rc = osbcl_fail(err, OSBC_E_IO, "the upload grew while it was being sent");
            break;
        }
        if (rq->body_size < 0) {
            char hex[16];
            int h = snprintf(hex, sizeof hex, "%zx\r\n", (size_t)n);
            memcpy(buf + 16 - h, hex, (size_t)h);
            memcpy(buf + 16 + n, "\r\n", 2);
            rc = osbcl_io_write(io, buf + 16 - h, (size_t)(h + n + 2), t, err);
        } else if (n) {
            rc = osbcl_io_write(io, buf + 16, (size_t)n, t, err);
        }
        if (rc < 0)
            break;
        sent += n;
        if (!n)
            break;
    }
    free(buf);
    if (rc == 0 && rq->body_size >= 0 && sent != rq->body_size)
        rc = osbcl_fail(err, OSBC_E_IO, "the upload shrank while it was being sent");
    return rc;
}

static int send_request(osbc_client *c, struct osbcl_io *io, const struct osbcl_req *rq,
                        const struct osbcl_base *b, struct osbc_error *err)
{
    char *head = build_head(c, rq, b, err);
    if (!head)
        return err ? err->code : OSBC_E_NOMEM;
    int t = tmo(c, rq);
    size_t hl = strlen(head);
    int rc;
    if (rq->body && rq->body_len && rq->body_len < 256 * 1024) {
        /* One write, so the request leaves as one segment. */
        char *all = realloc(head, hl + rq->body_len);
        if (!all) {
            free(head);
            return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        }
        head = all;
        memcpy(head + hl, rq->body, rq->body_len);
        rc = osbcl_io_write(io, head, hl + rq->body_len, t, err);
    } else {
        rc = osbcl_io_write(io, head, hl, t, err);
        if (rc == 0 && rq->body && rq->body_len)
            rc = osbcl_io_write(io, rq->body, rq->body_len, t, err);
        else if (rc == 0 && rq->body_read)
            rc = send_stream(io, rq, t, err);
    }
    free(head);
    return rc;
}

static void rx_free(struct rx *x)
{
    osbcl_sb_free(&x->body);
    osbcl_sb_free(&x->field);
    osbcl_sb_free(&x->value);
}

/* Reads the response; *got_any tells whether any byte arrived (a reused
 * connection closed before that may be retried). upgrade: stop after the
 * head of a 101. Returns 0 with x->done, or an error code. */
static int read_response(osbc_client *c, struct osbcl_io *io, struct rx *x, bool upgrade,
                         bool *got_any, struct osbc_error *err)
{
    int t = tmo(c, x->rq);
    *got_any = false;
    http_parser_init(&x->p, HTTP_RESPONSE);
    x->p.data = x;
    for (;;) {
        int f = osbcl_io_fill(io, t, err);
        if (f == -2)
            return osbcl_fail(err, OSBC_E_TIMEOUT, "no answer from the server within %d ms", t);
        if (f < 0)
            return err ? err->code : OSBC_E_CONNECT;
        size_t avail = f ? io->len - io->off : 0;
        size_t n = http_parser_execute(&x->p, &settings, f ? io->buf + io->off : NULL, avail);
        if (f)
            *got_any = true;
        io->off += n;
        enum http_errno e = HTTP_PARSER_ERRNO(&x->p);
        if (x->cancelled)
            return osbcl_fail(err, OSBC_E_CANCELLED, "stopped by the caller");
        if (x->oom)
            return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        if (x->toobig)
            return osbcl_fail(err, OSBC_E_PROTOCOL, "the response is too large");
        if (upgrade && x->p.upgrade && x->rs->status == 101)
            return 0;
        if (x->done)
            return 0;
        if (!f)
            return osbcl_fail(err, OSBC_E_CONNECT, "the server closed the connection %s",
                              *got_any ? "in the middle of the response" : "without answering");
        if (e != HPE_OK && e != HPE_PAUSED)
            return osbcl_fail(err, OSBC_E_PROTOCOL, "malformed HTTP response: %s",
                              http_errno_description(e));
    }
}

static void finish(struct rx *x, struct osbcl_resp *rs)
{
    rs->len = x->body.len;
    rs->body = x->body.p ? x->body.p : strdup("");
    x->body.p = NULL;
    x->hdr = NULL; /* now rs->headers */
}

static struct osbcl_io *take_conn(osbc_client *c, const struct osbcl_base *b, bool *reused)
{
    char key[300];
    snprintf(key, sizeof key, "%d|%s|%s", b->tls, b->host, b->port);
    struct osbcl_io *io = c->conn;
    c->conn = NULL;
    *reused = false;
    if (io && !strcmp(io->key, key) && osbcl_io_idle_ok(io)) {
        *reused = true;
        return io;
    }
    osbcl_io_close(io);
    return NULL;
}

static void rx_drop_headers(struct rx *x, struct osbcl_resp *rs)
{
    for (size_t i = 0; x->hdr && x->hdr[i]; i++)
        free(x->hdr[i]);
    free(x->hdr);
    x->hdr = NULL;
    rs->headers = NULL;
}

int osbcl_http(osbc_client *c, const struct osbcl_req *rq, struct osbcl_resp *rs,
               struct osbc_error *err)
{
    const struct osbcl_base *b = rq->base ? rq->base : &c->server;
    for (int attempt = 0;; attempt++) {
        memset(rs, 0, sizeof *rs);
        bool reused, got_any = false;
        struct osbcl_io *io = take_conn(c, b, &reused);
        int rc = io ? 0 : osbcl_io_open(c, b, tmo(c, rq), &io, err);
        if (rc < 0)
            return rc;
        struct rx x = {.rq = rq, .rs = rs};
        rc = send_request(c, io, rq, b, err);
        if (rc == 0) {
            rc = read_response(c, io, &x, false, &got_any, err);
        } else if (rc == OSBC_E_CONNECT) {
            /* The server may have answered and closed before taking the
             * whole body (an early 401 or 413): that answer is the result. */
            struct osbc_error ignored;
            if (read_response(c, io, &x, false, &got_any, &ignored) == 0)
                rc = 0;
        }
        if (rc == 0) {
            finish(&x, rs);
            rx_free(&x);
            if (!rs->body) {
                osbcl_resp_free(rs);
                osbcl_io_close(io);
                return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
            }
            if (http_should_keep_alive(&x.p) && x.done)
                c->conn = io;
            else
                osbcl_io_close(io);
            return 0;
        }
        osbcl_io_close(io);
        rx_drop_headers(&x, rs);
        rx_free(&x);
        /* A kept-alive connection the server closed meanwhile: once more
         * on a new one, when the request can be sent again. */
        if (!(reused && !got_any && attempt == 0 && !rq->body_read && rc == OSBC_E_CONNECT))
            return rc;
    }
}

void osbcl_resp_free(struct osbcl_resp *rs)
{
    if (!rs)
        return;
    free(rs->body);
    for (size_t i = 0; rs->headers && rs->headers[i]; i++)
        free(rs->headers[i]);
    free(rs->headers);
    memset(rs, 0, sizeof *rs);
}

const char *osbcl_resp_header(const struct osbcl_resp *rs, const char *name)
{
    for (size_t i = 0; rs->headers && rs->headers[i]; i += 2)
        if (!strcasecmp(rs->headers[i], name))
            return rs->headers[i + 1];
    return NULL;
}

int osbcl_upgrade(osbc_client *c, const struct osbcl_req *rq, struct osbcl_io **out,
                  struct osbcl_resp *rs, struct osbc_error *err)
{
    const struct osbcl_base *b = rq->base ? rq->base : &c->server;
    memset(rs, 0, sizeof *rs);
    *out = NULL;
    struct osbcl_io *io;
    int rc = osbcl_io_open(c, b, tmo(c, rq), &io, err);
    if (rc < 0)
        return rc;
    struct rx x = {.rq = rq, .rs = rs};
    bool got_any;
    rc = send_request(c, io, rq, b, err);
    if (rc == 0)
        rc = read_response(c, io, &x, true, &got_any, err);
    if (rc == 0) {
        finish(&x, rs);
        rx_free(&x);
        if (!rs->body) {
            osbcl_resp_free(rs);
            osbcl_io_close(io);
            return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        }
        if (rs->status == 101) {
            *out = io;
            return 0;
        }
        osbcl_io_close(io);
        char what[300];
        snprintf(what, sizeof what, "%s %s", rq->method, rq->path);
        return osbcl_fail_http(err, rs->status, rs->body, rs->len, what);
    }
    osbcl_io_close(io);
    rx_drop_headers(&x, rs);
    rx_free(&x);
    return rc;
}
