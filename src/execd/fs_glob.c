#include "execd/fs_glob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define MAX_ALTERNATIVES 256

struct osb_fs_glob {
    char **alts;
    size_t nalts;
};

/* One code point at s (Go's utf8.DecodeRune: a bad byte decodes as U+FFFD
 * of length 1). */
static uint32_t rune_at(const char *s, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *len = 1;
        return u[0];
    }
    size_t n = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    uint32_t r = n == 4 ? u[0] & 7u : n == 3 ? u[0] & 15u : u[0] & 31u;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            n = 0;
            break;
        }
        r = r << 6 | (u[i] & 0x3Fu);
    }
    if (n == 0 || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF) || (n == 2 && r < 0x80) ||
        (n == 3 && r < 0x800) || (n == 4 && r < 0x10000)) {
        *len = 1;
        return 0xFFFD;
    }
    *len = n;
    return r;
}

/* ---- validation ---- */

/* Index just past the class starting at p[i] == '[', or 0 if malformed. */
static size_t class_end(const char *p, size_t i)
{
    i++;
    if (p[i] == '!' || p[i] == '^')
        i++;
    if (!p[i] || p[i] == ']')
        return 0;
    while (p[i] && p[i] != ']') {
        if (p[i] == '\\' && !p[++i])
            return 0;
        i++;
    }
    return p[i] == ']' ? i + 1 : 0;
}

static bool valid(const char *p)
{
    int depth = 0;
    for (size_t i = 0; p[i];) {
        if (p[i] == '\\') {
            if (!p[i + 1])
                return false;
            i += 2;
        } else if (p[i] == '[') {
            if (!(i = class_end(p, i)))
                return false;
        } else {
            if (p[i] == '{')
                depth++;
            else if (p[i] == '}' && depth > 0)
                depth--;
            i++;
        }
    }
    return depth == 0;
}

/* ---- brace expansion ---- */

/* Skip one pattern element (escape, class or plain byte) at p[i]. */
static size_t skip_elem(const char *p, size_t i)
{
    if (p[i] == '\\')
        return i + 2;
    if (p[i] == '[')
        return class_end(p, i);
    return i + 1;
}

/* Find the first top-level '{' and its matching '}'; false if none. */
static bool find_brace(const char *p, size_t *open, size_t *close)
{
    size_t i = 0;
    while (p[i] && p[i] != '{')
        i = skip_elem(p, i);
    if (!p[i])
        return false;
    *open = i;
    int depth = 0;
    for (; p[i]; i = skip_elem(p, i)) {
        if (p[i] == '{')
            depth++;
        else if (p[i] == '}' && --depth == 0)
            break;
    }
    *close = i;
    return true;
}

static int expand(struct osb_fs_glob *g, const char *p, size_t *cap)
{
    size_t open, close;
    if (!find_brace(p, &open, &close)) {
        if (g->nalts >= MAX_ALTERNATIVES)
            return -1;
        if (g->nalts == *cap) {
            *cap = *cap ? *cap * 2 : 4;
            g->alts = osb_xrealloc(g->alts, *cap * sizeof *g->alts);
        }
        g->alts[g->nalts++] = osb_xstrdup(p);
        return 0;
    }
    size_t plen = strlen(p), start = open + 1;
    char *buf = osb_xmalloc(plen + 1);
    int depth = 0, rc = 0;
    for (size_t i = start; rc == 0 && i <= close; i = skip_elem(p, i)) {
        if (p[i] == '{')
            depth++;
        else if (p[i] == '}' && depth > 0 && i != close)
            depth--;
        if (i == close || (p[i] == ',' && depth == 0)) {
            /* prefix + alternative + suffix */
            size_t n = 0;
            memcpy(buf, p, open), n = open;
            memcpy(buf + n, p + start, i - start), n += i - start;
            memcpy(buf + n, p + close + 1, plen - close - 1), n += plen - close - 1;
            buf[n] = '\0';
            rc = expand(g, buf, cap);
            start = i + 1;
        }
    }
    free(buf);
    return rc;
}

struct osb_fs_glob *osb_fs_glob_new(const char *pattern, struct osb_err *err)
{
    if (!valid(pattern)) {
        osb_err_set(err, OSB_E_INVALID, "invalid glob pattern '%s'", pattern);
        return NULL;
    }
    struct osb_fs_glob *g = osb_xcalloc(1, sizeof *g);
    size_t cap = 0;
    if (expand(g, pattern, &cap) < 0) {
        osb_fs_glob_free(g);
        osb_err_set(err, OSB_E_INVALID, "glob pattern '%s' expands to more than %d alternatives",
                    pattern, MAX_ALTERNATIVES);
        return NULL;
    }
    return g;
}

