/* Base64 with the standard alphabet and '=' padding (RFC 4648 section 4). */
#ifndef OSB_BASE64_H
#define OSB_BASE64_H
#include <stddef.h>
#include <stdint.h>
#include "common/err.h"

/* Bytes osb_base64_encode writes for n input bytes, NUL included. */
#define OSB_BASE64_ENCODED_SIZE(n) (((n) + 2) / 3 * 4 + 1)
/* Upper bound of the bytes osb_base64_decode writes for n input chars. */
#define OSB_BASE64_DECODED_MAX(n) (((n) + 3) / 4 * 3)

/* Encodes n bytes into out (room for OSB_BASE64_ENCODED_SIZE(n)), padded and
 * NUL-terminated. Returns the length without the NUL. */
size_t osb_base64_encode(const uint8_t *in, size_t n, char *out);

/* Decodes n chars into out (room for OSB_BASE64_DECODED_MAX(n)); *outlen gets
 * the decoded length. Padding may be present or left out, but nothing else
 * is tolerated: a char outside the alphabet (whitespace included), '=' other
 * than at the end, a dangling single char, or non-zero unused bits in the
 * last char make it return -1 (out then holds garbage). */
OSB_MUST_CHECK int osb_base64_decode(const char *in, size_t n, uint8_t *out, size_t *outlen);
#endif
