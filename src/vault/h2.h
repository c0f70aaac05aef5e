/* HTTP/2 between a sandbox and an upstream that both chose h2 (ALPN): the
 * frames go through as they are, except header blocks, which are decoded
 * (HPACK, nghttp2's codec), checked, edited and encoded again for the other
 * side. DATA and WINDOW_UPDATE pass untouched, so flow control stays end to
 * end and bodies stream. A request head that is refused never reaches the
 * upstream: the sandbox gets the proxy's own answer on that stream, and
 * whatever else it sends on it is dropped. Server push is switched off (the
 * sandbox's SETTINGS say so to the upstream). */
#ifndef OSB_VAULT_H2_H
#define OSB_VAULT_H2_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vault/vio.h"

#define OSB_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define OSB_H2_MAX_STREAMS 1024 /* requests awaiting their answer */

/* A request head as the sandbox sent it (pseudo-header fields checked:
 * each once, before the others; :authority and host agree). */
struct osb_h2_req {
    uint32_t stream;
    const char *method, *scheme, *authority, *path; /* path: "" for CONNECT */
};

/* What the proxy decides for one request. */
struct osb_h2_verdict {
    /* Forwarded: these fields (name, value pairs, NULL-terminated) replace
     * any the sandbox sent with those names. binding: NULL for none. */
    const char *const *add;
    const char *binding;
    /* Refused (status != 0): answered with this JSON {code,message}. */
    int status;
    const char *code, *message;
};

struct osb_h2_ops {
    void *ud;
    /* Fills v for rq (reporting a refusal itself). host is the request's
     * name as matched (lower case, no port). */
    void (*request)(void *ud, const struct osb_h2_req *rq, struct osb_h2_verdict *v);
    /* A forwarded request's final status (0: the stream was reset first). */
    void (*answered)(void *ud, const char *binding, const char *authority, const char *method,
                     const char *path, int status);
    /* The values redacted from the upstream's header fields. */
    const char *const *(*secrets)(void *ud, size_t *n);
};

/* Relays until either side ends, breaks the protocol or stays idle for
 * idle_ms. c: the sandbox (its preface not read yet); u: the upstream. */
void osb_h2_relay(struct osb_vio *c, struct osb_vio *u, const struct osb_h2_ops *ops, int idle_ms);
#endif
