/* TOML 1.0 subset parser into jansson (see toml.h for what is supported).
 * A recursive-descent parser over the whole text. Table state that JSON
 * cannot hold (how a table was created, whether it is closed) lives in a
 * side object keyed by the table's address, so the duplicate-table rules of
 * the spec can be checked exactly. */
#include "common/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/xalloc.h"

/* How a table (or array) came to be; decides what may reopen it. */
enum {
    T_IMPLICIT = 1, /* created as the parent in a [a.b] header */
    T_DEFINED = 2,  /* named by its own [header] or [[header]] */
    T_DOTTED = 4,   /* created by a dotted key (a.b = 1) */
    T_FROZEN = 8,   /* an inline table or part of one: closed */
    T_AOT = 16,     /* an array made by [[header]] (others are static) */
};

/* Segments in one dotted key; a config never comes close. */
#define MAX_KEY_PARTS 64
/* Strings and keys: bounded so a hostile file cannot take the heap. */
#define MAX_STRING (16 * 1024 * 1024)

struct parser {
    const char *s, *p, *end;
    int line;
    json_t *root, *cur; /* cur: the table keys go into */
    char *cur_path;
    json_t *flags; /* "%p" of a table/array -> T_* */
    json_t *lines; /* key path -> line */
    int depth;
    char showbuf[16];
    struct osb_err *err;
};

struct key {
    char *part[MAX_KEY_PARTS];
    int n;
    const char *at; /* where the key starts, for messages */
};

static void key_free(struct key *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->part[i]);
    k->n = 0;
}

/* ---- positions and errors ---- */

static int fail_at(struct parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Line and column of `at`, computed on demand (only errors need it). */
static int fail_at(struct parser *ps, const char *at, const char *fmt, ...)
{
    int line = 1, col = 1;
    for (const char *q = ps->s; q < at && q < ps->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            col++;
        }
    }
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return osb_err_set(ps->err, OSB_E_INVALID, "line %d, column %d: %s", line, col, msg);
}
#ifdef __clang_analyzer__
/* As in err.h: the analyzer does not follow variadic functions, so spell out
 * that fail_at returns -1. */
#define fail_at(...) \
    ({ \
        (void)fail_at(__VA_ARGS__); \
        -1; \
    })
#endif

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static int utf8_seq(const unsigned char *p, const unsigned char *e, unsigned *cp_out)
{
    unsigned c = p[0], cp, min;
    int n;
    if (c < 0x80) {
        *cp_out = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (e - p < n)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *cp_out = cp;
    return n;
}

/* A short description of the character at `at` for messages. */
static const char *show(struct parser *ps, const char *at)
{
    if (at >= ps->end)
        return "end of file";
    unsigned char c = (unsigned char)*at;
    if (c == '\n' || c == '\r')
        return "a newline";
    if (c == '\t')
        return "a tab";
    if (c >= 0x20 && c < 0x7f) {
        snprintf(ps->showbuf, sizeof ps->showbuf, "'%c'", c);
        return ps->showbuf;
    }
    unsigned cp = c;
    utf8_seq((const unsigned char *)at, (const unsigned char *)ps->end, &cp);
    snprintf(ps->showbuf, sizeof ps->showbuf, "U+%04X", cp);
    return ps->showbuf;
}

/* The whole text must be UTF-8 without control characters other than tab
 * and newline (CR only before LF): checked once here, so the grammar below
 * never meets them. */
static int check_text(struct parser *ps)
{
    const unsigned char *p = (const unsigned char *)ps->p, *e = (const unsigned char *)ps->end;
    while (p < e) {
        unsigned c = *p, cp;
        if (c == '\r' && !(p + 1 < e && p[1] == '\n'))
            return fail_at(ps, (const char *)p, "a carriage return must be followed by a newline");
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            return fail_at(ps, (const char *)p,
                           "control character U+%04X is not allowed (use an escape in a string)",
                           c);
        int n = utf8_seq(p, e, &cp);
        if (n == 0)
            return fail_at(ps, (const char *)p, "invalid UTF-8");
        p += n;
    }
    return 0;
}

/* ---- table flags and line records ---- */

static int flags_of(struct parser *ps, const json_t *t)
{
    char k[32];
    snprintf(k, sizeof k, "%p", (const void *)t);
    return (int)json_integer_value(json_object_get(ps->flags, k));
}

static void flags_set(struct parser *ps, const json_t *t, int f)
{
    char k[32];
    snprintf(k, sizeof k, "%p", (const void *)t);
    json_object_set_new(ps->flags, k, json_integer(f));
}

static char *path_join(const char *base, const char *part)
{
    return *base ? osb_xasprintf("%s.%s", base, part) : osb_xstrdup(part);
}

/* *path becomes *path + "." + part; returns it. */
static char *path_push(char **path, const char *part)
{
    char *np = path_join(*path, part);
    free(*path);
    return *path = np;
}

static void record_line(struct parser *ps, const char *path, int line, bool replace)
{
    if (replace || !json_object_get(ps->lines, path))
        json_object_set_new(ps->lines, path, json_integer(line));
}

/* ---- lexical helpers ---- */

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

static bool at_newline(const struct parser *ps)
{
    return ps->p < ps->end && (*ps->p == '\n' || *ps->p == '\r');
}

static void eat_newline(struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '\r')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '\n') {
        ps->p++;
        ps->line++;
    }
}

