/* RFC 6455 codec: handshake key, frame headers (RFC 5.7 examples), masking,
 * UTF-8, close payloads, and the frame reader fed at every split. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/limits.h"
#include "http/ws.h"
#include "tap.h"

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

static void test_accept_key(void)
{
    char out[29];
    osb_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
    IS_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "RFC 6455 1.3 accept key");
    OK(osb_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=="), "16-byte key is valid");
    OK(!osb_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ"), "unpadded key is invalid");
    OK(!osb_ws_key_valid("dGhlIHNhbXBsZSBub25j"), "15-byte key is invalid");
    OK(!osb_ws_key_valid(""), "empty key is invalid");
    OK(!osb_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=!"), "bad base64 key is invalid");
    OK(!osb_ws_key_valid("dGhlIHNhbXBsZSBub25jZXg="), "17-char decode is invalid");
}

static bool bytes_eq(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    return an == bn && memcmp(a, b, an) == 0;
}

#define BYTES_IS(got, gotlen, what, ...) \
    do { \
        static const uint8_t _w[] = {__VA_ARGS__}; \
        OK(bytes_eq((got), (gotlen), _w, sizeof _w), what); \
    } while (0)

static void test_frame_header(void)
{
    uint8_t h[OSB_WS_MAX_HEADER];
    size_t n = osb_ws_frame_header(h, true, OSB_WS_OP_TEXT, 5, NULL);
    BYTES_IS(h, n, "unmasked text header (RFC 5.7)", 0x81, 0x05);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_TEXT, 5, MASK);
    BYTES_IS(h, n, "masked text header (RFC 5.7)", 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d);
    n = osb_ws_frame_header(h, false, OSB_WS_OP_TEXT, 3, NULL);
    BYTES_IS(h, n, "first fragment", 0x01, 0x03);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_CONT, 2, NULL);
    BYTES_IS(h, n, "last fragment", 0x80, 0x02);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_PING, 5, NULL);
    BYTES_IS(h, n, "ping", 0x89, 0x05);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 125, NULL);
    BYTES_IS(h, n, "125 bytes", 0x82, 0x7d);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 126, NULL);
    BYTES_IS(h, n, "126 bytes", 0x82, 0x7e, 0x00, 0x7e);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 256, NULL);
    BYTES_IS(h, n, "256 bytes (RFC 5.7)", 0x82, 0x7e, 0x01, 0x00);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 65535, NULL);
    BYTES_IS(h, n, "65535 bytes", 0x82, 0x7e, 0xff, 0xff);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 65536, NULL);
    BYTES_IS(h, n, "64 KiB (RFC 5.7)", 0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0);
    n = osb_ws_frame_header(h, true, OSB_WS_OP_BINARY, 0x0102030405060708ULL, MASK);
    BYTES_IS(h, n, "64-bit length, masked", 0x82, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 0x37, 0xfa, 0x21,
             0x3d);
}

static void test_mask(void)
{
    uint8_t hello[] = "Hello";
    osb_ws_mask(hello, 5, MASK, 0);
    BYTES_IS(hello, 5, "masked Hello (RFC 5.7)", 0x7f, 0x9f, 0x4d, 0x51, 0x58);
    uint8_t a[100], b[100];
    for (int i = 0; i < 100; i++)
        a[i] = b[i] = (uint8_t)(i * 13);
    osb_ws_mask(a, 100, MASK, 0);
    int ok = 1;
    for (int i = 0; i < 100; i++)
        ok &= a[i] == (b[i] ^ MASK[i % 4]);
    OK(ok, "mask matches the byte-wise definition");
    for (size_t cut = 0; cut <= 100; cut++) {
        memcpy(a, b, 100);
        osb_ws_mask(a, cut, MASK, 0);
        osb_ws_mask(a + cut, 100 - cut, MASK, cut);
        osb_ws_mask(a, 100, MASK, 0);
        ok &= memcmp(a, b, 100) == 0;
    }
    OK(ok, "masking in two pieces with an offset equals masking whole");
}

static void test_utf8(void)
{
    static const struct {
        const char *s;
        bool valid;
    } v[] = {
        {"", true},
        {"plain ascii, long enough for the word path", true},
        {"\xc2\xa3 \xe2\x82\xac \xf0\x9f\x98\x80 \xed\x9f\xbf \xee\x80\x80 \xf4\x8f\xbf\xbf", true},
        {"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", true},
        {"\x80", false},
        {"\xc0\xaf", false}, /* overlong '/' */
        {"\xc1\xbf", false},
        {"\xe0\x80\xaf", false}, /* overlong */
        {"\xe0\x9f\xbf", false},
        {"\xed\xa0\x80", false}, /* surrogate */
        {"\xed\xbf\xbf", false},
        {"\xf0\x80\x80\xaf", false}, /* overlong */
        {"\xf4\x90\x80\x80", false}, /* > U+10FFFF */
        {"\xf5\x80\x80\x80", false},
        {"\xff", false},
        {"\xc2", false}, /* truncated */
        {"\xe2\x82", false},
        {"\xf0\x9f\x98", false},
        {"\xe2\x28\xa1", false}, /* bad continuation */
        {"\xf0\x9f\x28\x80", false},
        {"aaaaaaa\xc2", false}, /* truncated after the word path */
        {"aaaaaaaa\xed\xa0\x80"
         "aaaaaaaa",
         false},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "utf8 vector %zu is %s", i, v[i].valid ? "valid" : "invalid");
        OK(osb_ws_utf8_valid((const uint8_t *)v[i].s, strlen(v[i].s)) == v[i].valid, label);
    }
}

