/* The host-side DNS forwarder: see dns.h.
 *
 * Lifetimes: every close callback frees only the memory of its own object,
 * never a parent's, so a parent (a sandbox, the forwarder) can go away while
 * its children's handles are still closing. Objects that outlive their
 * parent are detached first (their parent pointer cleared), and every
 * callback of a detached object only finishes closing it. */
#include "net/dns.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/random.h"
#include "common/xalloc.h"
#include "net/dnsmsg.h"

#define DEFAULT_PORT 53
#define DEFAULT_TIMEOUT_MS 2000
/* Queries in flight on one TCP client connection (pipelining). */
#define MAX_TCP_PIPELINE 32

struct sbx;
struct fwd;

/* A TCP connection from a sandbox. */
struct tconn {
    uint8_t *rbuf; /* first: see alloc_shared */
    struct sbx *s; /* NULL once detached */
    struct tconn *prev, *next;
    uv_tcp_t h;
    uv_timer_t idle;
    uint8_t *in;
    size_t inlen;
    unsigned pending;
    int handles; /* open handles; freed at 0 */
};

/* One upstream attempt: its own socket, so a late answer from a previous
 * upstream can never be mistaken for this one's. */
struct attempt {
    uint8_t *rbuf; /* first: see alloc_shared */
    struct fwd *f; /* NULL once abandoned */
    bool tcp;
    union {
        uv_handle_t handle;
        uv_udp_t udp;
        uv_tcp_t tcp;
    } h;
    uv_connect_t creq;
    uv_write_t wreq;
    uint8_t *out; /* TCP: the length-prefixed query */
    uint8_t *in;  /* TCP: the length-prefixed answer being read */
    size_t inlen;
};

/* One query in flight. */
struct fwd {
    struct sbx *s;
    struct fwd *prev, *next;
    struct tconn *conn;             /* TCP client, or NULL for UDP */
    struct sockaddr_storage client; /* UDP client */
    uint8_t *q;                     /* the query as sent upstream (our id) */
    size_t qlen;
    uint16_t client_id;
    struct osb_dns_query pq; /* pq.id is the upstream id */
    size_t up;               /* index of the current upstream */
    struct attempt *a;
    uv_timer_t timer;
};

struct sbx {
    uint8_t *rbuf; /* first: see alloc_shared */
    struct osb_dns *dns;
    struct sbx *prev, *next;
    char *key;
    struct osb_policy policy;
    bool has_policy;
    osb_dns_learn_fn learn;
    void *ud;
    uv_udp_t udp;
    uv_tcp_t tcp;
    int handles;
    struct tconn *conns;
    unsigned nconns;
    struct fwd *fwds;
    unsigned npending;
};

struct osb_dns {
    uv_loop_t *loop;
    struct sockaddr_storage *ups;
    size_t nups;
    int port;
    unsigned timeout_ms;
    struct sbx *sbxs;
    struct osb_dns_stats stats;
    /* Receive buffer shared by every socket: callbacks run one at a time
     * and consume the data before returning. */
    uint8_t rbuf[OSB_DNS_MAX_MSG + 1];
};

static void start_attempt(struct fwd *f);

/* ---------- lists ---------- */

#define LIST_ADD(head, x) \
    do { \
        (x)->prev = NULL; \
        (x)->next = (head); \
        if (head) \
            (head)->prev = (x); \
        (head) = (x); \
    } while (0)
#define LIST_DEL(head, x) \
    do { \
        if ((x)->prev) \
            (x)->prev->next = (x)->next; \
        else \
            (head) = (x)->next; \
        if ((x)->next) \
            (x)->next->prev = (x)->prev; \
        (x)->prev = (x)->next = NULL; \
    } while (0)

/* Every reading handle's data points to an object whose first member is
 * the forwarder's shared receive buffer. */
static void alloc_shared(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    uint8_t *rbuf = *(uint8_t **)h->data;
    (void)suggested;
    *buf = uv_buf_init((char *)rbuf, OSB_DNS_MAX_MSG + 1);
}

/* ---------- replies to the sandbox ---------- */

struct twrite {
    uv_write_t w;
    uint8_t data[];
};