static void skip_comment(struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '#')
        while (ps->p < ps->end && *ps->p != '\n' && *ps->p != '\r')
            ps->p++;
}

/* Whitespace, comments and newlines (inside arrays). */
static void skip_blank(struct parser *ps)
{
    for (;;) {
        skip_ws(ps);
        skip_comment(ps);
        if (!at_newline(ps))
            return;
        eat_newline(ps);
    }
}

/* After a key/value pair or a header only a comment may follow on the line. */
static int end_of_line(struct parser *ps, const char *after)
{
    skip_ws(ps);
    skip_comment(ps);
    if (ps->p >= ps->end)
        return 0;
    if (!at_newline(ps))
        return fail_at(ps, ps->p, "unexpected %s after %s (expected a newline or a comment)",
                       show(ps, ps->p), after);
    eat_newline(ps);
    return 0;
}

static bool is_bare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int add_bytes(struct parser *ps, struct osb_buf *b, const char *d, size_t n,
                     const char *open)
{
    if (osb_buf_add(b, d, n) < 0)
        return fail_at(ps, open, "string longer than %d bytes", MAX_STRING);
    return 0;
}

/* ---- strings ---- */

static void put_utf8(char *o, int *n, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp, *n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), *n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)), *n = 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), *n = 4;
    }
}

