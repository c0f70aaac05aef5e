#include "vault/sessions.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define N_SESSIONS 256

struct slot {
    char key[300];
    SSL_SESSION *s;
};

struct osb_tls_sessions {
    pthread_mutex_t mu;
    struct slot v[N_SESSIONS];
    size_t next; /* round-robin eviction */
};

struct osb_tls_sessions *osb_tls_sessions_new(void)
{
    struct osb_tls_sessions *s = osb_xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void osb_tls_sessions_free(struct osb_tls_sessions *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < N_SESSIONS; i++)
        SSL_SESSION_free(s->v[i].s);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* OpenSSL hands over a new session (for TLS 1.3, a ticket after the
 * handshake): kept under the connection's key, replacing an older one. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct osb_tls_sessions *s = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
    const char *key = SSL_get_app_data(ssl);
    if (!s || !key || SSL_get_verify_result(ssl) != X509_V_OK)
        return 0;
    pthread_mutex_lock(&s->mu);
    struct slot *slot = NULL;
    for (size_t i = 0; i < N_SESSIONS && !slot; i++)
        if (s->v[i].s && strcmp(s->v[i].key, key) == 0)
            slot = &s->v[i];
    if (!slot) {
        slot = &s->v[s->next];
        s->next = (s->next + 1) % N_SESSIONS;
    }
    SSL_SESSION_free(slot->s);
    slot->s = sess; /* our reference (returning 1) */
    snprintf(slot->key, sizeof slot->key, "%s", key);
    pthread_mutex_unlock(&s->mu);
    return 1;
}

void osb_tls_sessions_attach(struct osb_tls_sessions *s, SSL_CTX *ctx)
{
    SSL_CTX_set_app_data(ctx, s);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, new_session);
}

void osb_tls_sessions_use(struct osb_tls_sessions *s, SSL *ssl, const char *key)
{
    SSL_set_app_data(ssl, (void *)key);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < N_SESSIONS; i++)
        if (s->v[i].s && strcmp(s->v[i].key, key) == 0) {
            SSL_set_session(ssl, s->v[i].s);
            break;
        }
    pthread_mutex_unlock(&s->mu);
}