static void twrite_done(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

static void tconn_write(struct tconn *c, const uint8_t *msg, size_t len)
{
    struct twrite *t = osb_xmalloc(sizeof *t + 2 + len);
    t->data[0] = (uint8_t)(len >> 8);
    t->data[1] = (uint8_t)len;
    memcpy(t->data + 2, msg, len);
    uv_buf_t b = uv_buf_init((char *)t->data, (unsigned)(len + 2));
    if (uv_write(&t->w, (uv_stream_t *)&c->h, &b, 1, twrite_done) < 0)
        free(t);
}

/* Answer over the transport the query came in on. A UDP reply that cannot
 * be sent right away is dropped: the client retries. */
static void reply(struct sbx *s, struct tconn *c, const struct sockaddr *to, const uint8_t *msg,
                  size_t len)
{
    if (c) {
        tconn_write(c, msg, len);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)msg, (unsigned)len);
    int r = uv_udp_try_send(&s->udp, &b, 1, to);
    if (r < 0)
        osb_debug("dns %s: reply dropped: %s", s->key, uv_strerror(r));
}

static void reply_rcode(struct sbx *s, struct tconn *c, const struct sockaddr *to,
                        const uint8_t *query, size_t qlen, const struct osb_dns_query *q, int rcode)
{
    uint8_t out[OSB_DNS_HEADER_LEN + 260 + 4];
    size_t n = osb_dns_reply_error(query, qlen, q, rcode, out, sizeof out);
    if (n)
        reply(s, c, to, out, n);
}

/* ---------- queries in flight ---------- */

static void fwd_freed(uv_handle_t *h)
{
    struct fwd *f = h->data;
    free(f->q);
    free(f);
}

static void attempt_freed(uv_handle_t *h)
{
    struct attempt *a = h->data;
    free(a->out);
    free(a->in);
    free(a);
}

static void abandon_attempt(struct fwd *f)
{
    struct attempt *a = f->a;
    if (!a)
        return;
    f->a = NULL;
    a->f = NULL;
    uv_close(&a->h.handle, attempt_freed);
}

/* End f: answer the client with msg (if any and the client is still
 * there), stop talking upstream, and free f once its timer is closed. */
static void fwd_finish(struct fwd *f, const uint8_t *msg, size_t len)
{
    struct sbx *s = f->s;
    if (msg && (!f->conn || f->conn->s))
        reply(s, f->conn, (struct sockaddr *)&f->client, msg, len);
    if (f->conn)
        f->conn->pending--;
    abandon_attempt(f);
    LIST_DEL(s->fwds, f);
    s->npending--;
    uv_close((uv_handle_t *)&f->timer, fwd_freed);
}

static void fwd_fail(struct fwd *f)
{
    uint8_t out[OSB_DNS_HEADER_LEN + 260 + 4];
    f->q[0] = (uint8_t)(f->client_id >> 8);
    f->q[1] = (uint8_t)f->client_id;
    size_t n = osb_dns_reply_error(f->q, f->qlen, &f->pq, OSB_DNS_RCODE_SERVFAIL, out, sizeof out);
    f->s->dns->stats.failed++;
    fwd_finish(f, n ? out : NULL, n);
}

static void next_upstream(struct fwd *f)
{
    abandon_attempt(f);
    if (++f->up >= f->s->dns->nups) {
        osb_debug("dns %s: %s: every upstream failed", f->s->key, f->pq.name);
        fwd_fail(f);
        return;
    }
    start_attempt(f);
}

static void on_timeout(uv_timer_t *t)
{
    next_upstream(t->data);
}

struct learn_ctx {
    struct sbx *s;
    const char *name;
};

static void on_addr(void *ud, int family, const uint8_t *addr, uint32_t ttl)
{
    struct sbx *s = ((struct learn_ctx *)ud)->s;
    if (s->learn)
        s->learn(s->ud, s->key, ((struct learn_ctx *)ud)->name, family, addr, ttl);
}

static const struct osb_policy *sbx_policy(const struct sbx *s)
{
    return s->has_policy ? &s->policy : NULL;
}

/* A checked answer from upstream: teach the addresses, then relay it.
 * The policy is looked at again: it may have changed while in flight. */
