/* src/execd/png: the encoder's output decodes (with zlib, here) to the same
 * pixels, with valid chunk CRCs, for sizes and contents that exercise the
 * filter and the output buffer's growth. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "execd/png.h"
#include "tap.h"

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Decodes an 8-bit RGB PNG of 'Up'/'None'/'Sub' rows into rgb; 0 on success. */
static int decode(const unsigned char *png, size_t len, unsigned *w, unsigned *h, uint8_t **rgb)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 8 || memcmp(png, sig, 8) != 0)
        return -1;
    unsigned char *z = NULL;
    size_t zlen = 0, pos = 8;
    bool end = false;
    while (pos + 12 <= len && !end) {
        uint32_t n = be32(png + pos);
        const unsigned char *type = png + pos + 4, *data = png + pos + 8;
        if (pos + 12 + n > len || crc32(0, type, n + 4) != be32(data + n))
            return free(z), -1;
        if (memcmp(type, "IHDR", 4) == 0) {
            *w = be32(data);
            *h = be32(data + 4);
            if (data[8] != 8 || data[9] != 2)
                return free(z), -1;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            z = realloc(z, zlen + n);
            memcpy(z + zlen, data, n);
            zlen += n;
        } else if (memcmp(type, "IEND", 4) == 0) {
            end = true;
        }
        pos += 12 + n;
    }
    size_t stride = (size_t)*w * 3;
    uLongf rawlen = (uLongf)((stride + 1) * *h);
    unsigned char *raw = malloc(rawlen);
    int rc = uncompress(raw, &rawlen, z, zlen);
    free(z);
    if (!end || rc != Z_OK || rawlen != (stride + 1) * *h)
        return free(raw), -1;
    *rgb = malloc(stride * *h);
    for (unsigned y = 0; y < *h; y++) {
        const unsigned char *row = raw + y * (stride + 1);
        uint8_t *out = *rgb + y * stride, *up = y ? out - stride : NULL;
        for (size_t i = 0; i < stride; i++) {
            uint8_t a = i >= 3 ? out[i - 3] : 0, b = up ? up[i] : 0;
            out[i] = (uint8_t)(row[i + 1] + (row[0] == 1 ? a : row[0] == 2 ? b : 0));
        }
    }
    free(raw);
    return 0;
}

static void roundtrip(unsigned w, unsigned h, int pattern, const char *what)
{
    size_t n = (size_t)w * h * 3;
    uint8_t *rgb = malloc(n), *back = NULL;
    uint32_t seed = 12345;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245 + 12345;
        rgb[i] = pattern == 0 ? 0x80 : pattern == 1 ? (uint8_t)(i / 3 % w) : (uint8_t)(seed >> 16);
    }
    unsigned char *png = NULL;
    size_t len = 0;
    unsigned dw = 0, dh = 0;
    struct osb_err err = {0};
    OK(osb_png_encode(rgb, w, h, 1, &png, &len, &err) == 0, what);
    OK(png && decode(png, len, &dw, &dh, &back) == 0, "it decodes, CRCs and all");
    IS_INT(dw, w, "width");
    IS_INT(dh, h, "height");
    OK(back && memcmp(back, rgb, n) == 0, "the pixels come back");
    if (pattern == 0)
        OK(len < n / 100, "a flat image compresses a hundredfold");
    free(rgb);
    free(back);
    free(png);
}

int main(void)
{
    roundtrip(1, 1, 2, "1x1 encodes");
    roundtrip(7, 3, 2, "7x3 noise encodes");
    roundtrip(1280, 800, 0, "1280x800 flat encodes");
    roundtrip(640, 480, 1, "640x480 gradient encodes");
    roundtrip(300, 200, 2, "300x200 noise encodes (output grows)");
    struct osb_err err = {0};
    unsigned char *png = NULL;
    size_t len;
    uint8_t px[3] = {0};
    OK(osb_png_encode(px, 0, 1, 1, &png, &len, &err) < 0 && err.code == OSB_E_INVALID,
       "a 0-wide image is refused");
    return tap_done();
}
