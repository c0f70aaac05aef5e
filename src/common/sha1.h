/* SHA-1 (RFC 3174). Only for protocol needs such as the WebSocket accept key;
 * SHA-1 is broken for collision resistance, never use it for security. */
#ifndef OSB_SHA1_H
#define OSB_SHA1_H
#include <stddef.h>
#include <stdint.h>

#define OSB_SHA1_LEN 20

/* Incremental interface; osb_sha1 is the one-shot form. */
struct osb_sha1_ctx {
    uint32_t h[5];
    uint64_t total; /* bytes hashed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
};

void osb_sha1_init(struct osb_sha1_ctx *c);
void osb_sha1_update(struct osb_sha1_ctx *c, const void *data, size_t len);
void osb_sha1_final(struct osb_sha1_ctx *c, uint8_t out[OSB_SHA1_LEN]);
void osb_sha1(const void *data, size_t len, uint8_t out[OSB_SHA1_LEN]);
#endif