static void deliver(struct fwd *f, uint8_t *msg, size_t len)
{
    struct sbx *s = f->s;
    msg[0] = (uint8_t)(f->client_id >> 8);
    msg[1] = (uint8_t)f->client_id;
    if (osb_policy_match_name(sbx_policy(s), f->pq.name) != OSB_POLICY_ALLOW) {
        uint8_t out[OSB_DNS_HEADER_LEN + 260 + 4];
        memcpy(f->q, msg, 2);
        s->dns->stats.denied++; /* the policy changed while the query was out */
        size_t n =
            osb_dns_reply_error(f->q, f->qlen, &f->pq, OSB_DNS_RCODE_NXDOMAIN, out, sizeof out);
        fwd_finish(f, n ? out : NULL, n);
        return;
    }
    struct learn_ctx ctx = {s, f->pq.name};
    /* An answer that does not parse is still the client's to judge; it
     * teaches the policy nothing more. */
    if (osb_dns_answer_addrs(msg, len, on_addr, &ctx) < 0)
        osb_debug("dns: the answer for %s does not parse", f->pq.name);
    fwd_finish(f, msg, len);
}

/* ---------- upstream over UDP ---------- */

static void on_up_udp(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
                      unsigned flags)
{
    struct attempt *a = h->data;
    (void)from; /* connected socket: the kernel filters the source */
    if (!a->f || n == 0)
        return;
    if (n < 0) { /* ICMP unreachable and the like: next upstream now */
        next_upstream(a->f);
        return;
    }
    if ((flags & UV_UDP_PARTIAL) ||
        osb_dns_check_response((uint8_t *)buf->base, (size_t)n, &a->f->pq) < 0)
        return; /* not our answer: keep waiting until the timeout */
    deliver(a->f, (uint8_t *)buf->base, (size_t)n);
}

static int start_udp(struct fwd *f, struct attempt *a, const struct sockaddr *up)
{
    uv_udp_init(f->s->dns->loop, &a->h.udp);
    a->h.udp.data = a;
    uv_buf_t b = uv_buf_init((char *)f->q, (unsigned)f->qlen);
    int r;
    if ((r = uv_udp_connect(&a->h.udp, up)) < 0 ||
        (r = uv_udp_recv_start(&a->h.udp, alloc_shared, on_up_udp)) < 0)
        return r;
    r = uv_udp_try_send(&a->h.udp, &b, 1, NULL);
    return r < 0 ? r : 0;
}

/* ---------- upstream over TCP ---------- */

static void on_up_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct attempt *a = st->data;
    if (!a->f)
        return;
    if (n < 0) {
        next_upstream(a->f);
        return;
    }
    size_t room = 2 + OSB_DNS_MAX_MSG - a->inlen, take = (size_t)n < room ? (size_t)n : room;
    memcpy(a->in + a->inlen, buf->base, take);
    a->inlen += take;
    if (a->inlen < 2)
        return;
    size_t want = (size_t)a->in[0] << 8 | a->in[1];
    if (a->inlen < 2 + want)
        return;
    if (osb_dns_check_response(a->in + 2, want, &a->f->pq) < 0) {
        next_upstream(a->f); /* a stream cannot resynchronise */
        return;
    }
    deliver(a->f, a->in + 2, want);
}

static void on_up_tcp_written(uv_write_t *w, int status)
{
    struct attempt *a = w->data;
    if (a->f && status < 0)
        next_upstream(a->f);
}

static void on_up_tcp_connect(uv_connect_t *req, int status)
{
    struct attempt *a = req->data;
    if (!a->f)
        return;
    if (status < 0) {
        next_upstream(a->f);
        return;
    }
    struct fwd *f = a->f;
    a->out = osb_xmalloc(2 + f->qlen);
    a->out[0] = (uint8_t)(f->qlen >> 8);
    a->out[1] = (uint8_t)f->qlen;
    memcpy(a->out + 2, f->q, f->qlen);
    uv_buf_t b = uv_buf_init((char *)a->out, (unsigned)(2 + f->qlen));
    a->wreq.data = a;
    if (uv_write(&a->wreq, (uv_stream_t *)&a->h.tcp, &b, 1, on_up_tcp_written) < 0 ||
        uv_read_start((uv_stream_t *)&a->h.tcp, alloc_shared, on_up_tcp_read) < 0)
        next_upstream(f);
}

