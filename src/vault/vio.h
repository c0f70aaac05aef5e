/* One end of a proxied connection: a non-blocking socket, with or without
 * TLS on it, read and written with a deadline per call (poll), so a
 * proxy thread never hangs on a silent peer and can relay both ways. */
#ifndef OSB_VAULT_VIO_H
#define OSB_VAULT_VIO_H
#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/types.h>

struct osb_vio {
    int fd;         /* non-blocking */
    SSL *ssl;       /* NULL: plain TCP */
    int timeout_ms; /* per read or write call */
};

/* > 0 bytes read, 0 end of stream, -1 error or timeout. */
ssize_t osb_vio_read(struct osb_vio *v, void *buf, size_t n);
/* One attempt that does not wait: > 0 bytes read, 0 end of stream, -1
 * error, OSB_VIO_AGAIN nothing yet. */
#define OSB_VIO_AGAIN (-2)
ssize_t osb_vio_try_read(struct osb_vio *v, void *buf, size_t n);
/* Whether TLS holds bytes already read from the socket (poll does not see
 * them). */
bool osb_vio_pending(const struct osb_vio *v);
/* Writes all n bytes: 0, or -1 on error or timeout. */
int osb_vio_write(struct osb_vio *v, const void *buf, size_t n);
/* Copies both ways until either end closes, fails or both stay idle for
 * idle_ms. */
void osb_vio_relay(struct osb_vio *a, struct osb_vio *b, int idle_ms);
/* Puts ssl on v's socket: records are read straight from it and written
 * through a 68 KiB buffer that every osb_vio_write flushes, so the records
 * of one write leave in one send, not one each. 0 or -1. */
int osb_vio_tls(struct osb_vio *v, SSL *ssl);
/* Completes a TLS handshake on v (accept: server side) within v's timeout:
 * 0 or -1. */
int osb_vio_handshake(struct osb_vio *v, int accept);
/* connect(2) to addr within timeout_ms; a non-blocking fd, or -1 (errno). */
struct sockaddr_in;
int osb_vio_connect(const struct sockaddr_in *addr, int timeout_ms);
#endif