/* \uXXXX or \UXXXXXXXX at ps->p (pointing at the u/U). */
static int unicode_escape(struct parser *ps, struct osb_buf *b, const char *bs, const char *open)
{
    int digits = *ps->p == 'u' ? 4 : 8;
    ps->p++;
    unsigned cp = 0;
    for (int i = 0; i < digits; i++, ps->p++) {
        int h = ps->p < ps->end ? hexval(*ps->p) : -1;
        if (h < 0)
            return fail_at(ps, bs, "\\%c escape needs %d hex digits", digits == 4 ? 'u' : 'U',
                           digits);
        cp = cp << 4 | (unsigned)h;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail_at(ps, bs, "escape \\%c%0*X is not a Unicode scalar value",
                       digits == 4 ? 'u' : 'U', digits, cp);
    if (cp == 0)
        return fail_at(ps, bs, "strings cannot contain U+0000");
    char o[4];
    int n;
    put_utf8(o, &n, cp);
    return add_bytes(ps, b, o, (size_t)n, open);
}

/* One escape; ps->p points at the backslash. */
static int escape(struct parser *ps, struct osb_buf *b, const char *open)
{
    const char *bs = ps->p++;
    if (ps->p >= ps->end)
        return fail_at(ps, open, "unterminated string");
    char c = *ps->p, o;
    switch (c) {
    case 'b': o = '\b'; break;
    case 't': o = '\t'; break;
    case 'n': o = '\n'; break;
    case 'f': o = '\f'; break;
    case 'r': o = '\r'; break;
    case '"': o = '"'; break;
    case '\\': o = '\\'; break;
    case 'u':
    case 'U': return unicode_escape(ps, b, bs, open);
    default:
        return fail_at(ps, bs, "invalid escape sequence: backslash followed by %s",
                       show(ps, ps->p));
    }
    ps->p++;
    return add_bytes(ps, b, &o, 1, open);
}

/* A backslash ending a line in a multi-line basic string swallows the
 * newline and the whitespace that follows. Returns 1 if it was one. */
static int line_ending_backslash(struct parser *ps)
{
    const char *q = ps->p + 1;
    while (q < ps->end && (*q == ' ' || *q == '\t'))
        q++;
    if (q >= ps->end || (*q != '\n' && *q != '\r'))
        return 0;
    ps->p = q;
    for (;;) {
        skip_ws(ps);
        if (!at_newline(ps))
            return 1;
        eat_newline(ps);
    }
}

static int single_line_string(struct parser *ps, struct osb_buf *b, char q)
{
    const char *open = ps->p++;
    for (;;) {
        if (ps->p >= ps->end || at_newline(ps))
            return fail_at(ps, open, "unterminated string (a %s string ends on its line)",
                           q == '"' ? "basic" : "literal");
        if (*ps->p == q) {
            ps->p++;
            return 0;
        }
        if (q == '"' && *ps->p == '\\') {
            if (escape(ps, b, open) < 0)
                return -1;
            continue;
        }
        if (add_bytes(ps, b, ps->p, 1, open) < 0)
            return -1;
        ps->p++;
    }
}

/* Closing delimiter of a multi-line string: 3 to 5 quotes (up to two
 * quotes may sit right before the closing three). Returns 1 at the end. */
static int multi_quotes(struct parser *ps, struct osb_buf *b, char q, const char *open)
{
    size_t n = 0;
    while (ps->p + n < ps->end && ps->p[n] == q)
        n++;
    if (n < 3) {
        if (add_bytes(ps, b, ps->p, n, open) < 0)
            return -1;
        ps->p += n;
        return 0;
    }
    if (n > 5)
        return fail_at(ps, ps->p + 5, "too many quotes at the end of a multi-line string");
    if (add_bytes(ps, b, ps->p, n - 3, open) < 0)
        return -1;
    ps->p += n;
    return 1;
}

static int multi_line_string(struct parser *ps, struct osb_buf *b, char q)
{
    const char *open = ps->p;
    ps->p += 3;
    if (at_newline(ps)) /* a newline right after the opening is trimmed */
        eat_newline(ps);
    for (;;) {
        if (ps->p >= ps->end)
            return fail_at(ps, open, "unterminated multi-line string");
        char c = *ps->p;
        int rc = 0;
        if (c == q) {
            rc = multi_quotes(ps, b, q, open);
            if (rc != 0)
                return rc < 0 ? -1 : 0;
        } else if (c == '\\' && q == '"') {
            if (!line_ending_backslash(ps))
                rc = escape(ps, b, open);
        } else if (c == '\n' || c == '\r') {
            eat_newline(ps);
            rc = add_bytes(ps, b, "\n", 1, open);
        } else {
            rc = add_bytes(ps, b, ps->p++, 1, open);
        }
        if (rc < 0)
            return -1;
    }
}

static bool is_multi(const struct parser *ps)
{
    return ps->end - ps->p >= 3 && ps->p[1] == ps->p[0] && ps->p[2] == ps->p[0];
}

/* A string at ps->p (on a quote) into a new buffer; multi-line ones only
 * when allowed (keys cannot be). */
static int parse_string(struct parser *ps, bool allow_multi, char **out, size_t *len)
{
    struct osb_buf b;
    osb_buf_init(&b, MAX_STRING);
    char q = *ps->p;
    int rc;
    if (is_multi(ps)) {
        rc = allow_multi ? multi_line_string(ps, &b, q)
                         : fail_at(ps, ps->p, "a multi-line string cannot be a key");
    } else {
        rc = single_line_string(ps, &b, q);
    }
    if (rc < 0) {
        osb_buf_free(&b);
        return -1;
    }
    *out = osb_buf_steal(&b, len);
    return 0;
}

/* ---- keys ---- */

static int simple_key(struct parser *ps, char **out)
{
    if (ps->p < ps->end && (*ps->p == '"' || *ps->p == '\'')) {
        size_t len;
        return parse_string(ps, false, out, &len);
    }
    const char *start = ps->p;
    while (ps->p < ps->end && is_bare(*ps->p))
        ps->p++;
    if (ps->p == start)
        return fail_at(ps, ps->p, "expected a key, found %s", show(ps, ps->p));
    *out = osb_xstrndup(start, (size_t)(ps->p - start));
    return 0;
}

/* key = simple-key *( ws '.' ws simple-key ) */
static int parse_key(struct parser *ps, struct key *k)
{
    k->n = 0;
    k->at = ps->p;
    for (;;) {
        if (k->n == MAX_KEY_PARTS)
            return fail_at(ps, ps->p, "a dotted key has more than %d parts", MAX_KEY_PARTS);
        if (simple_key(ps, &k->part[k->n]) < 0)
            return -1;
        k->n++;
        const char *save = ps->p;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '.') {
            ps->p = save;
            return 0;
        }
        ps->p++;
        skip_ws(ps);
    }
}

