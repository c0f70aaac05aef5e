/* What the proxy does with one redirected connection (see proxy.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "vault/ca.h"
#include "vault/h1.h"
#include "vault/h2.h"
#include "vault/proxy_int.h"
#include "vault/registry.h"
#include "vault/tlshello.h"
#include "vault/vault.h"
#include "vault/vio.h"

#define MAX_INJECT 16

/* One connection's state. */
struct px {
    struct px_conn *pc;
    struct osb_vault_proxy *p;
    struct sockaddr_in peer, dst;
    bool tls;
    char sni[256];
    char session_key[300]; /* "sni@address": the upstream's TLS session */
    struct osb_vio c, u;   /* the sandbox, the upstream (fd -1 until connected) */
    struct osb_vault_view view;
    int u_fail;           /* the early upstream attempt's failure (upstream_tls) */
    bool h2;              /* both sides chose h2 */
    const char **secrets; /* h2: what is redacted (the current vault's) */
    const char *add[2 * MAX_INJECT + 1];
    struct osb_h1_in cin, uin;
    struct osb_h1_msg req, resp;
};

/* What the proxy does with one request: forward it (status 0) with b's
 * credential (b NULL: none), or refuse it with this answer. */
struct verdict {
    int status;
    const char *reason, *code, *message;
    const struct osb_vault_binding *b;
};

static void report(struct px *x, const char *binding, const char *host, const char *method,
                   const char *path, int status, const char *outcome)
{
    if (!x->p->cfg.on_event)
        return;
    struct osb_vault_event ev = {x->view.id, binding, host, method, path, status, outcome};
    x->p->cfg.on_event(x->p->cfg.ud, &ev);
}

/* The proxy's own refusal, reported and answered; the connection ends. */
static void refuse(struct px *x, int status, const char *reason, const char *code,
                   const char *message, const char *host, const char *method, const char *path)
{
    report(x, NULL, host, method, path, status, code);
    osb_h1_answer(&x->c, status, reason, code, message);
}

/* ------------------------------------------------------------ plumbing */

static int original_dst(int fd, struct sockaddr_in *dst)
{
    socklen_t l = sizeof *dst;
    return getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, dst, &l);
}

/* Peeks at the ClientHello without consuming it, so a passed-through
 * connection starts from its first byte. SO_RCVLOWAT makes poll wait for
 * more than what is already there. */
static enum osb_hello peek_sni(int fd, char name[256])
{
    unsigned char buf[16384];
    enum osb_hello h;
    int low;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        ssize_t n = poll(&pf, 1, PX_HELLO_MS) > 0 ? recv(fd, buf, sizeof buf, MSG_PEEK) : -1;
        if (n <= 0) {
            h = OSB_HELLO_BAD;
            break;
        }
        if ((h = osb_tls_hello_sni(buf, (size_t)n, name)) != OSB_HELLO_MORE)
            break;
        if (n == (ssize_t)sizeof buf) { /* a hello this big is not one we intercept */
            h = OSB_HELLO_BAD;
            break;
        }
        low = (int)n + 1;
        setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &low, sizeof low);
    }
    low = 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &low, sizeof low);
    return h;
}

static int connect_upstream(struct px *x)
{
    int fd = osb_vio_connect(&x->dst, PX_CONNECT_MS);
    if (fd < 0)
        return -1;
    pthread_mutex_lock(&x->p->mu);
    x->pc->ufd = fd;
    pthread_mutex_unlock(&x->p->mu);
    x->u = (struct osb_vio){.fd = fd, .timeout_ms = PX_IDLE_MS};
    x->uin.io = &x->u;
    x->uin.off = x->uin.len = 0;
    return 0;
}

/* Untouched: the bytes go both ways as they are (nothing was consumed). */
static void pass_through(struct px *x)
{
    if (connect_upstream(x) == 0)
        osb_vio_relay(&x->c, &x->u, PX_IDLE_MS);
}

