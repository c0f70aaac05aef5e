#include "execd/png.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "common/xalloc.h"

struct out {
    unsigned char *p;
    size_t len, cap;
};

static void reserve(struct out *o, size_t n)
{
    if (o->len + n <= o->cap)
        return;
    while (o->len + n > o->cap)
        o->cap = o->cap ? o->cap * 2 : 4096;
    o->p = osb_xrealloc(o->p, o->cap);
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A chunk whose data already sits at o->p + at + 8 (len bytes): fill in
 * the length and type before it and append the CRC of type and data. */
static void close_chunk(struct out *o, size_t at, const char type[4], size_t len)
{
    be32(o->p + at, (uint32_t)len);
    memcpy(o->p + at + 4, type, 4);
    reserve(o, 4);
    uLong crc = crc32(0, o->p + at + 4, (uInt)(len + 4));
    be32(o->p + o->len, (uint32_t)crc);
    o->len += 4;
}

static void header(struct out *o, unsigned w, unsigned h)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    reserve(o, 8 + 8 + 13);
    memcpy(o->p, sig, 8);
    unsigned char *d = o->p + 16;
    be32(d, w);
    be32(d + 4, h);
    d[8] = 8;  /* bit depth */
    d[9] = 2;  /* colour type: RGB */
    d[10] = 0; /* deflate */
    d[11] = 0; /* adaptive filtering */
    d[12] = 0; /* no interlace */
    o->len = 8 + 8 + 13;
    close_chunk(o, 8, "IHDR", 13);
}

/* Deflates the filtered rows straight into the IDAT chunk's data. */
static int idat(struct out *o, const uint8_t *rgb, unsigned w, unsigned h, int level,
                struct osb_err *err)
{
    z_stream z = {0};
    if (deflateInit(&z, level) != Z_OK)
        return osb_err_set(err, OSB_E_INTERNAL, "deflateInit failed");
    size_t stride = (size_t)w * 3, at = o->len;
    reserve(o, 8 + deflateBound(&z, (uLong)((stride + 1) * h)));
    o->len += 8;
    _cleanup_free_ uint8_t *row = osb_xmalloc(stride + 1);
    int rc = Z_OK;
    for (unsigned y = 0; y < h && rc == Z_OK; y++) {
        const uint8_t *cur = rgb + y * stride, *up = y ? cur - stride : NULL;
        row[0] = 2; /* Up */
        for (size_t i = 0; i < stride; i++)
            row[i + 1] = (uint8_t)(cur[i] - (up ? up[i] : 0));
        z.next_in = row;
        z.avail_in = (uInt)(stride + 1);
        int flush = y + 1 == h ? Z_FINISH : Z_NO_FLUSH;
        do {
            reserve(o, 65536);
            z.next_out = o->p + o->len;
            z.avail_out = (uInt)(o->cap - o->len);
            rc = deflate(&z, flush);
            o->len = o->cap - z.avail_out;
            if (rc == Z_BUF_ERROR && flush == Z_NO_FLUSH) /* nothing to do: not an error */
                rc = Z_OK;
        } while (rc == Z_OK && (flush == Z_FINISH || z.avail_in || z.avail_out == 0));
    }
    deflateEnd(&z);
    if (rc != Z_STREAM_END)
        return osb_err_set(err, OSB_E_INTERNAL, "deflate failed (%d)", rc);
    close_chunk(o, at, "IDAT", o->len - at - 8);
    return 0;
}

int osb_png_encode(const uint8_t *rgb, unsigned w, unsigned h, int level, unsigned char **out,
                   size_t *len, struct osb_err *err)
{
    if (!w || !h || w > 0x7fffffff / 3 || h > 0x7fffffff)
        return osb_err_set(err, OSB_E_INVALID, "bad image size %ux%u", w, h);
    struct out o = {0};
    header(&o, w, h);
    if (idat(&o, rgb, w, h, level, err) < 0) {
        free(o.p);
        return -1;
    }
    reserve(&o, 12);
    o.len += 8;
    close_chunk(&o, o.len - 8, "IEND", 0);
    *out = o.p;
    *len = o.len;
    return 0;
}