/* ---- scalars ---- */

/* digits ( '_'? digits )*: underscores only between digits. Advances *q. */
static bool scan_digits(const char **q, const char *e, int base)
{
    const char *p = *q;
    bool prev_digit = false;
    for (; p < e; p++) {
        int v = hexval(*p);
        if (v >= 0 && v < base) {
            prev_digit = true;
        } else if (*p == '_' && prev_digit && p + 1 < e && hexval(p[1]) >= 0 &&
                   hexval(p[1]) < base) {
            prev_digit = false;
        } else {
            break;
        }
    }
    if (p == *q || !prev_digit)
        return false;
    *q = p;
    return true;
}

/* Copy without underscores into a bounded buffer. */
static void strip_underscores(const char *t, size_t n, char *o, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++)
        if (t[i] != '_')
            o[j++] = t[i];
    o[j] = 0;
}

static int radix_int(struct parser *ps, const char *t, size_t n, json_t **out)
{
    int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
    const char *q = t + 2;
    if (!scan_digits(&q, t + n, base) || q != t + n)
        return fail_at(ps, t, "invalid integer '%.*s'", (int)(n > 40 ? 40 : n), t);
    uint64_t v = 0;
    for (q = t + 2; q < t + n; q++) {
        if (*q == '_')
            continue;
        if (v > (uint64_t)(INT64_MAX - hexval(*q)) / (uint64_t)base)
            return fail_at(ps, t, "integer '%.*s' does not fit in 64 bits", (int)(n > 40 ? 40 : n),
                           t);
        v = v * (uint64_t)base + (uint64_t)hexval(*q);
    }
    *out = json_integer((json_int_t)v);
    return 0;
}

