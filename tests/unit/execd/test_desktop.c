/* src/execd/keysym and the desktop module's pure parts: key names,
 * characters to keysyms, UTF-8 decoding, the typed request parsers and
 * the screenshot downscale. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "execd/desktop.h"
#include "execd/keysym.h"
#include "tap.h"

static void test_names(void)
{
    bool mod;
    IS_INT(osb_keysym_for_name("ctrl", &mod), OSB_XK_CONTROL_L, "ctrl");
    OK(mod, "ctrl is a modifier");
    IS_INT(osb_keysym_for_name("Shift", &mod), OSB_XK_SHIFT_L, "names ignore case");
    IS_INT(osb_keysym_for_name("super", &mod), OSB_XK_SUPER_L, "super");
    IS_INT(osb_keysym_for_name("meta", &mod), OSB_XK_META_L, "meta");
    IS_INT(osb_keysym_for_name("alt", &mod), OSB_XK_ALT_L, "alt");
    IS_INT(osb_keysym_for_name("enter", &mod), 0xff0d, "enter is Return");
    OK(!mod, "enter is not a modifier");
    IS_INT(osb_keysym_for_name("tab", &mod), 0xff09, "tab");
    IS_INT(osb_keysym_for_name("escape", &mod), 0xff1b, "escape");
    IS_INT(osb_keysym_for_name("backspace", &mod), 0xff08, "backspace");
    IS_INT(osb_keysym_for_name("delete", &mod), 0xffff, "delete");
    IS_INT(osb_keysym_for_name("up", &mod), 0xff52, "up");
    IS_INT(osb_keysym_for_name("pagedown", &mod), 0xff56, "pagedown");
    IS_INT(osb_keysym_for_name("home", &mod), 0xff50, "home");
    IS_INT(osb_keysym_for_name("end", &mod), 0xff57, "end");
    IS_INT(osb_keysym_for_name("f1", &mod), 0xffbe, "f1");
    IS_INT(osb_keysym_for_name("F12", &mod), 0xffc9, "F12");
    IS_INT(osb_keysym_for_name("f13", &mod), 0, "f13 is unknown");
    IS_INT(osb_keysym_for_name("f0", &mod), 0, "f0 is unknown");
    IS_INT(osb_keysym_for_name("space", &mod), 0x20, "space");
    IS_INT(osb_keysym_for_name("c", &mod), 'c', "a letter is its keysym");
    IS_INT(osb_keysym_for_name("C", &mod), 'C', "an upper-case letter too");
    IS_INT(osb_keysym_for_name("é", &mod), 0xe9, "Latin-1 is its code point");
    IS_INT(osb_keysym_for_name("€", &mod), 0x010020ac, "other Unicode: 0x01000000 + code point");
    IS_INT(osb_keysym_for_name("ab", &mod), 0, "two characters are no key");
    IS_INT(osb_keysym_for_name("", &mod), 0, "nor is nothing");
    IS_INT(osb_keysym_for_name("nosuchkey", &mod), 0, "unknown name");
}

static void test_codepoints(void)
{
    IS_INT(osb_keysym_for_codepoint('\n'), 0xff0d, "newline types Return");
    IS_INT(osb_keysym_for_codepoint('\t'), 0xff09, "tab types Tab");
    IS_INT(osb_keysym_for_codepoint(0x07), 0, "other control characters type nothing");
    IS_INT(osb_keysym_for_codepoint(0x85), 0, "C1 controls type nothing");
    IS_INT(osb_keysym_for_codepoint(0xff), 0xff, "ÿ is Latin-1");
    IS_INT(osb_keysym_for_codepoint(0x1f600), 0x0101f600, "an emoji");
}

static void test_utf8(void)
{
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", *end = s + strlen(s);
    uint32_t cp[4];
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= osb_utf8_next(&s, end, &cp[i]) == 0;
    OK(ok && s == end, "1- to 4-byte characters decode");
    OK(cp[0] == 'a' && cp[1] == 0xe9 && cp[2] == 0x20ac && cp[3] == 0x1f600, "to their values");
    static const char *const bad[] = {"\xc0\x80",         "\xe0\x80\x80", "\xed\xa0\x80",
                                      "\xf4\x90\x80\x80", "\x80",         "\xc3",
                                      "\xe2\x28\xa1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *p = bad[i];
        OK(osb_utf8_next(&p, p + strlen(p), &cp[0]) < 0 && p == bad[i], "malformed UTF-8 refused");
    }
}

static json_t *j(const char *text)
{
    return json_loads(text, JSON_ALLOW_NUL, NULL);
}

static void test_parse_mouse(void)
{
    struct osb_mouse_op op;
    struct osb_err err = {0};
    json_t *b = j("{\"action\":\"drag\",\"x\":1,\"y\":2,\"toX\":3,\"toY\":4,\"button\":\"right\"}");
    OK(osb_desktop_parse_mouse(b, &op, &err) == 0, "a drag parses");
    OK(op.action == OSB_MOUSE_DRAG && op.has_xy && op.x == 1 && op.y == 2 && op.to_x == 3 &&
           op.to_y == 4 && op.button == 3,
       "into its fields");
    json_decref(b);
    b = j("{\"action\":\"click\"}");
    OK(osb_desktop_parse_mouse(b, &op, &err) == 0 && !op.has_xy && op.button == 1,
       "a click without x, y: where the pointer is, left button");
    json_decref(b);
    b = j("{\"action\":\"scroll\",\"dy\":-3}");
    OK(osb_desktop_parse_mouse(b, &op, &err) == 0 && op.dy == -3 && op.dx == 0, "scroll dy");
    json_decref(b);
    b = j("{\"action\":\"scroll\",\"dy\":1000}");
    OK(osb_desktop_parse_mouse(b, &op, &err) < 0 && strstr(err.msg, "'dy'"), "dy is bounded");
    json_decref(b);
    b = j("{\"action\":\"click\",\"y\":5}");
    OK(osb_desktop_parse_mouse(b, &op, &err) < 0 && strstr(err.msg, "'x'"), "y without x");
    json_decref(b);
}

static void test_parse_keys(void)
{
    struct osb_desktop_keys k;
    struct osb_err err = {0};
    json_t *b = j("{\"action\":\"press\",\"keys\":[\"ctrl\",\"shift\",\"t\"]}");
    OK(osb_desktop_parse_keys(b, &k, &err) == 0 && !k.type && k.nsyms == 3, "press parses");
    OK(k.syms[0] == OSB_XK_CONTROL_L && k.syms[1] == OSB_XK_SHIFT_L && k.syms[2] == 't',
       "to keysyms");
    json_decref(b);
    b = j("{\"action\":\"type\",\"text\":\"a\\u0000b\"}");
    OK(osb_desktop_parse_keys(b, &k, &err) == 0 && k.type && k.len == 3,
       "type keeps the text's length past a NUL");
    json_decref(b);
    b = j("{\"action\":\"press\",\"keys\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\","
          "\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]}");
    OK(osb_desktop_parse_keys(b, &k, &err) < 0 && strstr(err.msg, "'keys'"), "17 keys refused");
    json_decref(b);
}

static void test_downscale(void)
{
    uint8_t src[4 * 2 * 3], dst[2 * 1 * 3];
    for (int i = 0; i < 8; i++) { /* 4x2: columns 0,1 black/white, 2,3 red */
        int x = i % 4;
        uint8_t *p = src + i * 3;
        p[0] = x < 2 ? (x == 0 ? 0 : 255) : 200;
        p[1] = x < 2 ? (x == 0 ? 0 : 255) : 0;
        p[2] = x < 2 ? (x == 0 ? 0 : 255) : 0;
    }
    osb_desktop_downscale(src, 4, 2, dst, 2, 1);
    OK(dst[0] == 128 && dst[1] == 128 && dst[2] == 128, "a box filter averages (grey)");
    OK(dst[3] == 200 && dst[4] == 0 && dst[5] == 0, "and keeps a flat area's colour");
    uint8_t one[3];
    osb_desktop_downscale(src, 4, 2, one, 1, 1);
    IS_INT(one[0], (0 + 255 + 200 + 200 + 2) / 4, "1x1 is the rounded mean");
}

int main(void)
{
    test_names();
    test_codepoints();
    test_utf8();
    test_parse_mouse();
    test_parse_keys();
    test_downscale();
    return tap_done();
}
