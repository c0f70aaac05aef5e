/* libFuzzer target for the WebSocket frame reader (and the base64/UTF-8
 * helpers the handshake uses). The stream fed whole and fed in
 * pseudo-random chunks must give the same messages and the same result.
 * Input: byte 0 = flags (bit 0: server side, i.e. masked frames; bit 1: a
 * 1000-byte max_message; bits 2-7: chunking seed), then the frames. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "http/ws.h"
#include "must.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_frame(void *ud, int op, const uint8_t *d, size_t n)
{
    if (op == OSB_WS_OP_TEXT && !osb_ws_utf8_valid(d, n))
        abort(); /* text messages must be validated before delivery */
    if (op >= 8 && n > OSB_WS_MAX_CONTROL)
        abort();
    MUST(osb_buf_addf(ud, "[%d:", op));
    MUST(osb_buf_add(ud, d, n));
    MUST(osb_buf_adds(ud, "]"));
    return 0;
}

static const struct osb_ws_reader_cbs cbs = {on_frame, on_frame};

static int run(const uint8_t *d, size_t len, uint8_t flags, unsigned seed, struct osb_buf *log,
               int *cc, struct osb_err *err)
{
    struct osb_ws_reader r;
    osb_ws_reader_init(&r, flags & 1);
    if (flags & 2)
        r.max_message = 1000;
    osb_buf_init(log, 1 << 26);
    MUST(osb_buf_adds(log, ""));
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t n = seed ? 1 + (seed = seed * 1103515245 + 12345) % 61 : len;
        if (n > len - at)
            n = len - at;
        rc = osb_ws_reader_feed(&r, d + at, n, &cbs, log, cc, err);
        at += n;
    }
    if (r._msg_len > r.max_message)
        abort();
    osb_ws_reader_free(&r);
    return rc;
}

/* base64: decoding then re-encoding must give the input back (modulo the
 * optional padding). */
static void check_base64(const uint8_t *d, size_t n)
{
    if (n > 256)
        n = 256;
    uint8_t out[OSB_BASE64_DECODED_MAX(256)];
    char enc[OSB_BASE64_ENCODED_SIZE(sizeof out)];
    size_t outlen;
    if (osb_base64_decode((const char *)d, n, out, &outlen) < 0)
        return;
    size_t el = osb_base64_encode(out, outlen, enc);
    while (n && d[n - 1] == '=')
        n--;
    while (el && enc[el - 1] == '=')
        el--;
    if (el != n || memcmp(enc, d, n) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    check_base64(data + 1, size - 1);
    struct osb_buf a, b;
    struct osb_err ea = {0}, eb = {0};
    int ca = 0, cb = 0;
    int ra = run(data + 1, size - 1, data[0], 0, &a, &ca, &ea);
    int rb = run(data + 1, size - 1, data[0], (data[0] >> 2) | 1u, &b, &cb, &eb);
    if (ra != rb || ca != cb || a.len != b.len || memcmp(a.data, b.data, a.len) != 0 ||
        strcmp(ea.msg, eb.msg) != 0) {
        fprintf(stderr, "whole: %d %d %s\nsplit: %d %d %s\n", ra, ca, ea.msg, rb, cb, eb.msg);
        abort();
    }
    if (ra < 0 && ca != 1002 && ca != 1007 && ca != 1009)
        abort();
    osb_buf_free(&a);
    osb_buf_free(&b);
    return 0;
}