static void test_close_payload(void)
{
    uint8_t p[OSB_WS_MAX_CONTROL];
    size_t n = osb_ws_close_payload(p, 1000, "bye");
    BYTES_IS(p, n, "close 1000 bye", 0x03, 0xe8, 'b', 'y', 'e');
    IS_INT(osb_ws_close_payload(p, 0, "ignored"), 0, "code 0 gives an empty payload");
    IS_INT(osb_ws_close_payload(p, 4001, NULL), 2, "no reason");
    char lng[300];
    memset(lng, 'x', 122);
    /* the euro sign straddles byte 123 */
    snprintf(lng + 122, sizeof lng - 122, "\xe2\x82\xac tail");
    n = osb_ws_close_payload(p, 1001, lng);
    OK(n == 124 && osb_ws_utf8_valid(p + 2, n - 2), "long reason cut at a character boundary");

    int code;
    const uint8_t *reason;
    size_t rlen;
    OK(osb_ws_parse_close(p, 5, &code, &reason, &rlen) == 0 && code == 1001 && rlen == 3,
       "parse close");
    OK(osb_ws_parse_close(NULL, 0, &code, &reason, &rlen) == 0 && code == 1005 && rlen == 0,
       "empty close payload is 1005");
    OK(osb_ws_parse_close(p, 1, &code, &reason, &rlen) == -1 && code == 1002, "1-byte close");
    static const int bad[] = {0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535};
    static const int good[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011,
                               1012, 1013, 1014, 3000, 3999, 4000, 4001, 4999};
    int ok = 1;
    for (size_t i = 0; i < OSB_ARRAY_LEN(bad); i++) {
        uint8_t c[2] = {(uint8_t)(bad[i] >> 8), (uint8_t)bad[i]};
        ok &= osb_ws_parse_close(c, 2, &code, &reason, &rlen) == -1 && code == 1002;
    }
    OK(ok, "reserved and out-of-range close codes are 1002");
    for (size_t i = 0; i < OSB_ARRAY_LEN(good); i++) {
        uint8_t c[2] = {(uint8_t)(good[i] >> 8), (uint8_t)good[i]};
        ok &= osb_ws_parse_close(c, 2, &code, &reason, &rlen) == 0 && code == good[i];
    }
    OK(ok, "valid close codes accepted");
    uint8_t badr[] = {0x03, 0xe8, 0xc0, 0xaf};
    OK(osb_ws_parse_close(badr, 4, &code, &reason, &rlen) == -1 && code == 1007,
       "non-UTF-8 close reason is 1007");
}

/* ---- reader ---- */

