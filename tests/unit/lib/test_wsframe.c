/* The client side WebSocket frame parser: lengths of every size class,
 * partial input, and what a server must not send. */
#include "tap.h"
#include "wsframe.h"

static ssize_t parse(const uint8_t *b, size_t n, struct osbcl_wsframe *f, const char **why)
{
    *why = NULL;
    return osbcl_wsframe_parse(b, n, 1 << 20, f, why);
}

int main(void)
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
    const uint8_t ctl[] = {0x09, 0};
    IS_INT(parse(ctl, sizeof ctl, &f, &why), -1, "a fragmented ping is refused");
    const uint8_t ctl2[] = {0x89, 126, 0, 200};
    IS_INT(parse(ctl2, sizeof ctl2, &f, &why), -1, "a ping over 125 bytes is refused");
    const uint8_t huge[] = {0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    IS_INT(parse(huge, sizeof huge, &f, &why), -1, "a length over the limit is refused early");
    OK(why != NULL, "with a reason");
    return tap_done();
}
