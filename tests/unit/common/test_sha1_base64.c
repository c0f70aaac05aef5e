/* SHA-1 against RFC 3174's vectors; base64 against RFC 4648's, plus
 * round trips and malformed input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/sha1.h"
#include "tap.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check_sha1(const char *data, size_t len, int repeat, const char *want, const char *what)
{
    struct osb_sha1_ctx c;
    uint8_t md[OSB_SHA1_LEN];
    char got[41];
    osb_sha1_init(&c);
    for (int i = 0; i < repeat; i++)
        osb_sha1_update(&c, data, len);
    osb_sha1_final(&c, md);
    hex(md, sizeof md, got);
    IS_STR(got, want, what);
}

static void test_sha1(void)
{
    check_sha1("abc", 3, 1, "a9993e364706816aba3e25717850c26c9cd0d89d", "sha1 RFC3174 TEST1");
    const char *t2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_sha1(t2, strlen(t2), 1, "84983e441c3bd26ebaae4aa1f95129e5e54670f1", "sha1 TEST2");
    check_sha1("a", 1, 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "sha1 TEST3");
    const char *t4 = "0123456701234567012345670123456701234567012345670123456701234567";
    check_sha1(t4, 64, 10, "dea356a2cddd90c7a7ecedc5ebb563934f460452", "sha1 TEST4");
    check_sha1("", 0, 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha1 empty");

    /* Every length around the 55/56/64-byte padding edges: one-shot equals
     * byte-by-byte. */
    uint8_t buf[200], a[20], b[20];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    int same = 1;
    for (size_t n = 0; n <= sizeof buf; n++) {
        struct osb_sha1_ctx c;
        osb_sha1(buf, n, a);
        osb_sha1_init(&c);
        for (size_t i = 0; i < n; i++)
            osb_sha1_update(&c, buf + i, 1);
        osb_sha1_final(&c, b);
        same &= memcmp(a, b, 20) == 0;
    }
    OK(same, "sha1 incremental == one-shot for lengths 0..200");
    /* RFC 6455 section 1.3 example input. */
    const char *ws = "dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char enc[OSB_BASE64_ENCODED_SIZE(20)];
    osb_sha1(ws, strlen(ws), a);
    osb_base64_encode(a, 20, enc);
    IS_STR(enc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "sha1+base64 RFC6455 accept example");
}

static void test_base64_vectors(void)
{
    static const char *const v[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char out[16];
        uint8_t dec[16];
        size_t n = strlen(v[i][0]), dn = 99;
        IS_INT(osb_base64_encode((const uint8_t *)v[i][0], n, out), strlen(v[i][1]),
               "encode length");
        IS_STR(out, v[i][1], "RFC 4648 encode vector");
        IS_INT(osb_base64_decode(v[i][1], strlen(v[i][1]), dec, &dn), 0, "decode vector");
        OK(dn == n && memcmp(dec, v[i][0], n) == 0, "RFC 4648 decode vector");
    }
    uint8_t dec[16];
    size_t dn;
    OK(osb_base64_decode("Zm9vYg", 6, dec, &dn) == 0 && dn == 4 && !memcmp(dec, "foob", 4),
       "decode without padding");
    OK(osb_base64_decode("Zm9vYmE", 7, dec, &dn) == 0 && dn == 5, "decode 3-char tail unpadded");
    OK(osb_base64_decode("+/+/", 4, dec, &dn) == 0 && dn == 3 && dec[0] == 0xfb && dec[1] == 0xff &&
           dec[2] == 0xbf,
       "decode '+' and '/'");
}

static void test_base64_bad(void)
{
    static const char *const bad[] = {
        "Z",     "Zm9vY",  "Zg=",  "Zg===", "====", "Z===", "Zm9v=", "Zm=9",
        "Zm 9v", "Zm9v\n", "Zh==", "Zm9=",  "Zm-v", "Zm_v", "=Zm9",  "Zm9vY===",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t dec[16];
        size_t dn;
        char what[64];
        snprintf(what, sizeof what, "decode rejects bad input #%zu", i);
        IS_INT(osb_base64_decode(bad[i], strlen(bad[i]), dec, &dn), -1, what);
    }
    uint8_t dec[4];
    size_t dn;
    IS_INT(osb_base64_decode("Zm\0v", 4, dec, &dn), -1, "decode rejects NUL");
}

static void test_base64_roundtrip(void)
{
    uint8_t in[300], dec[OSB_BASE64_DECODED_MAX(OSB_BASE64_ENCODED_SIZE(300))];
    char enc[OSB_BASE64_ENCODED_SIZE(300)];
    int ok = 1;
    srand(42);
    for (size_t n = 0; n <= sizeof in; n++) {
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)rand();
        size_t el = osb_base64_encode(in, n, enc), dn = 0;
        ok &= el == OSB_BASE64_ENCODED_SIZE(n) - 1 && strlen(enc) == el;
        ok &= osb_base64_decode(enc, el, dec, &dn) == 0 && dn == n && !memcmp(in, dec, n);
    }
    OK(ok, "base64 round trip, lengths 0..300");
}

int main(void)
{
    test_sha1();
    test_base64_vectors();
    test_base64_bad();
    test_base64_roundtrip();
    return tap_done();
}
