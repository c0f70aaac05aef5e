/* HTTP/2 relaying as the vault proxy does it, over socket pairs with the
 * relay in a thread: the preface and SETTINGS (push switched off), a request
 * head re-encoded with the credential in place of the sandbox's own, the
 * answer's fields redacted, DATA passed as it is, a refused stream answered
 * by the proxy and never seen upstream (its DATA dropped, the window given
 * back), a head split over CONTINUATION for the upstream's frame size, a
 * malformed head refused, and a protocol error ending the relay. */
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tap.h"
#include "vault/h2.h"

#define SECRET "sk-unit-secret-value"

struct frame {
    uint32_t len, sid;
    uint8_t type, flags;
    unsigned char p[1 << 17];
};

static struct osb_vio cv, uv; /* the relay's ends */
static int ct, ut;            /* the test's ends: the sandbox, the upstream */
static struct {
    char binding[32], path[64];
    int status;
} done[16];
static int ndone;

static void on_request(void *ud, const struct osb_h2_req *rq, struct osb_h2_verdict *v)
{
    static const char *const add[] = {"Authorization", "Bearer " SECRET, NULL};
    (void)ud;
    if (!rq->method)
        *v = (struct osb_h2_verdict){.status = 400, .code = "VAULT::BAD_REQUEST", .message = "bad"};
    else if (strcmp(rq->authority, "good.example") != 0)
        *v = (struct osb_h2_verdict){
            .status = 421, .code = "VAULT::HOST_MISMATCH", .message = "not this server"};
    else
        *v = (struct osb_h2_verdict){.add = add, .binding = "b"};
}

static void on_answered(void *ud, const char *binding, const char *authority, const char *method,
                        const char *path, int status)
{
    (void)ud, (void)authority, (void)method;
    if (ndone == 16)
        return;
    snprintf(done[ndone].binding, sizeof done[ndone].binding, "%s", binding ? binding : "-");
    snprintf(done[ndone].path, sizeof done[ndone].path, "%s", path);
    done[ndone++].status = status;
}

static const char *const *on_secrets(void *ud, size_t *n)
{
    static const char *const s[] = {SECRET};
    (void)ud;
    *n = 1;
    return s;
}

static void *relay_main(void *arg)
{
    static const struct osb_h2_ops ops = {NULL, on_request, on_answered, on_secrets};
    (void)arg;
    osb_h2_relay(&cv, &uv, &ops, 5000);
    return NULL;
}

static void pair(int *test_end, struct osb_vio *relay_end)
{
    int sv[2];
    struct timeval tv = {5, 0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    *test_end = sv[0];
    *relay_end = (struct osb_vio){.fd = sv[1], .timeout_ms = 5000};
}

static void send_all(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n)
        abort();
}

static void send_frame(int fd, int type, int flags, uint32_t sid, const void *p, size_t n)
{
    unsigned char h[9] = {
        (unsigned char)(n >> 16),   (unsigned char)(n >> 8),   (unsigned char)n,
        (unsigned char)type,        (unsigned char)flags,      (unsigned char)(sid >> 24),
        (unsigned char)(sid >> 16), (unsigned char)(sid >> 8), (unsigned char)sid};
    send_all(fd, h, 9);
    if (n)
        send_all(fd, p, n);
}

/* 0, or -1 at the end of the stream (or after 5 s of silence). */
static int read_frame(int fd, struct frame *f)
{
    unsigned char h[9];
    if (recv(fd, h, 9, MSG_WAITALL) != 9)
        return -1;
    f->len = (uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2];
    f->type = h[3];
    f->flags = h[4];
    f->sid =
        ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) & 0x7fffffffu;
    if (f->len > sizeof f->p || (f->len && recv(fd, f->p, f->len, MSG_WAITALL) != f->len))
        return -1;
    return 0;
}

static void send_head(int fd, nghttp2_hd_deflater *d, uint32_t sid, int flags, const nghttp2_nv *nv,
                      size_t n)
{
    uint8_t buf[1 << 17];
    ssize_t l = nghttp2_hd_deflate_hd(d, buf, sizeof buf, nv, n);
    if (l < 0)
        abort();
    send_frame(fd, 1, flags | 0x4, sid, buf, (size_t)l);
}

/* A decoded block's field by name (the count of them in *count). */
struct fields {
    char name[64][64], value[64][65536];
    size_t n;
};