/* TLS to the upstream for the SNI name, verified against the trust store:
 * 0, -1 unreachable, -2 its certificate does not verify for the name. */
static int upstream_tls(struct px *x, bool offer_h2)
{
    static const unsigned char both[] = "\x02h2\x08http/1.1";
    if (connect_upstream(x) < 0)
        return -1;
    SSL *s = SSL_new(x->p->to_upstream);
    if (!s)
        return -1;
    x->u.ssl = s;
    x->u.timeout_ms = PX_HELLO_MS;
    if (osb_vio_tls(&x->u, s) < 0)
        return -1;
    if (offer_h2 && SSL_set_alpn_protos(s, both, sizeof both - 1) != 0)
        return -1;
    SSL_set_tlsext_host_name(s, x->sni);
    SSL_set1_host(s, x->sni);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &x->dst.sin_addr, ip, sizeof ip);
    snprintf(x->session_key, sizeof x->session_key, "%s@%s", x->sni, ip);
    osb_tls_sessions_use(x->p->sessions, s, x->session_key);
    int r = osb_vio_handshake(&x->u, 0);
    x->u.timeout_ms = PX_IDLE_MS;
    if (r < 0)
        return SSL_get_verify_result(s) != X509_V_OK ? -2 : -1;
    return SSL_get_verify_result(s) == X509_V_OK ? 0 : -2;
}

static int accept_tls(struct px *x)
{
    X509 *leaf = NULL;
    struct osb_err err = {0};
    SSL *s = SSL_new(x->p->to_sandbox);
    if (!s || osb_vault_ca_leaf(x->p->cfg.ca, x->sni, &leaf, &err) < 0) {
        SSL_free(s);
        return -1;
    }
    x->c.ssl = s;
    SSL_set_app_data(s, x);
    int ok = osb_vio_tls(&x->c, s) == 0 && SSL_use_certificate(s, leaf) == 1 &&
             SSL_use_PrivateKey(s, osb_vault_ca_leaf_key(x->p->cfg.ca)) == 1;
    X509_free(leaf);
    x->c.timeout_ms = PX_HELLO_MS;
    int r = ok ? osb_vio_handshake(&x->c, 1) : -1;
    x->c.timeout_ms = PX_IDLE_MS;
    return r;
}

/* ------------------------------------------------------------ requests */

/* "name[:port]" of a Host header or an authority: 0, or -1 when it is not
 * a DNS name with an optional port (an IP literal in brackets is not). */
