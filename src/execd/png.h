/* A PNG encoder for screenshots: 8-bit RGB, every row with the 'Up' filter
 * (screens are mostly runs of equal rows and columns), zlib's deflate at a
 * fast level. */
#ifndef OSB_EXECD_PNG_H
#define OSB_EXECD_PNG_H
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* rgb holds w * h * 3 bytes, rows top to bottom. level: zlib's 1..9.
 * *out is malloc'd. */
OSB_MUST_CHECK int osb_png_encode(const uint8_t *rgb, unsigned w, unsigned h, int level,
                                  unsigned char **out, size_t *len, struct osb_err *err);
#endif
