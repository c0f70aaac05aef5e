#include "execd/lines.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void osb_lines_init(struct osb_lines *l, size_t max)
{
    memset(l, 0, sizeof *l);
    l->max = max ? max : 1;
}

void osb_lines_reset(struct osb_lines *l)
{
    l->part_len = 0;
    l->skip_lf = false;
}

void osb_lines_free(struct osb_lines *l)
{
    free(l->part);
    l->part = NULL;
    l->part_len = l->part_cap = 0;
}

static void part_add(struct osb_lines *l, const char *p, size_t n)
{
    if (l->part_len + n > l->part_cap) {
        size_t cap = l->part_cap ? l->part_cap : 256;
        while (cap < l->part_len + n)
            cap *= 2;
        l->part = osb_xrealloc(l->part, cap);
        l->part_cap = cap;
    }
    memcpy(l->part + l->part_len, p, n);
    l->part_len += n;
}

/* Where to cut a too-long piece: at n, or a little earlier so that the
 * next piece does not start with a UTF-8 continuation byte. p[n] exists. */
static size_t cut_point(const char *p, size_t n)
{
    for (size_t back = 0; back < 4 && back < n; back++)
        if (((unsigned char)p[n - back] & 0xC0) != 0x80)
            return n - back;
    return n;
}

/* Append unterminated bytes, reporting pieces while more than `max` wait. */
static void add_unterminated(struct osb_lines *l, const char *p, size_t n, osb_lines_fn fn,
                             void *ud)
{
    part_add(l, p, n);
    size_t off = 0;
    while (l->part_len - off > l->max) {
        size_t cut = cut_point(l->part + off, l->max);
        fn(ud, l->part + off, cut);
        off += cut;
    }
    if (off) {
        memmove(l->part, l->part + off, l->part_len - off);
        l->part_len -= off;
    }
}

static void emit(struct osb_lines *l, const char *p, size_t n, osb_lines_fn fn, void *ud)
{
    if (!l->part_len && n <= l->max) {
        fn(ud, p, n);
        return;
    }
    add_unterminated(l, p, n, fn, ud);
    fn(ud, l->part, l->part_len);
    l->part_len = 0;
}

/* Next "\n" or "\r" at or after p, using cached memchr results so a chunk is
 * scanned for each byte value only once. */
struct scan {
    const char *nl, *cr, *end;
};

static const char *next_term(struct scan *s, const char *p)
{
    if (s->nl && s->nl < p)
        s->nl = memchr(p, '\n', (size_t)(s->end - p));
    if (s->cr && s->cr < p)
        s->cr = memchr(p, '\r', (size_t)(s->end - p));
    if (!s->nl)
        return s->cr;
    if (!s->cr)
        return s->nl;
    return s->nl < s->cr ? s->nl : s->cr;
}

void osb_lines_feed(struct osb_lines *l, const char *data, size_t n, osb_lines_fn fn, void *ud)
{
    const char *p = data, *end = data + n;
    if (n && l->skip_lf && *p == '\n')
        p++;
    if (n)
        l->skip_lf = false;
    struct scan s = {memchr(p, '\n', (size_t)(end - p)), memchr(p, '\r', (size_t)(end - p)), end};
    while (p < end) {
        const char *t = next_term(&s, p);
        if (!t) {
            add_unterminated(l, p, (size_t)(end - p), fn, ud);
            return;
        }
        emit(l, p, (size_t)(t - p), fn, ud);
        p = t + 1;
        if (*t == '\r') {
            if (p == end)
                l->skip_lf = true;
            else if (*p == '\n')
                p++;
        }
    }
}

void osb_lines_flush(struct osb_lines *l, osb_lines_fn fn, void *ud)
{
    if (l->part_len)
        fn(ud, l->part, l->part_len);
    l->part_len = 0;
    l->skip_lf = false;
}
