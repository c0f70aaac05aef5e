/* Connections: resolve, connect with a deadline, optional TLS, and reads
 * and writes that wait with poll() so every call honours its timeout. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

void osbcl_base_free(struct osbcl_base *b)
{
    free(b->host);
    free(b->port);
    free(b->prefix);
    if (b->headers)
        for (char **h = b->headers; *h; h++)
            free(*h);
    free(b->headers);
    memset(b, 0, sizeof *b);
}

static bool port_ok(const char *p, size_t n)
{
    if (!n || n > 5)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    return v >= 1 && v <= 65535;
}

int osbcl_base_parse(struct osbcl_base *b, const char *ep, bool tls, struct osbc_error *err)
{
    memset(b, 0, sizeof *b);
    const char *slash = strchr(ep, '/');
    size_t hp_len = slash ? (size_t)(slash - ep) : strlen(ep);
    const char *host = ep, *port = NULL;
    size_t host_len = hp_len, port_len = 0;
    if (*ep == '[') { /* [v6]:port */
        const char *close = memchr(ep, ']', hp_len);
        if (!close)
            return osbcl_fail(err, OSBC_E_ARG, "\"%s\": unclosed '[' in the address", ep);
        host = ep + 1;
        host_len = (size_t)(close - host);
        if (close + 1 < ep + hp_len) {
            if (close[1] != ':')
                return osbcl_fail(err, OSBC_E_ARG, "\"%s\": junk after ']'", ep);
            port = close + 2;
            port_len = (size_t)(ep + hp_len - port);
        }
    } else {
        const char *colon = memchr(ep, ':', hp_len);
        if (colon) {
            host_len = (size_t)(colon - ep);
            port = colon + 1;
            port_len = hp_len - host_len - 1;
        }
    }
    if (!host_len)
        return osbcl_fail(err, OSBC_E_ARG, "\"%s\": no host", ep);
    if (port && !port_ok(port, port_len))
        return osbcl_fail(err, OSBC_E_ARG, "\"%s\": bad port", ep);
    for (const char *p = ep; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return osbcl_fail(err, OSBC_E_ARG, "\"%s\": a space or control byte", ep);
    b->tls = tls;
    b->host = strndup(host, host_len);
    b->port = port ? strndup(port, port_len) : strdup(tls ? "443" : "80");
    b->prefix = strdup(slash ? slash : "");
    if (!b->host || !b->port || !b->prefix) {
        osbcl_base_free(b);
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    }
    return 0;
}

/* Waits for fd to be readable (or writable); 0 ready, -2 timeout, -1 error. */
static int wait_fd(int fd, bool out, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = out ? POLLOUT : POLLIN};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n > 0)
            return 0;
        if (n == 0)
            return -2;
        if (errno != EINTR)
            return -1;
    }
}