struct log {
    struct osb_buf b;
    int stop_at, calls;
};

static int log_msg(void *ud, int op, const uint8_t *d, size_t n)
{
    struct log *l = ud;
    MUST(osb_buf_addf(&l->b, "[%d:", op));
    MUST(osb_buf_add(&l->b, d, n));
    MUST(osb_buf_adds(&l->b, "]"));
    return ++l->calls == l->stop_at;
}

static const struct osb_ws_reader_cbs log_cbs = {log_msg, log_msg};

/* Appends one frame; masked when mask is non-NULL. */
static void frame(struct osb_buf *b, bool fin, int op, const void *data, size_t n,
                  const uint8_t *mask)
{
    uint8_t h[OSB_WS_MAX_HEADER];
    MUST(osb_buf_add(b, h, osb_ws_frame_header(h, fin, op, n, mask)));
    size_t at = b->len;
    MUST(osb_buf_add(b, data, n));
    if (mask)
        osb_ws_mask((uint8_t *)b->data + at, n, mask, 0);
}

/* Feeds in pieces cut at cuts[] (ascending); returns the last feed result. */
static int read_cuts(bool server, size_t max, const uint8_t *in, size_t len, const size_t *cuts,
                     size_t ncuts, struct log *l, int *close_code, struct osb_err *err)
{
    struct osb_ws_reader r;
    osb_ws_reader_init(&r, server);
    if (max)
        r.max_message = max;
    osb_buf_init(&l->b, 1 << 30);
    MUST(osb_buf_adds(&l->b, ""));
    l->calls = 0;
    int rc = 0;
    size_t at = 0;
    for (size_t i = 0; i <= ncuts && rc == 0; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        rc = osb_ws_reader_feed(&r, in + at, to - at, &log_cbs, l, close_code, err);
        at = to;
    }
    osb_ws_reader_free(&r);
    return rc;
}

/* The stream must give want_rc and the log want (or, for -1, the close code
 * and an error mentioning want_msg) whole, split in two at every offset,
 * in three for short inputs, and byte by byte. */
static void check_stream(const char *what, bool server, size_t max, const struct osb_buf *in,
                         int want_rc, const char *want, size_t want_len, int want_close,
                         const char *want_msg)
{
    const uint8_t *d = (const uint8_t *)in->data;
    size_t len = in->len, bad = 0, cuts[2];
    for (size_t i = 0; i <= len && bad < 3; i++) {
        for (size_t j = i; j <= len && bad < 3; j += (len > 200 ? len + 1 : 1)) {
            struct log l = {0};
            struct osb_err err = {0};
            int cc = 0, rc;
            cuts[0] = i;
            cuts[1] = j;
            rc = read_cuts(server, max, d, len, cuts, 2, &l, &cc, &err);
            bool good =
                rc == want_rc && (want_rc < 0 ? cc == want_close && strstr(err.msg, want_msg)
                                              : bytes_eq((uint8_t *)l.b.data, l.b.len,
                                                         (const uint8_t *)want, want_len));
            if (!good) {
                printf("# %s split %zu,%zu: rc %d close %d err \"%s\" log \"%s\"\n", what, i, j, rc,
                       cc, err.msg, l.b.data);
                bad++;
            }
            osb_buf_free(&l.b);
        }
    }
    char label[160];
    snprintf(label, sizeof label, "%s (every split)", what);
    OK(bad == 0, label);
    size_t *all = malloc((len + 1) * sizeof *all);
    for (size_t i = 0; i < len; i++)
        all[i] = i + 1;
    struct log l = {0};
    struct osb_err err = {0};
    int cc = 0, rc = read_cuts(server, max, d, len, all, len ? len - 1 : 0, &l, &cc, &err);
    free(all);
    snprintf(label, sizeof label, "%s (byte by byte)", what);
    OK(rc == want_rc &&
           (want_rc < 0 ? cc == want_close && strstr(err.msg, want_msg)
                        : bytes_eq((uint8_t *)l.b.data, l.b.len, (const uint8_t *)want, want_len)),
       label);
    osb_buf_free(&l.b);
}