static int dec_int(struct parser *ps, const char *t, size_t n, json_t **out)
{
    const char *q = t, *e = t + n;
    if (q < e && (*q == '+' || *q == '-'))
        q++;
    const char *digits = q;
    if (!scan_digits(&q, e, 10) || q != e)
        return fail_at(ps, t, "invalid value '%.*s'", (int)(n > 40 ? 40 : n), t);
    if (*digits == '0' && e - digits > 1)
        return fail_at(ps, t, "leading zeros are not allowed in '%.*s'", (int)(n > 40 ? 40 : n), t);
    char buf[128];
    if (n >= sizeof buf)
        return fail_at(ps, t, "integer '%.40s...' does not fit in 64 bits", t);
    strip_underscores(t, n, buf, sizeof buf);
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
        return fail_at(ps, t, "integer '%.*s' does not fit in 64 bits", (int)(n > 40 ? 40 : n), t);
    *out = json_integer(v);
    return 0;
}

/* [sign] int ( frac [exp] | exp ), frac = '.' digits, exp = e [sign] digits */
static int parse_float(struct parser *ps, const char *t, size_t n, json_t **out)
{
    const char *q = t, *e = t + n;
    int shown = (int)(n > 40 ? 40 : n);
    if (q < e && (*q == '+' || *q == '-'))
        q++;
    const char *digits = q;
    bool ok = scan_digits(&q, e, 10), frac = false, expo = false;
    if (ok && *digits == '0' && q - digits > 1)
        return fail_at(ps, t, "leading zeros are not allowed in '%.*s'", shown, t);
    if (ok && q < e && *q == '.') {
        q++;
        ok = scan_digits(&q, e, 10);
        frac = true;
    }
    if (ok && q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        ok = scan_digits(&q, e, 10);
        expo = true;
    }
    if (!ok || q != e || !(frac || expo))
        return fail_at(ps, t, "invalid number '%.*s'", shown, t);
    char buf[256];
    if (n >= sizeof buf)
        return fail_at(ps, t, "number '%.40s...' is too long", t);
    strip_underscores(t, n, buf, sizeof buf);
    double d = strtod(buf, NULL);
    if (!isfinite(d))
        return fail_at(ps, t, "number '%.*s' is out of range", shown, t);
    *out = json_real(d);
    return 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool looks_like_date_or_time(const char *t, size_t n)
{
    if (n >= 5 && is_digit(t[0]) && is_digit(t[1]) && is_digit(t[2]) && is_digit(t[3]) &&
        t[4] == '-')
        return true;
    return n >= 3 && is_digit(t[0]) && is_digit(t[1]) && t[2] == ':';
}

/* true, false, integers, floats; dates/times and inf/nan are refused. */
static int parse_scalar(struct parser *ps, json_t **out)
{
    const char *t = ps->p;
    while (ps->p < ps->end && (is_bare(*ps->p) || *ps->p == '+' || *ps->p == '.' || *ps->p == ':'))
        ps->p++;
    size_t n = (size_t)(ps->p - t);
    if (n == 0)
        return fail_at(ps, t, "expected a value, found %s", show(ps, t));
    if ((n == 4 && !memcmp(t, "true", 4)) || (n == 5 && !memcmp(t, "false", 5))) {
        *out = json_boolean(n == 4);
        return 0;
    }
    const char *u = (*t == '+' || *t == '-') ? t + 1 : t;
    if (t + n - u == 3 && (!memcmp(u, "inf", 3) || !memcmp(u, "nan", 3)))
        return fail_at(ps, t, "inf and nan are not supported");
    if (u == t + n || !is_digit(*u))
        return fail_at(ps, t, "invalid value '%.*s'", (int)(n > 40 ? 40 : n), t);
    if (looks_like_date_or_time(t, n))
        return fail_at(ps, t, "dates and times are not supported (quote the value)");
    if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b'))
        return radix_int(ps, t, n, out);
    if (memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n))
        return parse_float(ps, t, n, out);
    return dec_int(ps, t, n, out);
}

/* ---- compound values ---- */