static int start_tcp(struct fwd *f, struct attempt *a, const struct sockaddr *up)
{
    uv_tcp_init(f->s->dns->loop, &a->h.tcp);
    a->h.tcp.data = a;
    a->in = osb_xmalloc(2 + OSB_DNS_MAX_MSG);
    a->creq.data = a;
    return uv_tcp_connect(&a->creq, &a->h.tcp, up, on_up_tcp_connect);
}

static void start_attempt(struct fwd *f)
{
    struct osb_dns *dns = f->s->dns;
    while (f->up < dns->nups) {
        struct attempt *a = osb_xcalloc(1, sizeof *a);
        a->rbuf = dns->rbuf;
        a->f = f;
        a->tcp = f->conn != NULL;
        f->a = a;
        const struct sockaddr *up = (struct sockaddr *)&dns->ups[f->up];
        int r = a->tcp ? start_tcp(f, a, up) : start_udp(f, a, up);
        if (r == 0) {
            uv_timer_start(&f->timer, on_timeout, dns->timeout_ms, 0);
            return;
        }
        osb_debug("dns %s: upstream %zu: %s", f->s->key, f->up, uv_strerror(r));
        abandon_attempt(f);
        f->up++;
    }
    fwd_fail(f);
}

/* ---------- incoming queries ---------- */

static void forward(struct sbx *s, struct tconn *c, const struct sockaddr *from, const uint8_t *msg,
                    size_t len, const struct osb_dns_query *pq)
{
    struct fwd *f = osb_xcalloc(1, sizeof *f);
    f->s = s;
    f->conn = c;
    if (from)
        memcpy(&f->client, from,
               from->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                           : sizeof(struct sockaddr_in));
    f->q = osb_xmalloc(len);
    memcpy(f->q, msg, len);
    f->qlen = len;
    f->pq = *pq;
    f->client_id = pq->id;
    osb_random_bytes(&f->pq.id, sizeof f->pq.id);
    f->q[0] = (uint8_t)(f->pq.id >> 8);
    f->q[1] = (uint8_t)f->pq.id;
    uv_timer_init(s->dns->loop, &f->timer);
    f->timer.data = f;
    LIST_ADD(s->fwds, f);
    s->npending++;
    if (c)
        c->pending++;
    start_attempt(f);
}

static void handle_query(struct sbx *s, struct tconn *c, const struct sockaddr *from,
                         const uint8_t *msg, size_t len)
{
    struct osb_dns_query q;
    int rc = osb_dns_parse_query(msg, len, &q);
    if (rc < 0)
        return;
    if (rc > 0) {
        reply_rcode(s, c, from, msg, len, &q, rc);
        return;
    }
    s->dns->stats.queries++;
    if (osb_policy_match_name(sbx_policy(s), q.name) != OSB_POLICY_ALLOW) {
        osb_debug("dns %s: %s denied", s->key, q.name);
        s->dns->stats.denied++;
        reply_rcode(s, c, from, msg, len, &q, OSB_DNS_RCODE_NXDOMAIN);
        return;
    }
    if (s->npending >= OSB_DNS_MAX_PENDING || (c && c->pending >= MAX_TCP_PIPELINE)) {
        s->dns->stats.failed++;
        reply_rcode(s, c, from, msg, len, &q, OSB_DNS_RCODE_SERVFAIL);
        return;
    }
    forward(s, c, from, msg, len, &q);
}

static void on_udp_query(uv_udp_t *h, ssize_t n, const uv_buf_t *buf, const struct sockaddr *from,
                         unsigned flags)
{
    struct sbx *s = h->data;
    if (n <= 0 || !from || (flags & UV_UDP_PARTIAL))
        return;
    handle_query(s, NULL, from, (uint8_t *)buf->base, (size_t)n);
}

/* ---------- TCP clients ---------- */

static void tconn_freed(uv_handle_t *h)
{
    struct tconn *c = h->data;
    if (--c->handles == 0) {
        free(c->in);
        free(c);
    }
}

static void tconn_close(struct tconn *c)
{
    struct sbx *s = c->s;
    if (!s)
        return;
    for (struct fwd *f = s->fwds, *next; f; f = next) {
        next = f->next;
        if (f->conn == c)
            fwd_finish(f, NULL, 0); /* nobody to answer */
    }
    c->s = NULL;
    LIST_DEL(s->conns, c);
    s->nconns--;
    uv_close((uv_handle_t *)&c->h, tconn_freed);
    uv_close((uv_handle_t *)&c->idle, tconn_freed);
}