static int connect_one(const struct addrinfo *ai, int timeout_ms, struct osbc_error *err,
                       const char *what)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return osbcl_fail_sys(err, OSBC_E_CONNECT, "%s: socket", what);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            osbcl_fail_sys(err, OSBC_E_CONNECT, "cannot connect to %s", what);
            close(fd);
            return -1;
        }
        int w = wait_fd(fd, true, timeout_ms);
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (w == -2) {
            close(fd);
            osbcl_fail(err, OSBC_E_TIMEOUT, "connecting to %s timed out", what);
            return -1;
        }
        if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr) {
            if (soerr)
                errno = soerr;
            osbcl_fail_sys(err, OSBC_E_CONNECT, "cannot connect to %s", what);
            close(fd);
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int osbcl_io_open(osbc_client *c, const struct osbcl_base *b, int timeout_ms, struct osbcl_io **out,
                  struct osbc_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "%s:%s", b->host, b->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int g = getaddrinfo(b->host, b->port, &hints, &res);
    if (g)
        return osbcl_fail(err, OSBC_E_CONNECT, "cannot resolve %s: %s", b->host,
                          g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, timeout_ms, err, what);
    freeaddrinfo(res);
    if (fd < 0)
        return err ? err->code : OSBC_E_CONNECT;
    struct osbcl_io *io = calloc(1, sizeof *io);
    char key[300];
    snprintf(key, sizeof key, "%d|%s|%s", b->tls, b->host, b->port);
    if (!io || !(io->key = strdup(key))) {
        free(io);
        close(fd);
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    }
    io->fd = fd;
    if (b->tls && osbcl_tls_start(c, io, b->host, timeout_ms, err) < 0) {
        osbcl_io_close(io);
        return err ? err->code : OSBC_E_TLS;
    }
    *out = io;
    return 0;
}

int osbcl_io_fd(const struct osbcl_io *io)
{
    return io->fd;
}

bool osbcl_io_pending(const struct osbcl_io *io)
{
    return io->off < io->len || (io->ssl && osbcl_tls_pending(io));
}

/* One read(2) or SSL read into buf; -1 with errno EAGAIN means wait. */
static ssize_t raw_read(struct osbcl_io *io, void *buf, size_t cap, bool *want_write)
{
    *want_write = false;
    if (io->ssl)
        return osbcl_tls_read(io, buf, cap, want_write);
    return read(io->fd, buf, cap);
}

ssize_t osbcl_io_read(struct osbcl_io *io, void *buf, size_t cap, int timeout_ms,
                      struct osbc_error *err)
{
    if (io->off < io->len) {
        size_t n = io->len - io->off < cap ? io->len - io->off : cap;
        memcpy(buf, io->buf + io->off, n);
        io->off += n;
        return (ssize_t)n;
    }
    for (;;) {
        bool ww;
        ssize_t n = raw_read(io, buf, cap, &ww);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN) {
            if (io->ssl && errno == EPROTO)
                osbcl_fail(err, OSBC_E_TLS, "TLS read failed");
            else
                osbcl_fail_sys(err, OSBC_E_CONNECT, "read from the server");
            return -1;
        }
        if (timeout_ms == 0)
            return -2;
        int w = wait_fd(io->fd, ww, timeout_ms);
        if (w == -2)
            return -2;
        if (w < 0) {
            osbcl_fail_sys(err, OSBC_E_CONNECT, "poll");
            return -1;
        }
    }
}

/* Fills io->buf when it is empty; 1 bytes are there, 0 EOF, -1 error, -2 timeout. */
int osbcl_io_fill(struct osbcl_io *io, int timeout_ms, struct osbc_error *err)
{
    if (io->off < io->len)
        return 1;
    io->off = io->len = 0;
    ssize_t n = osbcl_io_read(io, io->buf, sizeof io->buf, timeout_ms, err);
    if (n < 0)
        return (int)n;
    io->len = (size_t)n;
    return n > 0;
}

int osbcl_io_write(struct osbcl_io *io, const void *data, size_t len, int timeout_ms,
                   struct osbc_error *err)
{
    const char *p = data;
    while (len) {
        bool wr = false;
        ssize_t n = io->ssl ? osbcl_tls_write(io, p, len, &wr) : send(io->fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN) {
            if (io->ssl && errno == EPROTO)
                return osbcl_fail(err, OSBC_E_TLS, "TLS write failed");
            return osbcl_fail_sys(err, OSBC_E_CONNECT, "write to the server");
        }
        int w = wait_fd(io->fd, !wr, timeout_ms);
        if (w == -2)
            return osbcl_fail(err, OSBC_E_TIMEOUT, "writing to the server timed out");
        if (w < 0)
            return osbcl_fail_sys(err, OSBC_E_CONNECT, "poll");
    }
    return 0;
}

void osbcl_io_close(struct osbcl_io *io)
{
    if (!io)
        return;
    if (io->ssl)
        osbcl_tls_free(io);
    if (io->fd >= 0)
        close(io->fd);
    free(io->key);
    free(io);
}

/* Whether an idle keep-alive connection is still usable: nothing to read
 * (a readable idle socket means EOF or junk from the server). */
bool osbcl_io_idle_ok(const struct osbcl_io *io)
{
    if (io->off < io->len)
        return false;
    struct pollfd p = {.fd = io->fd, .events = POLLIN};
    return poll(&p, 1, 0) == 0;
}