static int parse_value(struct parser *ps, const char *path, json_t **out);
static int keyval(struct parser *ps, json_t *tbl, const char *path);

static int array_value(struct parser *ps, const char *path, json_t **out)
{
    const char *open = ps->p++;
    json_t *arr = json_array();
    for (;;) {
        skip_blank(ps);
        if (ps->p >= ps->end) {
            json_decref(arr);
            return fail_at(ps, open, "unterminated array");
        }
        if (*ps->p == ']')
            break;
        char *ep = osb_xasprintf("%s[%zu]", path, json_array_size(arr));
        json_t *v = NULL;
        int rc = parse_value(ps, ep, &v);
        free(ep);
        if (rc < 0) {
            json_decref(arr);
            return -1;
        }
        json_array_append_new(arr, v);
        skip_blank(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']')
            break;
        int e = ps->p >= ps->end
                    ? fail_at(ps, open, "unterminated array")
                    : fail_at(ps, ps->p, "expected ',' or ']' after an array element, found %s",
                              show(ps, ps->p));
        json_decref(arr);
        return e;
    }
    ps->p++;
    *out = arr;
    return 0;
}

/* An inline table and everything in it is closed once written. */
static void freeze(struct parser *ps, json_t *t)
{
    flags_set(ps, t, flags_of(ps, t) | T_FROZEN);
    const char *k;
    json_t *v;
    json_object_foreach(t, k, v) if (json_is_object(v)) freeze(ps, v);
}

/* After an inline table entry: ',' (then another entry) or '}'. Returns 1
 * at the end, 0 to continue. */
static int inline_sep(struct parser *ps)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 1;
    }
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '}')
            return fail_at(ps, ps->p - 1, "a trailing comma is not allowed in an inline table");
        return 0;
    }
    if (ps->p >= ps->end || at_newline(ps))
        return fail_at(ps, ps->p,
                       "expected ',' or '}' in an inline table, found %s "
                       "(an inline table must be on one line)",
                       show(ps, ps->p));
    return fail_at(ps, ps->p, "expected ',' or '}' in an inline table, found %s", show(ps, ps->p));
}

static int inline_table(struct parser *ps, const char *path, json_t **out)
{
    ps->p++;
    json_t *t = json_object();
    skip_ws(ps);
    int rc = 0;
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
    } else {
        do {
            skip_ws(ps);
            if (ps->p >= ps->end || at_newline(ps))
                rc = fail_at(ps, ps->p,
                             "expected a key in an inline table, found %s "
                             "(an inline table must be on one line)",
                             show(ps, ps->p));
            else
                rc = keyval(ps, t, path);
            if (rc == 0)
                rc = inline_sep(ps);
        } while (rc == 0);
    }
    if (rc < 0) {
        json_decref(t);
        return -1;
    }
    freeze(ps, t);
    *out = t;
    return 0;
}

static int parse_value(struct parser *ps, const char *path, json_t **out)
{
    if (ps->p >= ps->end || at_newline(ps))
        return fail_at(ps, ps->p, "expected a value, found %s", show(ps, ps->p));
    char c = *ps->p;
    if (c == '"' || c == '\'') {
        char *s;
        size_t len;
        if (parse_string(ps, true, &s, &len) < 0)
            return -1;
        *out = json_stringn(s, len);
        free(s);
        return *out ? 0 : fail_at(ps, ps->p, "string is not valid UTF-8");
    }
    if (c != '[' && c != '{')
        return parse_scalar(ps, out);
    if (ps->depth >= OSB_TOML_MAX_DEPTH)
        return fail_at(ps, ps->p, "arrays and inline tables nested deeper than %d",
                       OSB_TOML_MAX_DEPTH);
    ps->depth++;
    int rc = c == '[' ? array_value(ps, path, out) : inline_table(ps, path, out);
    ps->depth--;
    return rc;
}

/* ---- key/value pairs and headers ---- */

