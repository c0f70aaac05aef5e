/* The client side WebSocket reader: one frame's parser (lengths of every
 * size class, partial input, what a server must not send), then the
 * message reader fed a server's byte stream split every possible way:
 * pings between fragments, joined fragments, close codes, size limits. */
#include <stdlib.h>

#include "http/ws.h"
#include "tap.h"
#include "wsframe.h"

static ssize_t parse(const uint8_t *b, size_t n, struct osbcl_wsframe *f, const char **why)
{
    *why = NULL;
    return osbcl_wsframe_parse(b, n, 1 << 20, f, why);
}

static void test_parse(void)
{
    struct osbcl_wsframe f;
    const char *why;
    const uint8_t small[] = {0x82, 3, 1, 'h', 'i'};
    for (size_t n = 0; n < sizeof small; n++)
        OK(parse(small, n, &f, &why) == 0, "a partial frame is not complete yet");
    IS_INT(parse(small, sizeof small, &f, &why), 5, "a small binary frame");
    OK(f.fin && f.opcode == 2 && f.len == 3 && f.payload == small + 2, "its fields");

    uint8_t mid[4 + 300] = {0x01, 126, 300 >> 8, 300 & 255};
    IS_INT(parse(mid, sizeof mid - 1, &f, &why), 0, "16-bit length, one byte short");
    IS_INT(parse(mid, sizeof mid, &f, &why), 304, "16-bit length");
    OK(!f.fin && f.opcode == 1 && f.len == 300, "a first fragment of text");

    static uint8_t big[10 + 70000] = {0x80, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70};
    IS_INT(parse(big, sizeof big, &f, &why), 10 + 70000, "64-bit length");
    OK(f.fin && f.opcode == 0 && f.len == 70000, "a last continuation");

    const uint8_t masked[] = {0x82, 0x81, 1, 2, 3, 4, 0};
    IS_INT(parse(masked, sizeof masked, &f, &why), -1, "a masked server frame is refused");
    const uint8_t rsv[] = {0xc2, 0};
    IS_INT(parse(rsv, sizeof rsv, &f, &why), -1, "RSV bits are refused");
    const uint8_t op[] = {0x83, 0};
    IS_INT(parse(op, sizeof op, &f, &why), -1, "an unknown opcode is refused");
    const uint8_t op2[] = {0x8b, 0};
    IS_INT(parse(op2, sizeof op2, &f, &why), -1, "a reserved control opcode is refused");
    const uint8_t ctl[] = {0x09, 0};
    IS_INT(parse(ctl, sizeof ctl, &f, &why), -1, "a fragmented ping is refused");
    const uint8_t ctl2[] = {0x89, 126, 0, 200};
    IS_INT(parse(ctl2, sizeof ctl2, &f, &why), -1, "a ping over 125 bytes is refused");
    const uint8_t huge[] = {0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    IS_INT(parse(huge, sizeof huge, &f, &why), -1, "a length over the limit is refused early");
    OK(why != NULL, "with a reason");
}

/* Appends one unmasked frame to b. */
static void frame(struct osbcl_sb *b, int first, const void *data, size_t len)
{
    uint8_t h[OSB_WS_MAX_HEADER];
    size_t n = osb_ws_frame_header(h, first & 0x80, first & 0x0f, len, NULL);
    osbcl_sb_add(b, h, n);
    osbcl_sb_add(b, data, len);
}

/* Feeds in pieces of step bytes, writing each message as "op:len:data|"
 * (close: "8:code:reason|"); returns the last osbcl_wsr_next result. */
static int run(const struct osbcl_sb *in, size_t step, size_t max, struct osbcl_sb *out,
               const char **why)
{
    struct osbcl_wsr r = {.max = max};
    int rc = 0;
    for (size_t i = 0; i < in->len && rc >= 0; i += step) {
        size_t n = in->len - i < step ? in->len - i : step;
        if (osbcl_wsr_feed(&r, in->p + i, n) < 0)
            return OSBC_E_NOMEM;
        struct osbcl_wsmsg m;
        while ((rc = osbcl_wsr_next(&r, &m, why)) == 1) {
            osbcl_sb_addf(out, "%d:%zu:", m.opcode,
                          m.opcode == OSB_WS_OP_CLOSE ? (size_t)m.close_code : m.len);
            osbcl_sb_add(out, m.data, m.len);
            osbcl_sb_adds(out, "|");
        }
    }
    osbcl_wsr_free(&r);
    return rc;
}

static void test_reader(void)
{
    struct osbcl_sb in = {0};
    frame(&in, 0x89, "p1", 2);        /* ping */
    frame(&in, 0x01, "{\"typ", 5);    /* text, first fragment */
    frame(&in, 0x89, "", 0);          /* a ping between fragments */
    frame(&in, 0x00, "e\":", 3);      /* continuation */
    frame(&in, 0x80, "\"exit\"}", 7); /* last continuation */
    frame(&in, 0x82, "\001hi", 3);    /* binary */
    char big[300];
    memset(big, 'b', sizeof big);
    frame(&in, 0x82, big, sizeof big); /* 16-bit length */
    frame(&in, 0x02, "\002a", 2);      /* fragmented binary */
    frame(&in, 0x80, "b", 1);
    frame(&in, 0x8a, "", 0);                    /* pong */
    frame(&in, 0x81, "", 0);                    /* empty text */
    frame(&in, 0x88, "\x0f\xa1TAKEN_OVER", 12); /* close 4001 */
    struct osbcl_sb want = {0};
    osbcl_sb_adds(&want, "9:2:p1|9:0:|1:15:{\"type\":\"exit\"}|2:3:\001hi|2:300:");
    osbcl_sb_add(&want, big, sizeof big);
    osbcl_sb_adds(&want, "|2:3:\002ab|10:0:|1:0:|8:4001:TAKEN_OVER|");
    MUST(in.oom || want.oom ? -1 : 0);
    for (size_t step = 1; step <= in.len; step += step < 16 ? 1 : 37) {
        struct osbcl_sb out = {0};
        const char *why = NULL;
        int rc = run(&in, step, 1024, &out, &why);
        char name[80];
        snprintf(name, sizeof name, "every message, fed %zu byte(s) at a time", step);
        OK(rc == 0 && out.len == want.len && !memcmp(out.p, want.p, want.len), name);
        if (rc)
            printf("# rc %d: %s\n", rc, why);
        osbcl_sb_free(&out);
    }
    osbcl_sb_free(&want);
    osbcl_sb_free(&in);
}

/* One stream that must fail; returns the reason. */
static const char *bad(const char *name, size_t max, void (*build)(struct osbcl_sb *))
{
    struct osbcl_sb in = {0}, out = {0};
    build(&in);
    const char *why = NULL;
    int rc = run(&in, 1, max, &out, &why);
    IS_INT(rc, OSBC_E_PROTOCOL, name);
    osbcl_sb_free(&in);
    osbcl_sb_free(&out);
    return why;
}

static void b_masked(struct osbcl_sb *b)
{
    osbcl_sb_add(b, "\x82\x81\x01\x02\x03\x04\x00", 7);
}
static void b_cont(struct osbcl_sb *b)
{
    frame(b, 0x80, "x", 1);
}
static void b_nested(struct osbcl_sb *b)
{
    frame(b, 0x01, "a", 1);
    frame(b, 0x81, "b", 1);
}
static void b_utf8(struct osbcl_sb *b)
{
    frame(b, 0x81, "\xff\xfe", 2);
}
static void b_utf8_split(struct osbcl_sb *b)
{
    frame(b, 0x01, "\xc3", 1);     /* a character split across fragments is fine ... */
    frame(b, 0x80, "\xa9\xff", 2); /* ... a bad byte after it is not */
}
static void b_big_frags(struct osbcl_sb *b)
{
    frame(b, 0x02, "123456", 6);
    frame(b, 0x80, "789012", 6);
}
static void b_big_head(struct osbcl_sb *b)
{
    osbcl_sb_add(b, "\x82\x7f\x00\x00\x00\x01\x00\x00\x00\x00", 10); /* no payload needed */
}
static void b_close1(struct osbcl_sb *b)
{
    frame(b, 0x88, "\x03", 1);
}

static void test_errors(void)
{
    bad("a masked frame", 100, b_masked);
    bad("a continuation of nothing", 100, b_cont);
    bad("a new message inside a fragmented one", 100, b_nested);
    bad("text that is not UTF-8", 100, b_utf8);
    bad("a bad byte after a split character", 100, b_utf8_split);
    const char *why = bad("fragments over the limit", 10, b_big_frags);
    OK(why && strstr(why, "limit"), "named as over the limit");
    why = bad("a frame header over the limit, before its payload", 1 << 20, b_big_head);
    OK(why && strstr(why, "limit"), "named as over the limit");
    bad("a close payload of one byte", 100, b_close1);

    struct osbcl_sb in = {0}, out = {0};
    frame(&in, 0x88, "", 0);
    frame(&in, 0x01, "\xc3", 1);
    frame(&in, 0x80, "\xa9", 1);
    const char *w = NULL;
    IS_INT(run(&in, 3, 100, &out, &w), 0, "an empty close, a split character");
    IS_STR(out.p, "8:1005:|1:2:\xc3\xa9|", "close without a code is 1005; the character joined");
    osbcl_sb_free(&in);
    osbcl_sb_free(&out);

    /* A frame just under the limit passes; bytes after it stay buffered. */
    frame(&in, 0x82, "0123456789", 10);
    frame(&in, 0x82, "x", 1);
    IS_INT(run(&in, in.len, 10, &out, &w), 0, "a frame at the limit");
    IS_STR(out.p, "2:10:0123456789|2:1:x|", "both frames from one feed");
    osbcl_sb_free(&in);
    osbcl_sb_free(&out);
}

int main(void)
{
    test_parse();
    test_reader();
    test_errors();
    return tap_done();
}