void osb_fs_glob_free(struct osb_fs_glob *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nalts; i++)
        free(g->alts[i]);
    free(g->alts);
    free(g);
}

/* ---- matching ---- */

/* Does rune r match the class at p[*i] == '['? Advances *i past it. */
static bool class_match(const char *p, size_t *i, uint32_t r)
{
    size_t k = *i + 1, n;
    bool negate = p[k] == '!' || p[k] == '^', matched = false, have_last = false;
    if (negate)
        k++;
    uint32_t last = 0;
    while (p[k] != ']') {
        uint32_t c = rune_at(p + k, &n);
        k += n;
        if (have_last && c == '-' && p[k] != ']') {
            if (p[k] == '\\')
                k++;
            uint32_t hi = rune_at(p + k, &n);
            k += n;
            if (last <= r && r <= hi)
                matched = true;
            have_last = false;
            continue;
        }
        if (c == '\\') {
            c = rune_at(p + k, &n);
            k += n;
        }
        if (c == r)
            matched = true;
        last = c;
        have_last = true;
    }
    *i = k + 1;
    return matched != negate;
}

static bool zero_length(const char *rest)
{
    return !strcmp(rest, "") || !strcmp(rest, "*") || !strcmp(rest, "**") || !strcmp(rest, "/**");
}

/* Backtracking state: the last `*` and the last `** /` seen. */
struct bt {
    size_t star_p, star_n, dstar_p, dstar_n;
    bool star, dstar;
};

/* Handle '*' or '**' at p[*pi]; returns false if nothing more to do. */
static bool on_star(const char *p, size_t *pi, size_t ni, bool *seg_start, struct bt *b,
                    bool *matched_all)
{
    (*pi)++;
    if (p[*pi] == '*') {
        (*pi)++;
        if (*seg_start) {
            if (!p[*pi]) {
                *matched_all = true;
                return false;
            }
            if (p[*pi] == '/') {
                (*pi)++;
                b->dstar = true, b->dstar_p = *pi, b->dstar_n = ni;
                b->star = false;
                return true;
            }
        }
    }
    *seg_start = false;
    b->star = true, b->star_p = *pi, b->star_n = ni;
    return true;
}

/* Try to consume one pattern element against name[*ni]. */
static bool step(const char *p, size_t *pi, const char *name, size_t *ni, bool *seg_start)
{
    size_t nl, pl;
    uint32_t r = rune_at(name + *ni, &nl);
    if (p[*pi] == '?') {
        if (r == '/')
            return false;
        (*pi)++, *ni += nl, *seg_start = false;
        return true;
    }
    if (p[*pi] == '[') {
        size_t k = *pi;
        if (!class_match(p, &k, r))
            return false;
        *pi = k, *ni += nl, *seg_start = false;
        return true;
    }
    size_t k = *pi + (p[*pi] == '\\');
    uint32_t c = rune_at(p + k, &pl);
    if (c != r)
        return false;
    *pi = k + pl, *ni += nl, *seg_start = c == '/';
    return true;
}

/* Retreat to the latest backtrack point; false if there is none left. */
static bool backtrack(const char *name, size_t *pi, size_t *ni, bool *seg_start, struct bt *b)
{
    size_t nl;
    if (b->star && name[b->star_n] && rune_at(name + b->star_n, &nl) != '/') {
        b->star_n += nl;
        *pi = b->star_p, *ni = b->star_n, *seg_start = false;
        return true;
    }
    if (b->dstar) {
        const char *slash = strchr(name + b->dstar_n, '/');
        if (slash) {
            b->dstar_n = (size_t)(slash - name) + 1;
            *pi = b->dstar_p, *ni = b->dstar_n, *seg_start = true;
            b->star = false;
            return true;
        }
    }
    return false;
}

static bool match_one(const char *p, const char *name)
{
    size_t pi = 0, ni = 0;
    bool seg_start = true, all = false;
    struct bt b = {0};
    while (name[ni]) {
        if (p[pi] == '*') {
            if (!on_star(p, &pi, ni, &seg_start, &b, &all))
                return all;
            continue;
        }
        if (p[pi] && step(p, &pi, name, &ni, &seg_start))
            continue;
        if (!backtrack(name, &pi, &ni, &seg_start, &b))
            return false;
    }
    return zero_length(p + pi);
}

bool osb_fs_glob_match(const struct osb_fs_glob *g, const char *name)
{
    for (size_t i = 0; i < g->nalts; i++)
        if (match_one(g->alts[i], name))
            return true;
    return false;
}