/* Walk the dotted prefix of k from tbl, creating tables; only tables made
 * by dotted keys may be entered this way (the spec's rule). */
static int dotted_prefix(struct parser *ps, struct key *k, json_t **tbl, char **path)
{
    for (int i = 0; i < k->n - 1; i++) {
        const char *np = path_push(path, k->part[i]);
        json_t *v = json_object_get(*tbl, k->part[i]);
        if (!v) {
            v = json_object();
            flags_set(ps, v, T_DOTTED);
            json_object_set_new(*tbl, k->part[i], v);
            record_line(ps, np, ps->line, false);
        } else if (!json_is_object(v) || (flags_of(ps, v) & (T_DOTTED | T_FROZEN)) != T_DOTTED) {
            return fail_at(ps, k->at, "cannot add keys to '%s': it is already defined %s", np,
                           json_is_object(v) ? "as a table elsewhere" : "as a value");
        }
        *tbl = v;
    }
    return 0;
}

/* key ws '=' ws value, into tbl whose path is path. */
static int keyval(struct parser *ps, json_t *tbl, const char *path)
{
    struct key k;
    int line = ps->line;
    if (parse_key(ps, &k) < 0) {
        key_free(&k);
        return -1;
    }
    _cleanup_free_ char *kpath = osb_xstrdup(path);
    int rc = 0;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '=')
        rc = fail_at(ps, ps->p, "expected '=' after key, found %s", show(ps, ps->p));
    if (rc == 0)
        rc = dotted_prefix(ps, &k, &tbl, &kpath);
    const char *last = k.part[k.n - 1];
    char *full = rc == 0 ? path_join(kpath, last) : NULL;
    if (rc == 0 && json_object_get(tbl, last))
        rc = fail_at(ps, k.at, "duplicate key '%s'", full);
    json_t *v = NULL;
    if (rc == 0) {
        ps->p++;
        skip_ws(ps);
        rc = parse_value(ps, full, &v);
    }
    if (rc == 0) {
        json_object_set_new(tbl, last, v);
        record_line(ps, full, line, true);
    }
    free(full);
    key_free(&k);
    return rc;
}

/* One step of a header path through an existing value: a table is
 * entered, an array of tables means its last element. */
static int header_step(struct parser *ps, json_t **t, char **path, const char *part, const char *at)
{
    char *np = path_push(path, part);
    json_t *v = json_object_get(*t, part);
    if (!v) {
        v = json_object();
        flags_set(ps, v, T_IMPLICIT);
        json_object_set_new(*t, part, v);
        record_line(ps, np, ps->line, false);
    } else if (json_is_array(v) && (flags_of(ps, v) & T_AOT)) {
        size_t n = json_array_size(v);
        v = json_array_get(v, n - 1);
        *path = osb_xasprintf("%s[%zu]", np, n - 1);
        free(np);
    } else if (!json_is_object(v)) {
        return fail_at(ps, at, "'%s' is already defined as a value, not a table", np);
    } else if (flags_of(ps, v) & T_FROZEN) {
        return fail_at(ps, at, "'%s' is an inline table and cannot be extended", np);
    }
    *t = v;
    return 0;
}

/* The last part of a [table] header: new, or a table so far only implied. */
static int header_table(struct parser *ps, json_t **t, char **path, const char *part,
                        const char *at)
{
    char *np = path_push(path, part);
    json_t *v = json_object_get(*t, part);
    if (!v) {
        v = json_object();
        json_object_set_new(*t, part, v);
    } else if (!json_is_object(v) || flags_of(ps, v) != T_IMPLICIT) {
        return fail_at(ps, at,
                       json_is_object(v) ? "duplicate table [%s]"
                                         : "'%s' is already defined as a value, not a table",
                       np);
    }
    flags_set(ps, v, T_DEFINED);
    *t = v;
    return 0;
}

