#include "execd/keysym.h"

#include <string.h>
#include <strings.h>

#include "common/cleanup.h"

static const struct {
    const char *name;
    uint32_t sym;
    bool modifier;
} names[] = {
    {"ctrl", OSB_XK_CONTROL_L, true}, {"control", OSB_XK_CONTROL_L, true},
    {"shift", OSB_XK_SHIFT_L, true},  {"alt", OSB_XK_ALT_L, true},
    {"super", OSB_XK_SUPER_L, true},  {"win", OSB_XK_SUPER_L, true},
    {"cmd", OSB_XK_SUPER_L, true},    {"meta", OSB_XK_META_L, true},
    {"enter", 0xff0d, false},         {"return", 0xff0d, false},
    {"tab", 0xff09, false},           {"escape", 0xff1b, false},
    {"esc", 0xff1b, false},           {"backspace", 0xff08, false},
    {"delete", 0xffff, false},        {"del", 0xffff, false},
    {"insert", 0xff63, false},        {"up", 0xff52, false},
    {"down", 0xff54, false},          {"left", 0xff51, false},
    {"right", 0xff53, false},         {"home", 0xff50, false},
    {"end", 0xff57, false},           {"pageup", 0xff55, false},
    {"page_up", 0xff55, false},       {"pagedown", 0xff56, false},
    {"page_down", 0xff56, false},     {"space", 0x20, false},
};

uint32_t osb_keysym_for_codepoint(uint32_t cp)
{
    if (cp == '\n' || cp == '\r')
        return 0xff0d;
    if (cp == '\t')
        return 0xff09;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
        return 0;
    if (cp < 0x100)
        return cp;
    return 0x01000000 + cp;
}

int osb_utf8_next(const char **s, const char *end, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)*s, *e = (const unsigned char *)end;
    if (p >= e)
        return -1;
    unsigned n = p[0] < 0x80                   ? 0
                 : p[0] >= 0xc2 && p[0] < 0xe0 ? 1
                 : p[0] >= 0xe0 && p[0] < 0xf0 ? 2
                 : p[0] >= 0xf0 && p[0] < 0xf5 ? 3
                                               : 4;
    if (n == 4 || (size_t)(e - p) < n + 1)
        return -1;
    uint32_t v = n == 0 ? p[0] : p[0] & (0x3f >> n);
    for (unsigned i = 1; i <= n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return -1;
        v = v << 6 | (p[i] & 0x3f);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
        return -1;
    *cp = v;
    *s += n + 1;
    return 0;
}

static uint32_t function_key(const char *name)
{
    if ((name[0] != 'f' && name[0] != 'F') || name[1] < '1' || name[1] > '9')
        return 0;
    unsigned n = (unsigned)(name[1] - '0');
    if (name[2]) {
        if (name[2] < '0' || name[2] > '9' || name[3])
            return 0;
        n = n * 10 + (unsigned)(name[2] - '0');
    }
    return n >= 1 && n <= 12 ? 0xffbe + n - 1 : 0;
}

uint32_t osb_keysym_for_name(const char *name, bool *modifier)
{
    *modifier = false;
    for (size_t i = 0; i < OSB_ARRAY_LEN(names); i++)
        if (strcasecmp(name, names[i].name) == 0) {
            *modifier = names[i].modifier;
            return names[i].sym;
        }
    uint32_t f = function_key(name);
    if (f)
        return f;
    const char *p = name, *end = name + strlen(name);
    uint32_t cp;
    if (osb_utf8_next(&p, end, &cp) < 0 || p != end)
        return 0;
    return osb_keysym_for_codepoint(cp);
}
