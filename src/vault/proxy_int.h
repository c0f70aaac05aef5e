/* Shared by proxy.c (listener, threads, TLS contexts) and proxy_conn.c
 * (what one connection does). Not for other modules. */
#ifndef OSB_VAULT_PROXY_INT_H
#define OSB_VAULT_PROXY_INT_H
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "vault/proxy.h"
#include "vault/sessions.h"

#define PX_MAX_CONNS 1024
#define PX_MAX_PER_SANDBOX 256 /* one sandbox cannot take every slot */
#define PX_HELLO_MS 10000      /* ClientHello and handshakes */
#define PX_CONNECT_MS 10000    /* to the upstream */
#define PX_IDLE_MS 300000      /* a silent peer (long polls and streams stay alive) */

struct px_conn;

struct osb_vault_proxy {
    struct osb_vault_proxy_cfg cfg;
    int lfd;
    pthread_t acceptor;
    SSL_CTX *to_sandbox; /* server side, a leaf per connection */
    SSL_CTX *to_upstream;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    struct px_conn *conns; /* open connections, cut at stop */
    unsigned nconns;
    bool stopping;
    struct osb_tls_sessions *sessions; /* of the upstreams (sessions.c) */
};

struct px_conn {
    struct px_conn *next;
    struct osb_vault_proxy *px;
    int cfd, ufd;  /* ufd: -1 until connected */
    uint32_t peer; /* the sandbox's address (network order) */
};

/* The sandbox side's ALPN choice (SSL_CTX_set_alpn_select_cb): h2 when the
 * upstream takes it too, else HTTP/1.1. */
int osb_px_alpn(SSL *s, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                unsigned inlen, void *arg);
/* The thread body of one accepted connection; closes its fds. */
void osb_px_serve(struct px_conn *c);
#endif
