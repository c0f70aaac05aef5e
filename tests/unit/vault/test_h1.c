/* HTTP/1.x relaying as the vault proxy does it, over socket pairs: heads
 * parsed and rewritten (fields dropped, added, secrets redacted), bodies
 * re-encoded (Content-Length, chunked, to the end of the stream), two
 * pipelined requests, HEAD answers, an upgrade, and refusals (malformed,
 * oversized heads). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "vault/h1.h"

/* A writer end and a reader end, both non-blocking as the proxy's. */
struct pipe2 {
    int w, r;
    struct osb_vio wv, rv;
};

static void pipe_open(struct pipe2 *p)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    p->w = sv[0];
    p->r = sv[1];
    p->wv = (struct osb_vio){.fd = sv[0], .timeout_ms = 2000};
    p->rv = (struct osb_vio){.fd = sv[1], .timeout_ms = 2000};
}

static void pipe_close(struct pipe2 *p)
{
    close(p->w);
    close(p->r);
}

/* Everything readable on fd now (the peer wrote it before). */
static char *drain(int fd)
{
    static char buf[1 << 16];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    return buf;
}

static struct osb_h1_msg *msg_new(void)
{
    return calloc(1, sizeof(struct osb_h1_msg));
}

int main(void)
{
    struct pipe2 in, out;
    struct osb_h1_in *src = calloc(1, sizeof *src);
    struct osb_h1_msg *m = msg_new();

    /* Two pipelined requests: a chunked POST and a GET. */
    pipe_open(&in);
    pipe_open(&out);
    src->io = &in.rv;
    const char req[] =
        "POST /v1/x?q=1 HTTP/1.1\r\nHost: API.example.com\r\nAuthorization: Bearer "
        "fake\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n"
        "Trailer-X: y\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n";
    OK(write(in.w, req, sizeof req - 1) == (ssize_t)sizeof req - 1, "requests written");
    osb_h1_begin(m, true, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_OK, "the first head parses");
    IS_STR(osb_h1_method(m), "POST", "  method");
    size_t l;
    const char *t = osb_h1_target(m, &l);
    OK(l == 9 && !memcmp(t, "/v1/x?q=1", 9), "  target");
    const char *h = osb_h1_get(m, "host", &l);
    OK(h && l == 15 && !memcmp(h, "API.example.com", 15), "  a field, by any case");
    IS_INT(osb_h1_count(m, "Host"), 1, "  one Host field");
    static const char *const drop[] = {"Transfer-Encoding-Not", NULL};
    static const char *const add[] = {"Authorization", "Bearer REAL", NULL};
    struct osb_h1_edit ed = {.drop = drop, .add = add};
    OK(osb_h1_write_head(&out.wv, m, &ed) == 0, "the head is written");
    IS_INT(osb_h1_body(src, m, &out.wv), OSB_H1_OK, "the chunked body is relayed");
    char *got = drain(out.r);
    OK(strstr(got, "POST /v1/x?q=1 HTTP/1.1\r\n") == got, "  request line kept");
    OK(!strstr(got, "Bearer fake") && strstr(got, "Authorization: Bearer REAL\r\n"),
       "  the sandbox's Authorization replaced by the added one");
    OK(strstr(got, "\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n") != NULL,
       "  chunks re-encoded, trailers dropped");
    OK(!strstr(got, "GET /two"), "  the next request is not part of this one");
    osb_h1_begin(m, true, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_OK, "the pipelined second head parses");
    IS_STR(osb_h1_method(m), "GET", "  GET /two");
    IS_INT(osb_h1_body(src, m, &out.wv), OSB_H1_OK, "  no body");
    pipe_close(&in);
    pipe_close(&out);

    /* A response with Content-Length, a secret in a header, then a HEAD
     * answer whose Content-Length has no body. */
    pipe_open(&in);
    pipe_open(&out);
    src->io = &in.rv;
    src->off = src->len = 0;
    const char resp[] =
        "HTTP/1.1 200 OK\r\nX-Echo: token s3cr3t-v4lue!\r\nContent-Length: 4\r\n\r\n"
        "bodyHTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
    OK(write(in.w, resp, sizeof resp - 1) == (ssize_t)sizeof resp - 1, "responses written");
    osb_h1_begin(m, false, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_OK, "a response head");
    static const char *const secrets[] = {"s3cr3t-v4lue"};
    struct osb_h1_edit red = {.secret = secrets, .n_secret = 1};
    OK(osb_h1_write_head(&out.wv, m, &red) == 0 && osb_h1_body(src, m, &out.wv) == OSB_H1_OK,
       "  relayed");
    got = drain(out.r);
    OK(strstr(got, "X-Echo: token [REDACTED]!\r\n") && !strstr(got, "s3cr3t"),
       "  the secret in a header value is redacted");
    OK(strstr(got, "\r\n\r\nbody") != NULL, "  the body follows");
    osb_h1_begin(m, false, true);
    IS_INT(osb_h1_head(src, m), OSB_H1_OK, "the answer to a HEAD");
    IS_INT(osb_h1_body(src, m, &out.wv), OSB_H1_OK, "  has no body despite Content-Length");
    pipe_close(&in);
    pipe_close(&out);

    /* A body that ends with the stream (no length, no chunks). */
    pipe_open(&in);
    pipe_open(&out);
    src->io = &in.rv;
    src->off = src->len = 0;
    const char eof_resp[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end";
    OK(write(in.w, eof_resp, sizeof eof_resp - 1) > 0, "a close-delimited answer written");
    shutdown(in.w, SHUT_WR);
    osb_h1_begin(m, false, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_OK, "  its head");
    IS_INT(osb_h1_body(src, m, &out.wv), OSB_H1_OK, "  its body ends with the stream");
    OK(strcmp(drain(out.r), "to the end") == 0, "  relayed whole");
    pipe_close(&in);
    pipe_close(&out);

    /* Refusals. */
    pipe_open(&in);
    src->io = &in.rv;
    src->off = src->len = 0;
    const char bad[] = "GET / HTTP/1.1\r\nBad Header\r\n\r\n";
    OK(write(in.w, bad, sizeof bad - 1) > 0, "a malformed head written");
    osb_h1_begin(m, true, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_BAD, "  refused");
    pipe_close(&in);

    pipe_open(&in);
    src->io = &in.rv;
    src->off = src->len = 0;
    const char smuggle[] =
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd";
    OK(write(in.w, smuggle, sizeof smuggle - 1) > 0, "two different Content-Lengths written");
    osb_h1_begin(m, true, false);
    IS_INT(osb_h1_head(src, m), OSB_H1_BAD, "  refused");
    pipe_close(&in);

    pipe_open(&in);
    src->io = &in.rv;
    src->off = src->len = 0;
    char *big = malloc(OSB_H1_HEAD_MAX + 4096);
    int n = snprintf(big, 64, "GET / HTTP/1.1\r\nX-Big: ");
    memset(big + n, 'a', OSB_H1_HEAD_MAX);
    memcpy(big + n + OSB_H1_HEAD_MAX, "\r\n\r\n", 4);
    size_t total = (size_t)n + OSB_H1_HEAD_MAX + 4, sent = 0;
    osb_h1_begin(m, true, false);
    int r = OSB_H1_OK;
    while (sent < total) { /* the socket buffer is smaller than the head */
        ssize_t w = write(in.w, big + sent, total - sent);
        if (w > 0)
            sent += (size_t)w;
        if ((r = osb_h1_head(src, m)) != OSB_H1_OK)
            break;
    }
    IS_INT(r, OSB_H1_BAD, "a head over 64 KiB is refused");
    free(big);
    pipe_close(&in);

    /* The proxy's own answer. */
    pipe_open(&out);
    OK(osb_h1_answer(&out.wv, 421, "Misdirected Request", "VAULT::HOST_MISMATCH", "no") == 0,
       "an answer of the proxy's own");
    got = drain(out.r);
    OK(strstr(got, "HTTP/1.1 421 Misdirected Request\r\n") == got &&
           strstr(got, "Connection: close\r\n") &&
           strstr(got, "{\"code\":\"VAULT::HOST_MISMATCH\",\"message\":\"no\"}"),
       "  a JSON {code,message} with Connection: close");
    pipe_close(&out);
    free(m);
    free(src);
    return tap_failed ? 1 : 0;
}