static void on_idle(uv_timer_t *t)
{
    struct tconn *c = t->data;
    if (c->pending)
        uv_timer_again(t);
    else
        tconn_close(c);
}

/* Take every complete length-prefixed message out of c->in. */
static void tconn_drain(struct tconn *c)
{
    size_t off = 0;
    while (c->s && c->inlen - off >= 2) {
        size_t len = (size_t)c->in[off] << 8 | c->in[off + 1];
        if (c->inlen - off < 2 + len)
            break;
        handle_query(c->s, c, NULL, c->in + off + 2, len);
        off += 2 + len;
    }
    memmove(c->in, c->in + off, c->inlen - off);
    c->inlen -= off;
}

static void on_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct tconn *c = st->data;
    if (!c->s)
        return;
    if (n < 0) {
        tconn_close(c);
        return;
    }
    size_t room = 2 + OSB_DNS_MAX_MSG - c->inlen;
    if ((size_t)n > room) { /* cannot happen with whole messages drained */
        tconn_close(c);
        return;
    }
    memcpy(c->in + c->inlen, buf->base, (size_t)n);
    c->inlen += (size_t)n;
    uv_timer_again(&c->idle);
    tconn_drain(c);
}

static void on_tcp_conn(uv_stream_t *srv, int status)
{
    struct sbx *s = srv->data;
    if (status < 0)
        return;
    struct tconn *c = osb_xcalloc(1, sizeof *c);
    uv_tcp_init(s->dns->loop, &c->h);
    uv_timer_init(s->dns->loop, &c->idle);
    c->h.data = c->idle.data = c;
    c->handles = 2;
    c->rbuf = s->rbuf;
    c->s = s;
    c->in = osb_xmalloc(2 + OSB_DNS_MAX_MSG);
    LIST_ADD(s->conns, c);
    s->nconns++;
    if (uv_accept(srv, (uv_stream_t *)&c->h) < 0 || s->nconns > OSB_DNS_MAX_TCP_CONNS ||
        uv_read_start((uv_stream_t *)&c->h, alloc_shared, on_tcp_read) < 0) {
        tconn_close(c);
        return;
    }
    uv_timer_start(&c->idle, on_idle, OSB_DNS_TCP_IDLE_MS, OSB_DNS_TCP_IDLE_MS);
}

/* ---------- sandboxes ---------- */

static struct sbx *find(struct osb_dns *dns, const char *key)
{
    for (struct sbx *s = dns->sbxs; s; s = s->next)
        if (strcmp(s->key, key) == 0)
            return s;
    return NULL;
}

static void sbx_freed(uv_handle_t *h)
{
    struct sbx *s = h->data;
    if (--s->handles == 0) {
        if (s->has_policy)
            osb_policy_free(&s->policy);
        free(s->key);
        free(s);
    }
}

static void set_policy(struct sbx *s, const struct osb_policy *p)
{
    if (s->has_policy)
        osb_policy_free(&s->policy);
    s->has_policy = p != NULL;
    if (p)
        osb_policy_copy(&s->policy, p);
}

static void sbx_close(struct sbx *s)
{
    while (s->fwds)
        fwd_finish(s->fwds, NULL, 0);
    while (s->conns)
        tconn_close(s->conns);
    LIST_DEL(s->dns->sbxs, s);
    s->handles = 2;
    uv_close((uv_handle_t *)&s->udp, sbx_freed);
    uv_close((uv_handle_t *)&s->tcp, sbx_freed);
}

static int sbx_listen(struct sbx *s, const struct sockaddr *addr, const char *ip,
                      struct osb_err *err)
{
    int r;
    if ((r = uv_udp_bind(&s->udp, addr, 0)) < 0 ||
        (r = uv_udp_recv_start(&s->udp, alloc_shared, on_udp_query)) < 0)
        return osb_err_set(err, OSB_E_SYS, "dns: listen on udp %s:%d: %s", ip, s->dns->port,
                           uv_strerror(r));
    if ((r = uv_tcp_bind(&s->tcp, addr, 0)) < 0 ||
        (r = uv_listen((uv_stream_t *)&s->tcp, 64, on_tcp_conn)) < 0)
        return osb_err_set(err, OSB_E_SYS, "dns: listen on tcp %s:%d: %s", ip, s->dns->port,
                           uv_strerror(r));
    return 0;
}