static void decode(nghttp2_hd_inflater *inf, const unsigned char *p, size_t n, struct fields *fs)
{
    fs->n = 0;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(inf, &nv, &fl, p, n, 1);
        if (r < 0)
            abort();
        p += r, n -= (size_t)r;
        if ((fl & NGHTTP2_HD_INFLATE_EMIT) && fs->n < 64) {
            snprintf(fs->name[fs->n], 64, "%.*s", (int)nv.namelen, nv.name);
            snprintf(fs->value[fs->n], sizeof fs->value[0], "%.*s", (int)nv.valuelen, nv.value);
            fs->n++;
        }
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(inf);
            return;
        }
        if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && n == 0)
            abort();
    }
}

static const char *get(const struct fields *fs, const char *name, int *count)
{
    const char *v = NULL;
    *count = 0;
    for (size_t i = 0; i < fs->n; i++)
        if (strcmp(fs->name[i], name) == 0) {
            v = v ? v : fs->value[i];
            (*count)++;
        }
    return v;
}

#define NV(n, v) \
    { \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), 0 \
    }

int main(void)
{
    static struct frame f;
    static struct fields fs;
    nghttp2_hd_deflater *cdef, *udef;
    nghttp2_hd_inflater *cinf, *uinf;
    pthread_t th;
    int count;
    nghttp2_hd_deflate_new(&cdef, 4096);
    nghttp2_hd_deflate_new(&udef, 4096);
    nghttp2_hd_inflate_new(&cinf);
    nghttp2_hd_inflate_new(&uinf);
    pair(&ct, &cv);
    pair(&ut, &uv);
    pthread_create(&th, NULL, relay_main, NULL);

    /* The preface and the sandbox's SETTINGS, push switched off. */
    send_all(ct, OSB_H2_PREFACE, 24);
    static const unsigned char push_on[6] = {0, 2, 0, 0, 0, 1};
    send_frame(ct, 4, 0, 0, push_on, 6);
    char pre[24];
    OK(recv(ut, pre, 24, MSG_WAITALL) == 24 && !memcmp(pre, OSB_H2_PREFACE, 24),
       "the preface reaches the upstream");
    OK(read_frame(ut, &f) == 0 && f.type == 4 && f.len == 6 && !memcmp(f.p, "\0\2\0\0\0\0", 6),
       "  then the sandbox's SETTINGS with ENABLE_PUSH turned to 0");
    /* Refused before the upstream said anything: held until its SETTINGS. */
    nghttp2_nv early[] = {NV(":method", "GET"), NV(":scheme", "https"),
                          NV(":authority", "evil.example"), NV(":path", "/early")};
    send_head(ct, cdef, 1, 0x1, early, 4);
    send_frame(ut, 4, 0, 0, NULL, 0);
    OK(read_frame(ct, &f) == 0 && f.type == 4 && f.len == 0,
       "the upstream's SETTINGS reach the sandbox first (a server's first frame)");
    OK(read_frame(ct, &f) == 0 && f.type == 1 && f.sid == 1,
       "  then the proxy's answer to a request refused before them");
    decode(cinf, f.p, f.len, &fs);
    IS_STR(get(&fs, ":status", &count), "421", "  421");
    OK(read_frame(ct, &f) == 0 && f.type == 0 && f.sid == 1 && (f.flags & 1), "  its body");

    /* A bound request. */
    nghttp2_nv rq[] = {NV(":method", "GET"),
                       NV(":scheme", "https"),
                       NV(":authority", "good.example"),
                       NV(":path", "/v1/x?q=1"),
                       NV("authorization", "Bearer mine"),
                       NV("x-other", "kept")};
    send_head(ct, cdef, 3, 0x1, rq, 6);
    OK(read_frame(ut, &f) == 0 && f.type == 1 && f.sid == 3 && (f.flags & 0x5) == 0x5,
       "the request head reaches the upstream (END_HEADERS, END_STREAM kept)");
    decode(uinf, f.p, f.len, &fs);
    const char *auth = get(&fs, "authorization", &count);
    OK(auth && !strcmp(auth, "Bearer " SECRET) && count == 1,
       "  with the credential in place of the sandbox's own");
    OK(get(&fs, "x-other", &count) && get(&fs, ":path", &count) &&
           !strcmp(get(&fs, ":path", &count), "/v1/x?q=1"),
       "  the other fields as they were");

    /* Its answer: fields redacted, DATA as it is. */
    nghttp2_nv rs[] = {NV(":status", "200"), NV("x-echo", "got " SECRET " back")};
    send_head(ut, udef, 3, 0, rs, 2);
    send_frame(ut, 0, 0x1, 3, "hello", 5);
    OK(read_frame(ct, &f) == 0 && f.type == 1 && f.sid == 3,
       "the answer's head reaches the sandbox");
    decode(cinf, f.p, f.len, &fs);
    IS_STR(get(&fs, "x-echo", &count), "got [REDACTED] back",
           "  a field echoing the secret is redacted");
    OK(read_frame(ct, &f) == 0 && f.type == 0 && f.len == 5 && !memcmp(f.p, "hello", 5) &&
           f.flags == 1,
       "  its DATA as it was");
    OK(ndone == 1 && !strcmp(done[0].binding, "b") && done[0].status == 200 &&
           !strcmp(done[0].path, "/v1/x?q=1"),
       "the answered request is reported with its binding and status");

    /* A refused stream: answered here, its DATA dropped and its window given back. */
    nghttp2_nv bad[] = {NV(":method", "POST"), NV(":scheme", "https"),
                        NV(":authority", "evil.example"), NV(":path", "/steal")};
    send_head(ct, cdef, 5, 0, bad, 4);
    send_frame(ct, 0, 0x1, 5, "0123456789", 10);
    OK(read_frame(ct, &f) == 0 && f.type == 1 && f.sid == 5,
       "a refused request gets a head from the proxy");
    decode(cinf, f.p, f.len, &fs);
    IS_STR(get(&fs, ":status", &count), "421", "  status 421");
    OK(read_frame(ct, &f) == 0 && f.type == 0 && f.sid == 5 && (f.flags & 1) &&
           strstr((char *)f.p, "VAULT::HOST_MISMATCH"),
       "  and a JSON {code,message} body ending the stream");
    OK(read_frame(ct, &f) == 0 && f.type == 3 && f.sid == 5,
       "  then RST_STREAM (the sandbox was still sending)");
    OK(read_frame(ct, &f) == 0 && f.type == 8 && f.sid == 0 && f.len == 4 && f.p[3] == 10,
       "  and the dropped DATA's 10 bytes of window back");

    /* A head bigger than the upstream's frame size: HEADERS + CONTINUATION. */
    static char big[40001];
    memset(big, 'v', sizeof big - 1);
    nghttp2_nv large[] = {NV(":method", "GET"), NV(":scheme", "https"),
                          NV(":authority", "good.example"), NV(":path", "/v1/big"),
                          NV("x-big", big)};
    send_head(ct, cdef, 7, 0x1, large, 5);
    OK(read_frame(ut, &f) == 0 && f.type == 1 && f.sid == 7 && f.len == 16384 && !(f.flags & 4),
       "nothing of the refused stream reached the upstream; a large head comes as HEADERS of "
       "16384 bytes");
    size_t blen = f.len;
    static unsigned char block[1 << 17];
    memcpy(block, f.p, f.len);
    int conts = 0;
    while (read_frame(ut, &f) == 0 && f.type == 9 && f.sid == 7) {
        memcpy(block + blen, f.p, f.len);
        blen += f.len;
        conts++;
        if (f.flags & 4)
            break;
    }
    OK(conts >= 2, "  then CONTINUATION frames");
    decode(uinf, block, blen, &fs);
    OK(get(&fs, "x-big", &count) && strlen(get(&fs, "x-big", &count)) == 40000 &&
           get(&fs, "authorization", &count),
       "  which decode to the whole head, with the credential");

    /* A malformed head (no :path) is refused by the proxy. */
    nghttp2_nv nopath[] = {NV(":method", "GET"), NV(":scheme", "https"),
                           NV(":authority", "good.example")};
    send_head(ct, cdef, 9, 0x1, nopath, 3);
    OK(read_frame(ct, &f) == 0 && f.type == 1 && f.sid == 9, "a head without :path is answered");
    decode(cinf, f.p, f.len, &fs);
    IS_STR(get(&fs, ":status", &count), "400", "  400");
    read_frame(ct, &f);

    /* A reset stream is reported with status 0. */
    static const unsigned char cancel[4] = {0, 0, 0, 8};
    send_frame(ut, 3, 0, 7, cancel, 4);
    OK(read_frame(ct, &f) == 0 && f.type == 3 && f.sid == 7, "RST_STREAM passes through");
    OK(ndone == 2 && done[1].status == 0 && !strcmp(done[1].path, "/v1/big"),
       "  and the stream is reported unanswered");

    /* A CONTINUATION out of nowhere ends the relay. */
    send_frame(ct, 9, 4, 11, "x", 1);
    pthread_join(th, NULL);
    OK(1, "a protocol error ends the relay");
    close(ct);
    close(ut);
    close(cv.fd);
    close(uv.fd);
    nghttp2_hd_deflate_del(cdef);
    nghttp2_hd_deflate_del(udef);
    nghttp2_hd_inflate_del(cinf);
    nghttp2_hd_inflate_del(uinf);
    return tap_done();
}