/* The last part of a [[array]] header: appends a new table. */
static int header_aot(struct parser *ps, json_t **t, char **path, const char *part, const char *at)
{
    char *np = path_push(path, part);
    json_t *arr = json_object_get(*t, part);
    if (!arr) {
        arr = json_array();
        flags_set(ps, arr, T_AOT);
        json_object_set_new(*t, part, arr);
        record_line(ps, np, ps->line, false);
    } else if (!json_is_array(arr) || !(flags_of(ps, arr) & T_AOT)) {
        return fail_at(ps, at, "[[%s]]: '%s' is already defined and is not an array of tables", np,
                       np);
    }
    json_t *v = json_object();
    flags_set(ps, v, T_DEFINED);
    json_array_append_new(arr, v);
    *path = osb_xasprintf("%s[%zu]", np, json_array_size(arr) - 1);
    free(np);
    *t = v;
    return 0;
}

static int header_close(struct parser *ps, bool aot)
{
    skip_ws(ps);
    for (int i = 0; i < (aot ? 2 : 1); i++, ps->p++)
        if (ps->p >= ps->end || *ps->p != ']')
            return fail_at(ps, ps->p, "expected '%s' to close the table header, found %s",
                           aot ? "]]" : "]", show(ps, ps->p));
    return 0;
}

static int header(struct parser *ps)
{
    const char *at = ps->p++;
    bool aot = ps->p < ps->end && *ps->p == '[';
    if (aot)
        ps->p++;
    skip_ws(ps);
    struct key k;
    int rc = parse_key(ps, &k);
    if (rc == 0)
        rc = header_close(ps, aot);
    json_t *t = ps->root;
    char *path = osb_xstrdup("");
    for (int i = 0; rc == 0 && i < k.n - 1; i++)
        rc = header_step(ps, &t, &path, k.part[i], at);
    if (rc == 0)
        rc = aot ? header_aot(ps, &t, &path, k.part[k.n - 1], at)
                 : header_table(ps, &t, &path, k.part[k.n - 1], at);
    key_free(&k);
    if (rc < 0) {
        free(path);
        return -1;
    }
    record_line(ps, path, ps->line, true);
    ps->cur = t;
    free(ps->cur_path);
    ps->cur_path = path;
    return end_of_line(ps, "the table header");
}

static int document(struct parser *ps)
{
    if (ps->end - ps->p >= 3 && !memcmp(ps->p, "\xEF\xBB\xBF", 3))
        ps->p += 3; /* a byte order mark */
    if (check_text(ps) < 0)
        return -1;
    for (;;) {
        skip_ws(ps);
        skip_comment(ps);
        if (ps->p >= ps->end)
            return 0;
        if (at_newline(ps)) {
            eat_newline(ps);
            continue;
        }
        if (*ps->p == '[') {
            if (header(ps) < 0)
                return -1;
        } else if (keyval(ps, ps->cur, ps->cur_path) < 0 || end_of_line(ps, "the value") < 0) {
            return -1;
        }
    }
}

int osb_toml_parse(const char *text, size_t len, json_t **out, json_t **lines, struct osb_err *err)
{
    struct parser ps = {
        .s = text,
        .p = text,
        .end = text + len,
        .line = 1,
        .err = err,
    };
    ps.root = ps.cur = json_object();
    ps.cur_path = osb_xstrdup("");
    ps.flags = json_object();
    ps.lines = json_object();
    flags_set(&ps, ps.root, T_DEFINED);
    int rc = document(&ps);
    free(ps.cur_path);
    json_decref(ps.flags);
    if (rc < 0) {
        json_decref(ps.root);
        json_decref(ps.lines);
        return -1;
    }
    *out = ps.root;
    if (lines)
        *lines = ps.lines;
    else
        json_decref(ps.lines);
    return 0;
}

int osb_toml_line(const json_t *lines, const char *path)
{
    return (int)json_integer_value(json_object_get(lines, path));
}
