/* TLS sessions of the proxy's upstreams, by "name@address": a new
 * connection to the same upstream resumes (an abbreviated handshake)
 * instead of a full one. Only sessions of verified handshakes are kept.
 * Thread-safe. */
#ifndef OSB_VAULT_SESSIONS_H
#define OSB_VAULT_SESSIONS_H
#include <openssl/ssl.h>

struct osb_tls_sessions;

struct osb_tls_sessions *osb_tls_sessions_new(void);
void osb_tls_sessions_free(struct osb_tls_sessions *s);
/* Makes ctx (a client context) hand its new sessions to s. */
void osb_tls_sessions_attach(struct osb_tls_sessions *s, SSL_CTX *ctx);
/* Before ssl's handshake: key (which must live as long as ssl) names the
 * session to resume and where a new one is kept. */
void osb_tls_sessions_use(struct osb_tls_sessions *s, SSL *ssl, const char *key);
#endif
