#include "common/endreport.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const struct {
    enum osb_end_kind kind;
    const char *word;
    int max;
} kinds[] = {
    {OSB_END_EXITED, "exit", 255},
    {OSB_END_SIGNALED, "signal", 64},
    {OSB_END_EXEC_FAILED, "exec", 4095},
};

static bool in_range(enum osb_end_kind kind, int value, const char **word)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].kind == kind) {
            *word = kinds[i].word;
            int min = kind == OSB_END_EXITED ? 0 : 1;
            return value >= min && value <= kinds[i].max;
        }
    return false;
}

int osb_endreport_format(const struct osb_endreport *r, char *buf, size_t n)
{
    const char *word;
    if (!in_range(r->kind, r->value, &word))
        return -1;
    int len = snprintf(buf, n, "%s %d\n", word, r->value);
    return len > 0 && (size_t)len < n ? len : -1;
}

/* Decimal digits only, no sign, no leading zero (but "0"), at most 4. */
static int parse_num(const char *s, size_t n)
{
    if (n == 0 || n > 4 || (n > 1 && s[0] == '0'))
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int osb_endreport_parse(const char *buf, size_t n, struct osb_endreport *out)
{
    if (n < 2 || n > OSB_ENDREPORT_MAX || buf[n - 1] != '\n')
        return -1;
    const char *sp = memchr(buf, ' ', n - 1);
    if (!sp)
        return -1;
    size_t wlen = (size_t)(sp - buf);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strlen(kinds[i].word) != wlen || memcmp(buf, kinds[i].word, wlen) != 0)
            continue;
        int v = parse_num(sp + 1, (size_t)(buf + n - 1 - (sp + 1)));
        const char *word;
        if (v < 0 || !in_range(kinds[i].kind, v, &word))
            return -1;
        *out = (struct osb_endreport){kinds[i].kind, v};
        return 0;
    }
    return -1;
}