#define EXPECT(what, server, in, log) \
    check_stream(what, server, 0, in, 0, log, sizeof(log) - 1, 0, NULL)
#define EXPECT_FAIL(what, server, in, cc, msg) \
    check_stream(what, server, 0, in, -1, NULL, 0, cc, msg)

static void test_reader_rfc_examples(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 24);
    static const uint8_t unmasked_hello[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    static const uint8_t masked_hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                           0x7f, 0x9f, 0x4d, 0x51, 0x58};
    static const uint8_t frags[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
    static const uint8_t ping[] = {0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    static const uint8_t mpong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                    0x7f, 0x9f, 0x4d, 0x51, 0x58};
    MUST(osb_buf_add(&b, unmasked_hello, sizeof unmasked_hello));
    MUST(osb_buf_add(&b, frags, sizeof frags));
    MUST(osb_buf_add(&b, ping, sizeof ping));
    EXPECT("RFC 5.7 unmasked frames (client side)", false, &b, "[1:Hello][1:Hello][9:Hello]");
    osb_buf_reset(&b);
    MUST(osb_buf_add(&b, masked_hello, sizeof masked_hello));
    MUST(osb_buf_add(&b, mpong, sizeof mpong));
    EXPECT("RFC 5.7 masked frames (server side)", true, &b, "[1:Hello][10:Hello]");
    osb_buf_reset(&b);
    MUST(osb_buf_add(&b, unmasked_hello, sizeof unmasked_hello));
    EXPECT_FAIL("server rejects unmasked frames", true, &b, 1002, "unmasked frame from the client");
    osb_buf_reset(&b);
    MUST(osb_buf_add(&b, masked_hello, sizeof masked_hello));
    EXPECT_FAIL("client rejects masked frames", false, &b, 1002, "masked frame from the server");
    osb_buf_free(&b);
}

static void test_reader_messages(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 24);
    const uint8_t *m = MASK;
    frame(&b, false, 2, "ab", 2, m);
    frame(&b, true, 9, "p1", 2, m);
    frame(&b, false, 0, "", 0, m);
    frame(&b, true, 10, "", 0, m);
    frame(&b, false, 0, "cd", 2, m);
    frame(&b, true, 0, "e", 1, m);
    frame(&b, true, 1, "", 0, m);
    frame(&b, false, 1, "\xe2\x82", 2, m); /* a character split across fragments */
    frame(&b, true, 0, "\xac", 1, m);
    frame(&b, true, 2, "\0\1\0", 3, m);
    EXPECT("fragments, interleaved control frames, empty frames", true, &b,
           "[9:p1][10:][2:abcde][1:][1:\xe2\x82\xac][2:\0\1\0]");

    osb_buf_reset(&b);
    static uint8_t big[70000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 31);
    frame(&b, true, 2, big, 126, m);
    frame(&b, true, 2, big, sizeof big, m);
    struct log l;
    struct osb_err err;
    int cc = 0;
    OK(read_cuts(true, 0, (uint8_t *)b.data, b.len, NULL, 0, &l, &cc, &err) == 0 &&
           l.b.len == 126 + sizeof big + 8 && memcmp(l.b.data + 3, big, 126) == 0 &&
           memcmp(l.b.data + 3 + 126 + 4, big, sizeof big) == 0,
       "16-bit and 64-bit lengths, masked");
    osb_buf_free(&l.b);

    osb_buf_reset(&b);
    frame(&b, true, 8,
          "\x03\xe8"
          "bye",
          5, m);
    frame(&b, true, 1, "after close", 11, m);
    EXPECT("input after a close frame is ignored", true, &b,
           "[8:\x03\xe8"
           "bye]");
    osb_buf_reset(&b);
    frame(&b, true, 8, "", 0, NULL);
    EXPECT("empty close frame", false, &b, "[8:]");
    osb_buf_free(&b);
}

