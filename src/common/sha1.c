#include "common/sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* f and K of round t (RFC 3174 section 5). */
static uint32_t round_f(int t, uint32_t b, uint32_t c, uint32_t d, uint32_t *k)
{
    if (t < 20) {
        *k = 0x5A827999;
        return (b & c) | (~b & d);
    }
    if (t < 40) {
        *k = 0x6ED9EBA1;
        return b ^ c ^ d;
    }
    if (t < 60) {
        *k = 0x8F1BBCDC;
        return (b & c) | (b & d) | (c & d);
    }
    *k = 0xCA62C1D6;
    return b ^ c ^ d;
}

static void compress(uint32_t h[5], const uint8_t block[64])
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 80; t++)
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t k, f = round_f(t, b, c, d, &k);
        uint32_t tmp = rol(a, 5) + f + e + w[t] + k;
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void osb_sha1_init(struct osb_sha1_ctx *c)
{
    static const uint32_t iv[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(c->h, iv, sizeof iv);
    c->total = 0;
    c->used = 0;
}

void osb_sha1_update(struct osb_sha1_ctx *c, const void *data, size_t len)
{
    const uint8_t *p = data;
    c->total += len;
    while (len > 0) {
        size_t n = 64 - c->used;
        if (n > len)
            n = len;
        memcpy(c->block + c->used, p, n);
        c->used += n;
        p += n;
        len -= n;
        if (c->used == 64) {
            compress(c->h, c->block);
            c->used = 0;
        }
    }
}

void osb_sha1_final(struct osb_sha1_ctx *c, uint8_t out[OSB_SHA1_LEN])
{
    uint64_t bits = c->total * 8;
    uint8_t pad[72] = {0x80};
    /* Pad to 56 mod 64, then the 64-bit big-endian bit length. */
    size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
    for (int i = 0; i < 8; i++)
        pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
    osb_sha1_update(c, pad, padlen + 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void osb_sha1(const void *data, size_t len, uint8_t out[OSB_SHA1_LEN])
{
    struct osb_sha1_ctx c;
    osb_sha1_init(&c);
    osb_sha1_update(&c, data, len);
    osb_sha1_final(&c, out);
}
