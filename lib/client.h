/* The client handle and its connection, shared by client.c (settings),
 * http.c (the transport) and call.c (endpoints). */
#ifndef OSBCL_CLIENT_H
#define OSBCL_CLIENT_H

#include "internal.h"

/* One connection: a socket, TLS on top when asked, and a read buffer. */
struct osbcl_io {
    int fd;
    void *ssl; /* SSL *, NULL for plain TCP */
    char *key; /* "tls|host|port" it is connected to (keep-alive reuse) */
    char buf[16384];
    size_t off, len; /* unread bytes: buf[off, len) */
};

/* A cached execd/egress endpoint of one sandbox. */
struct osbcl_ep {
    char *id;
    int port;
    struct osbcl_base base;
};

struct osbc_client {
    char *api_key, *ca_file, *user_agent;
    long timeout_ms;
    bool use_server_proxy, tls_insecure;
    struct osbcl_base server; /* from domain + protocol */
    struct osbcl_io *conn;    /* the keep-alive connection, or NULL */
    void *ssl_ctx;            /* SSL_CTX *, made on the first https connection */
    struct osbcl_ep *eps;
    size_t n_eps;
};

/* io.c: connect to b (TLS when b->tls). */
OSBCL_HIDDEN int osbcl_io_open(osbc_client *c, const struct osbcl_base *b, int timeout_ms,
                               struct osbcl_io **out, struct osbc_error *err);
/* Makes sure io->buf has unread bytes: 1 yes, 0 EOF, -1 error, -2 timeout. */
OSBCL_HIDDEN int osbcl_io_fill(struct osbcl_io *io, int timeout_ms, struct osbc_error *err);
/* Whether an idle keep-alive connection can take another request. */
OSBCL_HIDDEN bool osbcl_io_idle_ok(const struct osbcl_io *io);

/* tls.c: wrap a connected socket in TLS (verifying host unless insecure). */
OSBCL_HIDDEN int osbcl_tls_start(osbc_client *c, struct osbcl_io *io, const char *host,
                                 int timeout_ms, struct osbc_error *err);
/* Like read(2)/write(2) on the TLS stream: bytes, 0 at EOF, -1 with errno
 * EAGAIN (wait for *want_write ? POLLOUT : POLLIN) or another error. */
OSBCL_HIDDEN ssize_t osbcl_tls_read(struct osbcl_io *io, void *buf, size_t cap, bool *want_write);
OSBCL_HIDDEN ssize_t osbcl_tls_write(struct osbcl_io *io, const void *buf, size_t len,
                                     bool *want_read);
OSBCL_HIDDEN bool osbcl_tls_pending(const struct osbcl_io *io);
OSBCL_HIDDEN void osbcl_tls_free(struct osbcl_io *io);
OSBCL_HIDDEN void osbcl_tls_ctx_free(void *ctx);

#endif
