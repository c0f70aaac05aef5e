#include "common/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t osb_base64_encode(const uint8_t *in, size_t n, char *out)
{
    char *o = out;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* The 6-bit value of c, or -1. */
static int sextet(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strips up to two '=' that complete a 4-char group; -1 if the padding is
 * malformed. */
static int strip_padding(const char *in, size_t *n)
{
    if (*n == 0 || in[*n - 1] != '=')
        return 0;
    if (*n % 4 != 0)
        return -1;
    (*n)--;
    if (in[*n - 1] == '=')
        (*n)--;
    return *n % 4 == 1 ? -1 : 0;
}

int osb_base64_decode(const char *in, size_t n, uint8_t *out, size_t *outlen)
{
    if (strip_padding(in, &n) < 0 || n % 4 == 1)
        return -1;
    uint32_t acc = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int v = sextet(in[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        if (i % 4 == 3) {
            out[o++] = (uint8_t)(acc >> 16);
            out[o++] = (uint8_t)(acc >> 8);
            out[o++] = (uint8_t)acc;
            acc = 0;
        }
    }
    size_t rest = n % 4; /* 0, 2 or 3 chars of a final partial group */
    if (rest == 2) {
        if (acc & 0xF)
            return -1;
        out[o++] = (uint8_t)(acc >> 4);
    } else if (rest == 3) {
        if (acc & 0x3)
            return -1;
        out[o++] = (uint8_t)(acc >> 10);
        out[o++] = (uint8_t)(acc >> 2);
    }
    *outlen = o;
    return 0;
}