static void test_reader_errors(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 24);
    const uint8_t *m = MASK;
    static const struct {
        const char *what;
        uint8_t b0;
        const char *msg;
    } hdr[] = {
        {"RSV1", 0xC1, "reserved bits set"},
        {"RSV2", 0xA1, "reserved bits set"},
        {"RSV3", 0x91, "reserved bits set"},
        {"opcode 3", 0x83, "reserved opcode 3"},
        {"opcode 7", 0x87, "reserved opcode 7"},
        {"opcode 11", 0x8B, "reserved opcode 11"},
        {"opcode 15", 0x8F, "reserved opcode 15"},
        {"fragmented ping", 0x09, "fragmented control"},
        {"fragmented close", 0x08, "fragmented control"},
        {"continuation first", 0x80, "continuation frame without a message"},
    };
    for (size_t i = 0; i < OSB_ARRAY_LEN(hdr); i++) {
        osb_buf_reset(&b);
        uint8_t f[6] = {hdr[i].b0, 0x80, 1, 2, 3, 4};
        MUST(osb_buf_add(&b, f, 6));
        EXPECT_FAIL(hdr[i].what, true, &b, 1002, hdr[i].msg);
    }
    osb_buf_reset(&b);
    uint8_t big_ping[] = {0x89, 0x80 | 126, 0, 126, 1, 2, 3, 4};
    MUST(osb_buf_add(&b, big_ping, sizeof big_ping));
    EXPECT_FAIL("ping with 126-byte payload", true, &b, 1002, "control frame payload over 125");
    osb_buf_reset(&b);
    frame(&b, false, 1, "a", 1, m);
    frame(&b, true, 2, "b", 1, m);
    EXPECT_FAIL("new message mid-fragment", true, &b, 1002, "fragmented message is in progress");
    osb_buf_reset(&b);
    uint8_t msb[] = {0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4};
    MUST(osb_buf_add(&b, msb, sizeof msb));
    EXPECT_FAIL("64-bit length with the top bit", true, &b, 1002, "top bit set");
    osb_buf_reset(&b);
    frame(&b, true, 1, "ok\xc0\xaf", 4, m);
    EXPECT_FAIL("invalid UTF-8 text", true, &b, 1007, "text message is not valid UTF-8");
    osb_buf_reset(&b);
    frame(&b, true, 1, "ok\xc0\xaf", 4, NULL);
    EXPECT_FAIL("invalid UTF-8 text, unmasked direct path", false, &b, 1007, "not valid UTF-8");
    osb_buf_reset(&b);
    frame(&b, false, 1, "ok\xe2", 3, m);
    frame(&b, true, 0, "", 0, m);
    EXPECT_FAIL("text ending mid-character", true, &b, 1007, "not valid UTF-8");
    osb_buf_reset(&b);
    frame(&b, true, 2, "\xc0\xaf", 2, m);
    EXPECT("binary is not UTF-8 checked", true, &b, "[2:\xc0\xaf]");
    osb_buf_reset(&b);
    frame(&b, true, 8, "\x03", 1, m);
    EXPECT_FAIL("1-byte close payload", true, &b, 1002, "close payload of 1 byte");
    osb_buf_reset(&b);
    frame(&b, true, 8, "\x03\xed", 2, m);
    EXPECT_FAIL("close code 1005 on the wire", true, &b, 1002, "close code 1005 is not allowed");
    osb_buf_reset(&b);
    frame(&b, true, 8, "\x03\xe8\xff", 3, m);
    EXPECT_FAIL("close reason not UTF-8", true, &b, 1007, "close reason is not valid UTF-8");
    osb_buf_free(&b);
}

