#include "vault/vio.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#define WOULD_BLOCK OSB_VIO_AGAIN

static int wait_fd(int fd, short ev, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = ev};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : -1;
}

/* One attempt: > 0, 0 (EOF), -1, or WOULD_BLOCK with *ev the event to
 * wait for. */
static ssize_t try_read(struct osb_vio *v, void *buf, size_t n, short *ev)
{
    *ev = POLLIN;
    if (!v->ssl) {
        ssize_t r = read(v->fd, buf, n);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            return WOULD_BLOCK;
        return r < 0 ? -1 : r;
    }
    ERR_clear_error();
    int r = SSL_read(v->ssl, buf, n > (1u << 30) ? 1 << 30 : (int)n);
    if (r > 0) {
        /* One record per SSL_read: take the others already read too, so
         * what is relayed goes on in one write, not one per 16 KiB. */
        size_t got = (size_t)r;
        while (got < n && SSL_has_pending(v->ssl)) {
            r = SSL_read(v->ssl, (char *)buf + got,
                         n - got > (1u << 30) ? 1 << 30 : (int)(n - got));
            if (r <= 0) {
                ERR_clear_error(); /* the next call sees what stopped this one */
                break;
            }
            got += (size_t)r;
        }
        return (ssize_t)got;
    }
    switch (SSL_get_error(v->ssl, r)) {
    case SSL_ERROR_WANT_READ: return WOULD_BLOCK;
    case SSL_ERROR_WANT_WRITE: *ev = POLLOUT; return WOULD_BLOCK;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL: /* a peer that closes without close_notify: end of stream */
        return ERR_peek_error() == 0 && (r == 0 || errno == 0) ? 0 : -1;
    default:
        /* OpenSSL 3 reports a missing close_notify as an SSL error. */
        return ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING ? 0 : -1;
    }
}

ssize_t osb_vio_try_read(struct osb_vio *v, void *buf, size_t n)
{
    short ev;
    return try_read(v, buf, n, &ev);
}

bool osb_vio_pending(const struct osb_vio *v)
{
    return v->ssl && SSL_has_pending(v->ssl);
}

ssize_t osb_vio_read(struct osb_vio *v, void *buf, size_t n)
{
    for (;;) {
        short ev;
        ssize_t r = try_read(v, buf, n, &ev);
        if (r != WOULD_BLOCK)
            return r;
        if (wait_fd(v->fd, ev, v->timeout_ms) < 0)
            return -1;
    }
}

/* What TLS wrote into the write buffer (osb_vio_tls), out to the socket. */
static int tls_flush(struct osb_vio *v)
{
    BIO *w = SSL_get_wbio(v->ssl);
    while (BIO_flush(w) <= 0) {
        if (!BIO_should_retry(w) || wait_fd(v->fd, POLLOUT, v->timeout_ms) < 0)
            return -1;
    }
    return 0;
}

int osb_vio_tls(struct osb_vio *v, SSL *ssl)
{
    BIO *sock = BIO_new_socket(v->fd, BIO_NOCLOSE), *buf = BIO_new(BIO_f_buffer());
    if (!sock || !buf || BIO_set_write_buffer_size(buf, 4 * 16384 + 4 * 256 + 4096) != 1 ||
        !BIO_up_ref(sock)) {
        BIO_free(sock);
        BIO_free(buf);
        return -1;
    }
    BIO_push(buf, sock);
    SSL_set_bio(ssl, sock, buf); /* reads straight from the socket, writes through buf */
    v->ssl = ssl;
    return 0;
}

int osb_vio_write(struct osb_vio *v, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        short ev = POLLOUT;
        ssize_t w;
        if (!v->ssl) {
            w = send(v->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
        } else {
            ERR_clear_error();
            int r = SSL_write(v->ssl, p, n > (1u << 30) ? 1 << 30 : (int)n);
            w = r;
            if (r <= 0) {
                int e = SSL_get_error(v->ssl, r);
                if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
                    return -1;
                ev = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
                w = -1;
            }
        }
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (wait_fd(v->fd, ev, v->timeout_ms) < 0) {
            return -1;
        }
    }
    return v->ssl ? tls_flush(v) : 0;
}

/* Moves what src has now to dst: 1 moved something, 0 nothing ready,
 * -1 src ended or failed (or dst failed). */
static int pump(struct osb_vio *src, struct osb_vio *dst, char *buf, size_t cap)
{
    short ev;
    ssize_t r = try_read(src, buf, cap, &ev);
    if (r == WOULD_BLOCK)
        return 0;
    if (r <= 0 || osb_vio_write(dst, buf, (size_t)r) < 0)
        return -1;
    return 1;
}

void osb_vio_relay(struct osb_vio *a, struct osb_vio *b, int idle_ms)
{
    char buf[32768];
    for (;;) {
        /* Bytes OpenSSL already read (records, decrypted or not) do not show
         * in poll; a pump that finds only part of a record moves nothing. */
        int moved = 1;
        while (moved > 0 &&
               ((a->ssl && SSL_has_pending(a->ssl)) || (b->ssl && SSL_has_pending(b->ssl)))) {
            moved = 0;
            int r = a->ssl && SSL_has_pending(a->ssl) ? pump(a, b, buf, sizeof buf) : 0;
            if (r < 0)
                return;
            moved += r;
            r = b->ssl && SSL_has_pending(b->ssl) ? pump(b, a, buf, sizeof buf) : 0;
            if (r < 0)
                return;
            moved += r;
        }
        struct pollfd p[2] = {{.fd = a->fd, .events = POLLIN}, {.fd = b->fd, .events = POLLIN}};
        int r = poll(p, 2, idle_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        if (p[0].revents && pump(a, b, buf, sizeof buf) < 0)
            return;
        if (p[1].revents && pump(b, a, buf, sizeof buf) < 0)
            return;
    }
}

int osb_vio_handshake(struct osb_vio *v, int accept)
{
    for (;;) {
        ERR_clear_error();
        int r = accept ? SSL_accept(v->ssl) : SSL_connect(v->ssl);
        if (r == 1)
            return 0;
        int e = SSL_get_error(v->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return -1;
        if (wait_fd(v->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, v->timeout_ms) < 0)
            return -1;
    }
}

int osb_vio_connect(const struct sockaddr_in *addr, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, soerr = 0;
    socklen_t sl = sizeof soerr;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) < 0 && errno != EINPROGRESS)
        goto fail;
    if (wait_fd(fd, POLLOUT, timeout_ms) < 0) {
        errno = ETIMEDOUT;
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
        errno = soerr ? soerr : errno;
        goto fail;
    }
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}