int osb_dns_serve(struct osb_dns *dns, const char *key, const char *listen_ipv4,
                  const struct osb_policy *policy, osb_dns_learn_fn learn, void *ud,
                  struct osb_err *err)
{
    struct sockaddr_in sin;
    if (find(dns, key))
        return osb_err_set(err, OSB_E_EXISTS, "dns: sandbox %s is already served", key);
    if (uv_ip4_addr(listen_ipv4, dns->port, &sin) < 0)
        return osb_err_set(err, OSB_E_INVALID, "dns: bad listen address %s", listen_ipv4);
    struct sbx *s = osb_xcalloc(1, sizeof *s);
    s->rbuf = dns->rbuf;
    s->dns = dns;
    s->key = osb_xstrdup(key);
    s->learn = learn;
    s->ud = ud;
    set_policy(s, policy);
    uv_udp_init(dns->loop, &s->udp);
    uv_tcp_init(dns->loop, &s->tcp);
    s->udp.data = s->tcp.data = s;
    LIST_ADD(dns->sbxs, s);
    if (sbx_listen(s, (struct sockaddr *)&sin, listen_ipv4, err) < 0) {
        sbx_close(s);
        return -1;
    }
    return 0;
}

int osb_dns_set_policy(struct osb_dns *dns, const char *key, const struct osb_policy *policy,
                       struct osb_err *err)
{
    struct sbx *s = find(dns, key);
    if (!s)
        return osb_err_set(err, OSB_E_NOTFOUND, "dns: sandbox %s is not served", key);
    set_policy(s, policy);
    return 0;
}

void osb_dns_stop(struct osb_dns *dns, const char *key)
{
    struct sbx *s = find(dns, key);
    if (s)
        sbx_close(s);
}

/* ---------- the forwarder ---------- */

static int parse_upstream(const char *spec, struct sockaddr_storage *ss, struct osb_err *err)
{
    char host[INET6_ADDRSTRLEN + 1];
    const char *colon, *h = spec;
    size_t hl;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || (close[1] && close[1] != ':'))
            return osb_err_set(err, OSB_E_INVALID, "dns: bad upstream \"%s\"", spec);
        h = spec + 1;
        hl = (size_t)(close - h);
        colon = close[1] ? close + 1 : NULL;
    } else {
        colon = strchr(spec, ':');
        hl = colon ? (size_t)(colon - spec) : strlen(spec);
    }
    long port = DEFAULT_PORT;
    if (colon) {
        char *end;
        port = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || port < 1 || port > 65535)
            return osb_err_set(err, OSB_E_INVALID, "dns: bad upstream port in \"%s\"", spec);
    }
    if (hl >= sizeof host)
        return osb_err_set(err, OSB_E_INVALID, "dns: bad upstream \"%s\"", spec);
    memcpy(host, h, hl);
    host[hl] = 0;
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0 ||
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0)
        return 0;
    return osb_err_set(err, OSB_E_INVALID, "dns: bad upstream address \"%s\"", spec);
}

int osb_dns_open(uv_loop_t *loop, const struct osb_dns_config *cfg, struct osb_dns **out,
                 struct osb_err *err)
{
    size_t n = 0;
    while (cfg->upstreams && cfg->upstreams[n])
        n++;
    if (n == 0)
        return osb_err_set(err, OSB_E_INVALID, "dns: no upstream resolver");
    struct osb_dns *dns = osb_xcalloc(1, sizeof *dns);
    dns->ups = osb_xcalloc(n, sizeof *dns->ups);
    for (size_t i = 0; i < n; i++) {
        if (parse_upstream(cfg->upstreams[i], &dns->ups[i], err) < 0) {
            free(dns->ups);
            free(dns);
            return -1;
        }
    }
    dns->nups = n;
    dns->loop = loop;
    dns->port = cfg->port ? cfg->port : DEFAULT_PORT;
    dns->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    *out = dns;
    return 0;
}

void osb_dns_close(struct osb_dns *dns)
{
    if (!dns)
        return;
    while (dns->sbxs)
        sbx_close(dns->sbxs);
    free(dns->ups);
    free(dns);
}

void osb_dns_get_stats(const struct osb_dns *dns, struct osb_dns_stats *out)
{
    *out = dns->stats;
}