static void test_reader_limits(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 24);
    const uint8_t *m = MASK;
    frame(&b, true, 2, "0123456789", 10, m);
    check_stream("message at max_message", true, 10, &b, 0, "[2:0123456789]", 14, 0, NULL);
    osb_buf_reset(&b);
    frame(&b, true, 2, "0123456789x", 11, m);
    check_stream("message over max_message", true, 10, &b, -1, NULL, 0, 1009,
                 "message of 11+ bytes exceeds the 10-byte limit");
    osb_buf_reset(&b);
    frame(&b, false, 2, "012345", 6, m);
    frame(&b, true, 9, "ping", 4, m);
    frame(&b, true, 0, "6789x", 5, m);
    check_stream("fragments over max_message", true, 10, &b, -1, NULL, 0, 1009,
                 "exceeds the 10-byte limit");
    osb_buf_reset(&b);
    frame(&b, true, 9, "0123456789abcdef", 16, m);
    check_stream("control frames do not count against max_message", true, 10, &b, 0,
                 "[9:0123456789abcdef]", 20, 0, NULL);

    /* The limit is checked from the header alone: nothing is allocated. */
    struct osb_ws_reader r;
    osb_ws_reader_init(&r, true);
    IS_INT(r.max_message, OSB_MAX_WS_MESSAGE, "default max_message");
    uint8_t h[OSB_WS_MAX_HEADER];
    size_t hn = osb_ws_frame_header(h, true, 2, OSB_MAX_WS_MESSAGE + 1ULL, m);
    int cc = 0;
    struct osb_err err = {0};
    OK(osb_ws_reader_feed(&r, h, hn, NULL, NULL, &cc, &err) == -1 && cc == 1009 &&
           err.code == OSB_E_TOOBIG && r._msg_cap == 0,
       "oversized header rejected before allocating");
    osb_ws_reader_free(&r);
    osb_ws_reader_init(&r, true);
    hn = osb_ws_frame_header(h, true, 2, UINT64_C(1) << 62, m);
    OK(osb_ws_reader_feed(&r, h, hn, NULL, NULL, &cc, &err) == -1 && cc == 1009,
       "huge 64-bit length is 1009");
    osb_ws_reader_free(&r);

    /* Exactly OSB_MAX_WS_MESSAGE in many fragments is accepted. */
    osb_ws_reader_init(&r, true);
    size_t chunk = 1 << 16, total = 0;
    uint8_t *payload = calloc(1, chunk);
    struct log l = {0};
    osb_buf_init(&l.b, 1 << 30);
    int rc = 0;
    for (size_t sent = 0; sent < OSB_MAX_WS_MESSAGE && rc == 0; sent += chunk) {
        osb_buf_reset(&b);
        frame(&b, sent + chunk >= OSB_MAX_WS_MESSAGE, sent ? 0 : 2, payload, chunk, m);
        rc = osb_ws_reader_feed(&r, (uint8_t *)b.data, b.len, &log_cbs, &l, &cc, &err);
        total += chunk;
    }
    OK(rc == 0 && l.b.len == OSB_MAX_WS_MESSAGE + 4, "OSB_MAX_WS_MESSAGE in 64 KiB fragments");
    OK(r._msg_cap == 0, "large message buffer released after delivery");
    osb_buf_free(&l.b);
    osb_ws_reader_free(&r);
    free(payload);
    osb_buf_free(&b);
}

static void test_reader_stop_and_sticky(void)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 20);
    frame(&b, true, 1, "one", 3, MASK);
    frame(&b, true, 9, "", 0, MASK);
    frame(&b, true, 1, "three", 5, MASK);
    struct osb_ws_reader r;
    struct log l = {0};
    osb_buf_init(&l.b, 1 << 20);
    l.stop_at = 2;
    osb_ws_reader_init(&r, true);
    OK(osb_ws_reader_feed(&r, (uint8_t *)b.data, b.len, &log_cbs, &l, NULL, NULL) == 1 &&
           l.calls == 2,
       "callback stop returns 1 at once");
    OK(osb_ws_reader_feed(&r, (uint8_t *)b.data, b.len, &log_cbs, &l, NULL, NULL) == 1 &&
           l.calls == 2,
       "stopped reader stays stopped");
    osb_ws_reader_free(&r);

    osb_ws_reader_init(&r, true);
    uint8_t junk[] = {0xF1, 0x80, 0, 0, 0, 0};
    int cc = 0;
    struct osb_err err = {0};
    OK(osb_ws_reader_feed(&r, junk, sizeof junk, NULL, NULL, &cc, &err) == -1 && cc == 1002,
       "protocol error");
    cc = 0;
    err.msg[0] = 0;
    OK(osb_ws_reader_feed(&r, (uint8_t *)b.data, b.len, &log_cbs, &l, &cc, &err) == -1 &&
           cc == 1002 && strstr(err.msg, "reserved bits"),
       "error is sticky");
    OK(osb_ws_reader_feed(&r, NULL, 0, NULL, NULL, NULL, NULL) == -1, "NULL outs tolerated");
    osb_ws_reader_free(&r);

    osb_ws_reader_init(&r, true);
    osb_buf_reset(&b);
    frame(&b, true, 8, "\x03\xe8", 2, MASK);
    OK(osb_ws_reader_feed(&r, (uint8_t *)b.data, b.len, NULL, NULL, NULL, NULL) == 0 &&
           osb_ws_reader_closed(&r),
       "closed after a close frame");
    OK(osb_ws_reader_feed(&r, junk, sizeof junk, NULL, NULL, NULL, NULL) == 0,
       "bytes after close are ignored, even garbage");
    osb_ws_reader_free(&r);
    osb_buf_free(&l.b);
    osb_buf_free(&b);
}

