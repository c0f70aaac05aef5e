/* The proxy's listener: one accept thread, one thread per connection (a
 * connection's work is sequential and blocking, with deadlines), and the
 * two TLS contexts they share. */
#include "vault/proxy_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xalloc.h"

static const unsigned char alpn_h1[] = "\x08http/1.1";

static int ssl_fail(struct osb_err *err, const char *what)
{
    char buf[256] = "OpenSSL failed";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return osb_err_set(err, OSB_E_INVALID, "%s: %s", what, buf);
}

static int make_ctxs(struct osb_vault_proxy *p, struct osb_err *err)
{
    p->to_sandbox = SSL_CTX_new(TLS_server_method());
    p->to_upstream = SSL_CTX_new(TLS_client_method());
    if (!p->to_sandbox || !p->to_upstream)
        return ssl_fail(err, "vault proxy: TLS context");
    SSL_CTX_set_min_proto_version(p->to_sandbox, TLS1_2_VERSION);
    SSL_CTX_set_min_proto_version(p->to_upstream, TLS1_2_VERSION);
    SSL_CTX_set_alpn_select_cb(p->to_sandbox, osb_px_alpn, NULL);
    /* AES-128-GCM first (as secure, a third less work per byte than
     * AES-256): the proxy decrypts and encrypts every byte it relays. Our
     * order decides toward the sandbox; the upstream usually honours it. */
    static const char suites[] =
        "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
    if (SSL_CTX_set_ciphersuites(p->to_sandbox, suites) != 1 ||
        SSL_CTX_set_ciphersuites(p->to_upstream, suites) != 1)
        return ssl_fail(err, "vault proxy: TLS 1.3 cipher suites");
    SSL_CTX_set_options(p->to_sandbox, SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Read what the socket has, not a record header then its body: half the
     * read calls on a download (vio.c checks SSL_has_pending before poll). */
    SSL_CTX_set_read_ahead(p->to_sandbox, 1);
    SSL_CTX_set_read_ahead(p->to_upstream, 1);
    SSL_CTX_set_default_read_buffer_len(p->to_sandbox, 65536);
    SSL_CTX_set_default_read_buffer_len(p->to_upstream, 65536);
    SSL_CTX_set_verify(p->to_upstream, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_default_verify_paths(p->to_upstream) != 1)
        return ssl_fail(err, "vault proxy: the host's trust store");
    const char *ca = p->cfg.upstream_ca_file;
    if (ca && *ca && SSL_CTX_load_verify_locations(p->to_upstream, ca, NULL) != 1)
        return ssl_fail(err, "[credential_vault] upstream_ca_file");
    osb_tls_sessions_attach(p->sessions, p->to_upstream);
    if (SSL_CTX_set_alpn_protos(p->to_upstream, alpn_h1, sizeof alpn_h1 - 1) != 0)
        return ssl_fail(err, "vault proxy: ALPN");
    return 0;
}

static void *conn_main(void *arg)
{
    struct px_conn *c = arg;
    struct osb_vault_proxy *p = c->px;
    osb_px_serve(c);
    pthread_mutex_lock(&p->mu);
    for (struct px_conn **q = &p->conns; *q; q = &(*q)->next)
        if (*q == c) {
            *q = c->next;
            break;
        }
    if (--p->nconns == 0)
        pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->mu);
    free(c);
    return NULL;
}

static void start_conn(struct osb_vault_proxy *p, int fd, uint32_t peer)
{
    struct px_conn *c = osb_xcalloc(1, sizeof *c);
    c->px = p;
    c->cfd = fd;
    c->ufd = -1;
    c->peer = peer;
    pthread_mutex_lock(&p->mu);
    unsigned mine = 0;
    for (struct px_conn *o = p->conns; o; o = o->next)
        mine += o->peer == peer;
    bool room = !p->stopping && p->nconns < PX_MAX_CONNS && mine < PX_MAX_PER_SANDBOX;
    if (room) {
        c->next = p->conns;
        p->conns = c;
        p->nconns++;
    }
    pthread_mutex_unlock(&p->mu);
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 512 * 1024);
    if (room && pthread_create(&t, &a, conn_main, c) == 0) {
        pthread_attr_destroy(&a);
        return;
    }
    pthread_attr_destroy(&a);
    if (room) { /* no thread: undo */
        pthread_mutex_lock(&p->mu);
        p->conns = c->next;
        p->nconns--;
        pthread_mutex_unlock(&p->mu);
    }
    close(fd);
    free(c);
}

static void *accept_main(void *arg)
{
    struct osb_vault_proxy *p = arg;
    for (;;) {
        struct sockaddr_in peer = {0};
        socklen_t pl = sizeof peer;
        int fd = accept4(p->lfd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            int one = 1; /* heads and bodies go as written, no Nagle delay */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            start_conn(p, fd, peer.sin_addr.s_addr);
            continue;
        }
        if (p->stopping || errno == EINVAL || errno == EBADF)
            return NULL;
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
            usleep(10000); /* out of descriptors: let connections finish */
    }
}

static int listen_any(uint16_t *port, struct osb_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return osb_err_sys(err, "vault proxy: socket");
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 512) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        osb_err_sys(err, "vault proxy: listen");
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

int osb_vault_proxy_start(const struct osb_vault_proxy_cfg *cfg, uint16_t *port,
                          struct osb_vault_proxy **out, struct osb_err *err)
{
    *out = NULL;
    struct osb_vault_proxy *p = osb_xcalloc(1, sizeof *p);
    p->cfg = *cfg;
    p->lfd = -1;
    pthread_mutex_init(&p->mu, NULL);
    p->sessions = osb_tls_sessions_new();
    pthread_cond_init(&p->idle, NULL);
    int r = make_ctxs(p, err);
    if (r == 0 && (p->lfd = listen_any(port, err)) < 0)
        r = -1;
    if (r == 0 && pthread_create(&p->acceptor, NULL, accept_main, p) != 0)
        r = osb_err_set(err, OSB_E_SYS, "vault proxy: cannot start its thread");
    if (r < 0) {
        if (p->lfd >= 0)
            close(p->lfd);
        p->lfd = -1;
        SSL_CTX_free(p->to_sandbox);
        SSL_CTX_free(p->to_upstream);
        pthread_mutex_destroy(&p->mu);
        osb_tls_sessions_free(p->sessions);
        pthread_cond_destroy(&p->idle);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void osb_vault_proxy_stop(struct osb_vault_proxy *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_mutex_unlock(&p->mu);
    shutdown(p->lfd, SHUT_RDWR); /* wakes accept */
    pthread_join(p->acceptor, NULL);
    close(p->lfd);
    pthread_mutex_lock(&p->mu);
    for (struct px_conn *c = p->conns; c; c = c->next) {
        shutdown(c->cfd, SHUT_RDWR);
        if (c->ufd >= 0)
            shutdown(c->ufd, SHUT_RDWR);
    }
    while (p->nconns)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
    SSL_CTX_free(p->to_sandbox);
    SSL_CTX_free(p->to_upstream);
    osb_tls_sessions_free(p->sessions);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->idle);
    free(p);
}
