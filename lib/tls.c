/* TLS for https servers and endpoints (OpenSSL). The context is made on the
 * first https connection, so plain-http clients never initialise OpenSSL. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "client.h"

static int tls_fail(struct osbc_error *err, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return osbcl_fail(err, OSBC_E_TLS, "%s%s%s", what, *buf ? ": " : "", buf);
}

static int make_ctx(osbc_client *c, struct osbc_error *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return tls_fail(err, "cannot create a TLS context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (c->tls_insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = c->ca_file ? SSL_CTX_load_verify_locations(ctx, c->ca_file, NULL)
                            : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            SSL_CTX_free(ctx);
            return tls_fail(err, c->ca_file ? "cannot load the CA file" : "no system CAs");
        }
    }
    c->ssl_ctx = ctx;
    return 0;
}

int osbcl_tls_start(osbc_client *c, struct osbcl_io *io, const char *host, int timeout_ms,
                    struct osbc_error *err)
{
    if (!c->ssl_ctx && make_ctx(c, err) < 0)
        return OSBC_E_TLS;
    SSL *ssl = SSL_new(c->ssl_ctx);
    if (!ssl)
        return tls_fail(err, "cannot create a TLS session");
    io->ssl = ssl;
    SSL_set_fd(ssl, io->fd);
    SSL_set_tlsext_host_name(ssl, host);
    if (!c->tls_insecure) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        if (!X509_VERIFY_PARAM_set1_ip_asc(vp, host))
            SSL_set1_host(ssl, host);
    }
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            return 0;
        int e = SSL_get_error(ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            long v = SSL_get_verify_result(ssl);
            if (v != X509_V_OK)
                return osbcl_fail(err, OSBC_E_TLS, "TLS handshake with %s: certificate: %s", host,
                                  X509_verify_cert_error_string(v));
            char what[300];
            snprintf(what, sizeof what, "TLS handshake with %s failed", host);
            return tls_fail(err, what);
        }
        struct pollfd p = {.fd = io->fd, .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};
        int n = poll(&p, 1, timeout_ms);
        if (n == 0)
            return osbcl_fail(err, OSBC_E_TIMEOUT, "TLS handshake with %s timed out", host);
        if (n < 0 && errno != EINTR)
            return osbcl_fail_sys(err, OSBC_E_TLS, "poll");
    }
}

/* Maps SSL_get_error to the read(2)-like contract of client.h. */
static ssize_t tls_result(SSL *ssl, int r, bool *want_other, bool reading)
{
    if (r > 0)
        return r;
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_WANT_READ:
        *want_other = !reading;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want_other = reading;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_SYSCALL:
        if (errno == 0)
            return 0; /* an EOF without close_notify: treat as the end */
        return -1;
    default: errno = EPROTO; return -1;
    }
}

ssize_t osbcl_tls_read(struct osbcl_io *io, void *buf, size_t cap, bool *want_write)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(io->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
    return tls_result(io->ssl, r, want_write, true);
}

ssize_t osbcl_tls_write(struct osbcl_io *io, const void *buf, size_t len, bool *want_read)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(io->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return tls_result(io->ssl, r, want_read, false);
}

bool osbcl_tls_pending(const struct osbcl_io *io)
{
    return SSL_pending(io->ssl) > 0;
}

void osbcl_tls_free(struct osbcl_io *io)
{
    SSL_free(io->ssl);
    io->ssl = NULL;
}

void osbcl_tls_ctx_free(void *ctx)
{
    SSL_CTX_free(ctx);
}