/* Random valid frame sequences, masked and not, random splits. */
static void test_reader_random(void)
{
    srand(3);
    int bad = 0;
    for (int iter = 0; iter < 1000 && bad < 3; iter++) {
        bool server = rand() % 2;
        uint8_t mk[4] = {(uint8_t)rand(), (uint8_t)rand(), (uint8_t)rand(), (uint8_t)rand()};
        struct osb_buf in, want;
        osb_buf_init(&in, 1 << 24);
        osb_buf_init(&want, 1 << 24);
        MUST(osb_buf_adds(&want, ""));
        int msgs = rand() % 5;
        for (int k = 0; k < msgs; k++) {
            int op = 1 + rand() % 2, frags = 1 + rand() % 3;
            struct osb_buf joined;
            osb_buf_init(&joined, 1 << 24);
            for (int f = 0; f < frags; f++) {
                size_t n = (size_t)(rand() % 3 == 0 ? rand() % 70000 : rand() % 130);
                char *p = malloc(n + 1);
                for (size_t i = 0; i < n; i++)
                    p[i] = (char)('a' + rand() % 26);
                frame(&in, f == frags - 1, f ? 0 : op, p, n, server ? mk : NULL);
                MUST(osb_buf_add(&joined, p, n));
                free(p);
                if (f < frags - 1 && rand() % 2 == 0) { /* between fragments */
                    frame(&in, true, 9, "pg", 2, server ? mk : NULL);
                    MUST(osb_buf_adds(&want, "[9:pg]"));
                }
            }
            MUST(osb_buf_addf(&want, "[%d:", op));
            MUST(osb_buf_add(&want, joined.data, joined.len));
            MUST(osb_buf_adds(&want, "]"));
            osb_buf_free(&joined);
        }
        size_t cuts[6];
        for (int k = 0; k < 6; k++)
            cuts[k] = in.len ? (size_t)rand() % in.len : 0;
        for (int k = 1; k < 6; k++)
            for (int q = k; q > 0 && cuts[q] < cuts[q - 1]; q--) {
                size_t t = cuts[q];
                cuts[q] = cuts[q - 1];
                cuts[q - 1] = t;
            }
        struct log l = {0};
        struct osb_err err = {0};
        int cc = 0;
        int rc = read_cuts(server, 0, (uint8_t *)in.data, in.len, cuts, 6, &l, &cc, &err);
        if (rc != 0 || !bytes_eq((uint8_t *)l.b.data, l.b.len, (uint8_t *)want.data, want.len)) {
            printf("# iter %d: rc %d (%s)\n", iter, rc, err.msg);
            bad++;
        }
        osb_buf_free(&l.b);
        osb_buf_free(&in);
        osb_buf_free(&want);
    }
    OK(bad == 0, "1000 random frame sequences with random splits");
}

int main(void)
{
    test_accept_key();
    test_frame_header();
    test_mask();
    test_utf8();
    test_close_payload();
    test_reader_rfc_examples();
    test_reader_messages();
    test_reader_errors();
    test_reader_limits();
    test_reader_stop_and_sticky();
    test_reader_random();
    return tap_done();
}