static int parse_authority(const char *v, size_t n, char name[256], int *port)
{
    size_t i = 0;
    while (i < n && v[i] != ':')
        i++;
    if (i == 0 || i > 253)
        return -1;
    for (size_t k = 0; k < i; k++) {
        char ch = v[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.' || ch == '_'))
            return -1;
        name[k] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    }
    name[i] = 0;
    if (i > 1 && name[i - 1] == '.')
        name[i - 1] = 0;
    if (i == n)
        return 0;
    int p = 0;
    for (size_t k = i + 1; k < n; k++) {
        if (v[k] < '0' || v[k] > '9' || p > 65535)
            return -1;
        p = p * 10 + (v[k] - '0');
    }
    if (i + 1 == n || p < 1 || p > 65535)
        return -1;
    *port = p;
    return 0;
}

/* The request's host (Host, which an absolute-form target must agree
 * with) and path (no query): 0, or -1 when they are missing or disagree. */
static int request_host_path(const struct osb_h1_msg *m, const char *scheme, char host[256],
                             int *port, char *path, size_t path_size)
{
    size_t hl, tl;
    const char *h = osb_h1_get(m, "Host", &hl), *t = osb_h1_target(m, &tl);
    if (!h || osb_h1_count(m, "Host") != 1 || parse_authority(h, hl, host, port) < 0 || tl == 0)
        return -1; /* two Host fields: which one the upstream reads is its choice */
    size_t sl = strlen(scheme);
    if (t[0] != '/') { /* absolute form: scheme://authority/path */
        char h2[256];
        int p2 = *port;
        if (tl < sl + 3 || strncasecmp(t, scheme, sl) != 0 || memcmp(t + sl, "://", 3) != 0)
            return -1;
        const char *a = t + sl + 3, *end = memchr(a, '/', tl - sl - 3);
        if (!end || parse_authority(a, (size_t)(end - a), h2, &p2) < 0 || strcmp(h2, host) ||
            p2 != *port)
            return -1;
        tl -= (size_t)(end - t);
        t = end;
    }
    size_t pl = strcspn(t, "?#");
    pl = pl < tl ? pl : tl;
    if (pl >= path_size)
        return -1;
    memcpy(path, t, pl);
    path[pl] = 0;
    return 0;
}

/* The credential's headers, as name/value pairs for osb_h1_edit.add. */
static size_t inject_list(const struct osb_vault *v, const struct osb_vault_binding *b,
                          const char *out[2 * MAX_INJECT + 1])
{
    struct osb_vault_header hv[MAX_INJECT];
    size_t n = 0;
    if (!b || osb_vault_render(v, b, hv, MAX_INJECT, &n) < 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hv[i].name;
        out[2 * i + 1] = hv[i].value;
    }
    out[2 * n] = NULL;
    return n;
}

/* The upstream's answer to one request, relayed: true when the connection
 * may carry another request. */
static bool relay_response(struct px *x, bool head_req, const struct osb_h1_edit *redact,
                           const char *binding, const char *host, const char *method,
                           const char *path)
{
    for (;;) {
        osb_h1_begin(&x->resp, false, head_req);
        int r = osb_h1_head(&x->uin, &x->resp);
        if (r != OSB_H1_OK) {
            refuse(x, 502, "Bad Gateway", "VAULT::UPSTREAM_FAILED",
                   "the upstream closed or sent a malformed answer", host, method, path);
            return false;
        }
        int st = x->resp.p.status_code;
        if (osb_h1_write_head(&x->c, &x->resp, redact) < 0)
            return false;
        if (st >= 100 && st < 200 && st != 101)
            continue; /* an interim answer; the real one follows */
        report(x, binding, host, method, path, st, binding ? "injected" : "no-binding");
        if (st == 101) { /* a protocol switch: what is buffered first, then both ways */
            /* The parser ends the head (its last LF) only when resumed. */
            if (osb_h1_body(&x->uin, &x->resp, &x->c) != OSB_H1_OK)
                return false;
            size_t cl = x->cin.len - x->cin.off, ul = x->uin.len - x->uin.off;
            if ((cl && osb_vio_write(&x->u, x->cin.buf + x->cin.off, cl) < 0) ||
                (ul && osb_vio_write(&x->c, x->uin.buf + x->uin.off, ul) < 0))
                return false;
            osb_vio_relay(&x->c, &x->u, PX_IDLE_MS);
            return false;
        }
        if (osb_h1_body(&x->uin, &x->resp, &x->c) != OSB_H1_OK)
            return false;
        return http_should_keep_alive(&x->resp.p) != 0;
    }
}

static bool forward(struct px *x, const struct osb_vault_binding *b, const char *scheme,
                    const char *host, const char *method, const char *path);

/* The sandbox's state for this request's name (re-read per request, so a
 * vault change applies to the next request on a kept-alive connection). */
static void refresh_view(struct px *x, const char *host, int port)
{
    if (x->view.vault)
        osb_vault_unref(x->view.vault);
    osb_vault_reg_view(x->p->cfg.reg, x->peer.sin_addr, host, port, x->dst.sin_addr, &x->view);
}

/* The proxy's decision for a request to host:port (Host and SNI already
 * agree for TLS): the sandbox's state is read again for each request, so a
 * vault change applies to the next request on a kept-alive connection. */
static void judge(struct px *x, const char *scheme, const char *host, int port, const char *method,
                  const char *path, struct verdict *v)
{
    *v = (struct verdict){0};
    if (x->tls && (strcmp(host, x->sni) != 0 || port != 443)) {
        *v = (struct verdict){421, "Misdirected Request", "VAULT::HOST_MISMATCH",
                              "Host does not name the server this TLS connection was opened for; "
                              "nothing was sent",
                              NULL};
        return;
    }
    refresh_view(x, host, port);
    if (x->view.broken) {
        *v = (struct verdict){502, "Bad Gateway", "VAULT::UNAVAILABLE",
                              "the sandbox's credential vault cannot be read; nothing was sent",
                              NULL};
        return;
    }
    if (x->view.bound && !x->view.learned) {
        *v = (struct verdict){403, "Forbidden", "VAULT::UNVERIFIED_DESTINATION",
                              "the dialled address was not resolved for this name by the "
                              "sandbox's DNS; nothing was sent",
                              NULL};
        return;
    }
    const struct osb_vault_binding *b = NULL;
    int m = x->view.vault && x->view.bound
                ? osb_vault_match(x->view.vault, scheme, host, port, method, path, &b)
                : 0;
    if (m == 2)
        *v = (struct verdict){403, "Forbidden", "VAULT::AMBIGUOUS_BINDING",
                              "more than one credential binding matches this request; nothing "
                              "was sent",
                              NULL};
    else if (m == 1)
        v->b = b;
}

static void drop_upstream(struct px *x)
{
    SSL_free(x->u.ssl);
    x->u.ssl = NULL;
    pthread_mutex_lock(&x->p->mu);
    if (x->pc->ufd >= 0)
        close(x->pc->ufd);
    x->pc->ufd = -1;
    pthread_mutex_unlock(&x->p->mu);
    x->u.fd = -1;
}

static bool open_upstream(struct px *x, const char *host, const char *method, const char *path)
{
    if (x->u.fd >= 0)
        return true;
    int r = x->u_fail ? x->u_fail : x->tls ? upstream_tls(x, false) : connect_upstream(x);
    x->u_fail = 0;
    if (r < 0 && x->u.fd >= 0)
        drop_upstream(x);
    if (r == -2)
        refuse(x, 502, "Bad Gateway", "VAULT::UPSTREAM_UNTRUSTED",
               "the upstream's certificate does not verify for this name; nothing was sent", host,
               method, path);
    else if (r < 0)
        refuse(x, 502, "Bad Gateway", "VAULT::UPSTREAM_UNREACHABLE",
               "the upstream cannot be reached", host, method, path);
    return r == 0;
}

/* One request and its answer: true when the connection may go on. */
static bool one_request(struct px *x, const char *scheme, int def_port)
{
    osb_h1_begin(&x->req, true, false);
    int r = osb_h1_head(&x->cin, &x->req);
    char host[256] = "", path[8192] = "";
    int port = def_port;
    const char *method = r == OSB_H1_OK ? osb_h1_method(&x->req) : "-";
    if (r == OSB_H1_EOF || r == OSB_H1_IO)
        return false;
    if (r == OSB_H1_BAD || x->req.p.method == HTTP_CONNECT ||
        request_host_path(&x->req, scheme, host, &port, path, sizeof path) < 0) {
        refuse(x, 400, "Bad Request", "VAULT::BAD_REQUEST",
               "a malformed request, or one without a usable Host and target", x->sni, method,
               path);
        return false;
    }
    struct verdict v;
    judge(x, scheme, host, port, method, path, &v);
    if (v.status) {
        refuse(x, v.status, v.reason, v.code, v.message, host, method, path);
        return false;
    }
    if (!open_upstream(x, host, method, path))
        return false;
    return forward(x, v.b, scheme, host, method, path);
}

/* Sends the request on with the credential (b, may be NULL) and relays the
 * answer. */
static bool forward(struct px *x, const struct osb_vault_binding *b, const char *scheme,
                    const char *host, const char *method, const char *path)
{
    (void)scheme;
    const char *add[2 * MAX_INJECT + 1];
    inject_list(x->view.vault, b, add);
    static const char *const drop[] = {"Expect", NULL};
    size_t el;
    const char *expect = osb_h1_get(&x->req, "Expect", &el);
    /* 100-continue is answered here: the client sends its body to us. */
    if (expect && el == 12 && strncasecmp(expect, "100-continue", 12) == 0 &&
        osb_vio_write(&x->c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
        return false;
    struct osb_h1_edit ed = {.drop = drop, .add = add};
    if (osb_h1_write_head(&x->u, &x->req, &ed) < 0 ||
        osb_h1_body(&x->cin, &x->req, &x->u) != OSB_H1_OK)
        return false;
    size_t ns = x->view.vault ? osb_vault_nsecrets(x->view.vault) : 0;
    const char **sec = ns ? osb_xcalloc(ns, sizeof *sec) : NULL;
    for (size_t i = 0; i < ns; i++)
        sec[i] = osb_vault_secret(x->view.vault, i);
    struct osb_h1_edit red = {.secret = sec, .n_secret = ns};
    bool keep = relay_response(x, x->req.p.method == HTTP_HEAD, &red,
                               b ? osb_vault_binding_name(b) : NULL, host, method, path);
    free(sec);
    return keep && http_should_keep_alive(&x->req.p);
}

/* ------------------------------------------------------------ HTTP/2 */

/* A request's path for matching and the audit: no query, no fragment. */
static bool path_of(const char *target, char *path, size_t size)
{
    size_t pl = strcspn(target, "?#");
    if (pl >= size)
        return false;
    memcpy(path, target, pl);
    path[pl] = 0;
    return true;
}

static void h2_request(void *ud, const struct osb_h2_req *rq, struct osb_h2_verdict *out)
{
    struct px *x = ud;
    char host[256] = "", path[8192] = "";
    int port = 443;
    struct verdict v = {400, "Bad Request", "VAULT::BAD_REQUEST",
                        "a malformed request, or one without a usable :authority and :path", NULL};
    const char *method = rq->method ? rq->method : "-";
    if (rq->method && strcmp(rq->scheme, "https") == 0 &&
        parse_authority(rq->authority, strlen(rq->authority), host, &port) == 0 &&
        path_of(rq->path, path, sizeof path))
        judge(x, "https", host, port, method, path, &v);
    *out = (struct osb_h2_verdict){0};
    if (v.status) {
        report(x, NULL, *host ? host : x->sni, method, path, v.status, v.code);
        *out = (struct osb_h2_verdict){.status = v.status, .code = v.code, .message = v.message};
        return;
    }
    inject_list(x->view.vault, v.b, x->add);
    out->add = x->add;
    out->binding = v.b ? osb_vault_binding_name(v.b) : NULL;
}

static void h2_answered(void *ud, const char *binding, const char *authority, const char *method,
                        const char *target, int status)
{
    char host[256] = "", path[8192] = "";
    int port = 443;
    if (parse_authority(authority, strlen(authority), host, &port) < 0)
        snprintf(host, sizeof host, "%s", ((struct px *)ud)->sni);
    path_of(target, path, sizeof path);
    report(ud, binding, host, method, path, status, binding ? "injected" : "no-binding");
}

static const char *const *h2_secrets(void *ud, size_t *n)
{
    struct px *x = ud;
    *n = x->view.vault ? osb_vault_nsecrets(x->view.vault) : 0;
    free(x->secrets);
    x->secrets = *n ? osb_xcalloc(*n, sizeof *x->secrets) : NULL;
    for (size_t i = 0; i < *n; i++)
        x->secrets[i] = osb_vault_secret(x->view.vault, i);
    return x->secrets;
}

static bool offers(const unsigned char *in, unsigned inlen, const char *proto)
{
    size_t pl = strlen(proto);
    for (unsigned i = 0; i < inlen; i += 1u + in[i])
        if (in[i] == pl && i + 1 + pl <= inlen && memcmp(in + i + 1, proto, pl) == 0)
            return true;
    return false;
}

/* The sandbox's protocol is the upstream's: when the sandbox offers h2, the
 * upstream is reached now (during the sandbox's handshake) with the same
 * offer, and h2 is chosen only when both agree; otherwise HTTP/1.1. */
int osb_px_alpn(SSL *s, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                unsigned inlen, void *arg)
{
    (void)arg;
    struct px *x = SSL_get_app_data(s);
    if (x && offers(in, inlen, "h2") && !x->view.broken && x->view.bound && x->view.learned &&
        x->u.fd < 0) {
        int r = upstream_tls(x, true);
        const unsigned char *sel = NULL;
        unsigned sl = 0;
        if (r == 0)
            SSL_get0_alpn_selected(x->u.ssl, &sel, &sl);
        if (r == 0 && sl == 2 && memcmp(sel, "h2", 2) == 0) {
            x->h2 = true;
            *out = (const unsigned char *)"h2";
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        x->u_fail = r; /* the HTTP/1.1 path answers it on the first request */
    }
    if (!offers(in, inlen, "http/1.1"))
        return SSL_TLSEXT_ERR_NOACK;
    *out = (const unsigned char *)"http/1.1";
    *outlen = 8;
    return SSL_TLSEXT_ERR_OK;
}

static void serve_h2(struct px *x)
{
    const struct osb_h2_ops ops = {x, h2_request, h2_answered, h2_secrets};
    osb_h2_relay(&x->c, &x->u, &ops, PX_IDLE_MS);
}

/* ------------------------------------------------------------ a connection */

/* Whether a 443 connection is for us: its SNI is a name the sandbox's vault
 * binds. Anything else (no SNI, not TLS, unbound) passes through. */
static bool intercepted(struct px *x)
{
    if (peek_sni(x->c.fd, x->sni) != OSB_HELLO_SNI)
        return false;
    refresh_view(x, x->sni, 443);
    return x->view.bound || x->view.broken;
}

void osb_px_serve(struct px_conn *pc)
{
    struct px *x = osb_xcalloc(1, sizeof *x);
    x->pc = pc;
    x->p = pc->px;
    x->c = (struct osb_vio){.fd = pc->cfd, .timeout_ms = PX_IDLE_MS};
    x->u = (struct osb_vio){.fd = -1, .timeout_ms = PX_IDLE_MS};
    x->cin.io = &x->c;
    socklen_t pl = sizeof x->peer;
    int port = 0;
    if (getpeername(pc->cfd, (struct sockaddr *)&x->peer, &pl) == 0 &&
        original_dst(pc->cfd, &x->dst) == 0)
        port = ntohs(x->dst.sin_port);
    if (port == 443) {
        if (!intercepted(x))
            pass_through(x);
        else if (accept_tls(x) == 0) {
            x->tls = true;
            if (x->h2)
                serve_h2(x);
            else
                while (one_request(x, "https", 443))
                    ;
        }
    } else if (port == 80) {
        while (one_request(x, "http", 80))
            ;
    } else if (port) {
        pass_through(x);
    }
    if (x->view.vault)
        osb_vault_unref(x->view.vault);
    free(x->secrets);
    SSL_free(x->c.ssl);
    SSL_free(x->u.ssl);
    pthread_mutex_lock(&x->p->mu);
    if (pc->ufd >= 0)
        close(pc->ufd);
    pc->ufd = -1;
    close(pc->cfd);
    pc->cfd = -1;
    pthread_mutex_unlock(&x->p->mu);
    free(x);
}
