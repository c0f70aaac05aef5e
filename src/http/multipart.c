#include "http/multipart.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/limits.h"
#include "common/xalloc.h"

/* RFC 2046 allows 70; leave room for odd clients while bounding memory. */
#define MAX_BOUNDARY 200

enum state {
    ST_SCAN,     /* looking for the delimiter (in the preamble or a part body) */
    ST_AFTER,    /* delimiter matched; the next byte says if it is a boundary */
    ST_DASH,     /* delimiter then '-': a second '-' closes the body */
    ST_PAD,      /* boundary line: transport padding, then CR */
    ST_LF,       /* boundary line: the LF after CR */
    ST_HEAD,     /* collecting a part's header block */
    ST_EPILOGUE, /* after the closing boundary: ignore everything */
    ST_ERROR,
};

struct osb_multipart {
    struct osb_multipart_cbs cbs;
    void *ud;
    char *delim; /* "\r\n--" boundary */
    size_t dlen;
    /* The last `held` bytes seen are delim[0..held): a possible delimiter
     * split across feeds. They are not emitted until the match fails.
     * `virt` marks a CRLF that was never in the input (the start of the body
     * and of a part body may begin with "--boundary" directly). */
    size_t held;
    bool virt;
    bool in_part; /* scanning a part body (else the preamble) */
    enum state st;
    struct osb_buf head;
    char *name, *filename, *ctype;
    unsigned parts;
    struct osb_err saved; /* the sticky error */
};

static const char *const TCHARS = "!#$%&'*+-.^_`|~";

static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr(TCHARS, c));
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static const char *skip_ows(const char *s)
{
    while (is_ows(*s))
        s++;
    return s;
}

/* ---- MIME header values: `type *( ";" name "=" (token | quoted-string) )` ---- */

/* Reads a quoted-string starting at the opening quote; *s is left after
 * the closing quote. As in Go's mime package, a backslash escapes only a
 * tspecial, so unescaped Windows paths ("C:\dir\f") survive. */
static int read_quoted(const char **s, char **out, struct osb_err *err)
{
    struct osb_buf b;
    osb_buf_init(&b, OSB_MAX_PART_HEAD);
    const char *p = *s + 1;
    for (; *p != '"'; p++) {
        if (*p == '\\' && p[1] && strchr("()<>@,;:\\\"/[]?=", p[1]))
            p++;
        if (*p == '\0' || ((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
            osb_buf_free(&b);
            return osb_err_set(err, OSB_E_INVALID, "%s",
                               *p ? "control character in a quoted "
                                    "parameter value"
                                  : "unterminated quoted parameter value");
        }
        if (osb_buf_add(&b, p, 1) < 0) {
            osb_buf_free(&b);
            return osb_err_set(err, OSB_E_TOOBIG, "quoted parameter value exceeds %d bytes",
                               OSB_MAX_PART_HEAD);
        }
    }
    *s = p + 1;
    *out = osb_buf_steal(&b, NULL); /* an empty value still gets a string */
    return 0;
}

/* A parameter value: a quoted-string, or (leniently) any run of visible
 * chars other than ';' and '"'. */
static int read_value(const char **s, char **out, struct osb_err *err)
{
    if (**s == '"')
        return read_quoted(s, out, err);
    const char *p = *s;
    while ((unsigned char)*p > 0x20 && *p != 0x7f && *p != ';' && *p != '"')
        p++;
    if (p == *s)
        return osb_err_set(err, OSB_E_INVALID, "empty or malformed parameter value");
    *out = osb_xstrndup(*s, (size_t)(p - *s));
    *s = p;
    return 0;
}

/* The next `; name=value`: 1 with *name and *value allocated, 0 at the end of
 * the header value, -1 on a syntax error. A trailing ';' is tolerated. */
static int next_param(const char **s, char **name, char **value, struct osb_err *err)
{
    const char *p = skip_ows(*s);
    if (*p == '\0')
        return 0;
    if (*p != ';')
        return osb_err_set(err, OSB_E_INVALID, "expected ';' before \"%.40s\"", p);
    p = skip_ows(p + 1);
    if (*p == '\0')
        return 0;
    const char *n = p;
    while (is_tchar((unsigned char)*p))
        p++;
    if (p == n)
        return osb_err_set(err, OSB_E_INVALID, "malformed parameter at \"%.40s\"", n);
    size_t nlen = (size_t)(p - n);
    p = skip_ows(p);
    if (*p != '=')
        return osb_err_set(err, OSB_E_INVALID, "parameter \"%.*s\" has no value", (int)nlen, n);
    p = skip_ows(p + 1);
    if (read_value(&p, value, err) < 0)
        return -1;
    *name = osb_xstrndup(n, nlen);
    *s = p;
    return 1;
}

/* The leading `type` (tchars and '/') of a header value. */
static const char *read_type(const char *s, size_t *len)
{
    s = skip_ows(s);
    const char *p = s;
    while (is_tchar((unsigned char)*p) || *p == '/')
        p++;
    *len = (size_t)(p - s);
    return s;
}

static bool type_is(const char *t, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(t, want, len) == 0;
}

/* Sets *slot once; a repeated parameter is an error (as Go's mime does). */
static int set_once(char **slot, char *value, const char *name, struct osb_err *err)
{
    if (*slot) {
        free(value);
        return osb_err_set(err, OSB_E_INVALID, "duplicate parameter \"%s\"", name);
    }
    *slot = value;
    return 0;
}

/* ---- construction ---- */

static int check_boundary(const char *b, struct osb_err *err)
{
    size_t n = strlen(b);
    if (n == 0 || n > MAX_BOUNDARY)
        return osb_err_set(err, OSB_E_INVALID,
                           "multipart boundary must be 1 to %d characters, got %zu", MAX_BOUNDARY,
                           n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)b[i] < 0x20 || (unsigned char)b[i] > 0x7e)
            return osb_err_set(err, OSB_E_INVALID,
                               "multipart boundary contains a non-printable character");
    return 0;
}

/* The boundary parameter of a multipart/form-data Content-Type; caller frees. */
static char *find_boundary(const char *content_type, struct osb_err *err)
{
    size_t tlen;
    const char *s = content_type ? content_type : "";
    const char *t = read_type(s, &tlen);
    if (!type_is(t, tlen, "multipart/form-data")) {
        osb_err_set(err, OSB_E_INVALID, "Content-Type must be multipart/form-data, got \"%.60s\"",
                    s);
        return NULL;
    }
    s = t + tlen;
    char *name, *value, *boundary = NULL;
    int r;
    while ((r = next_param(&s, &name, &value, err)) > 0) {
        bool is_b = strcasecmp(name, "boundary") == 0;
        free(name);
        if (!is_b) {
            free(value);
            continue;
        }
        if (set_once(&boundary, value, "boundary", err) < 0) {
            r = -1;
            break;
        }
    }
    if (r < 0) {
        free(boundary);
        osb_err_wrap(err, "bad multipart Content-Type");
        return NULL;
    }
    if (!boundary)
        osb_err_set(err, OSB_E_INVALID, "multipart Content-Type has no boundary parameter");
    else if (check_boundary(boundary, err) < 0) {
        free(boundary);
        boundary = NULL;
    }
    return boundary;
}

struct osb_multipart *osb_multipart_new(const char *content_type,
                                        const struct osb_multipart_cbs *cbs, void *ud,
                                        struct osb_err *err)
{
    char *boundary = find_boundary(content_type, err);
    if (!boundary)
        return NULL;
    struct osb_multipart *mp = osb_xcalloc(1, sizeof *mp);
    if (cbs)
        mp->cbs = *cbs;
    mp->ud = ud;
    mp->delim = osb_xasprintf("\r\n--%s", boundary);
    mp->dlen = strlen(mp->delim);
    free(boundary);
    mp->held = 2; /* the body may start with "--boundary" */
    mp->virt = true;
    mp->st = ST_SCAN;
    osb_buf_init(&mp->head, OSB_MAX_PART_HEAD);
    return mp;
}

static void clear_part(struct osb_multipart *mp)
{
    free(mp->name);
    free(mp->filename);
    free(mp->ctype);
    mp->name = mp->filename = mp->ctype = NULL;
}

void osb_multipart_free(struct osb_multipart *mp)
{
    if (!mp)
        return;
    clear_part(mp);
    osb_buf_free(&mp->head);
    free(mp->delim);
    free(mp);
}

unsigned osb_multipart_parts(const struct osb_multipart *mp)
{
    return mp->parts;
}

/* ---- part headers ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Appends byte c, as UTF-8 when it is an ISO-8859-1 char above 0x7f. */
static int add_char(struct osb_buf *b, unsigned c, bool latin1)
{
    char enc[2] = {(char)c, 0};
    size_t n = 1;
    if (latin1 && c >= 0x80) {
        enc[0] = (char)(0xC0 | c >> 6);
        enc[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    }
    return osb_buf_add(b, enc, n);
}

/* RFC 5987 ext-value: charset'lang'pct-encoded. ISO-8859-1 is converted to
 * UTF-8; other charsets are rejected. */
static int decode_ext_value(const char *v, char **out, struct osb_err *err)
{
    const char *q1 = strchr(v, '\''), *q2 = q1 ? strchr(q1 + 1, '\'') : NULL;
    if (!q2)
        return osb_err_set(err, OSB_E_INVALID, "filename* is not charset'lang'value");
    bool latin1 = (size_t)(q1 - v) == 10 && strncasecmp(v, "iso-8859-1", 10) == 0;
    if (!latin1 && !((size_t)(q1 - v) == 5 && strncasecmp(v, "utf-8", 5) == 0))
        return osb_err_set(err, OSB_E_INVALID, "filename* charset must be UTF-8 or ISO-8859-1");
    struct osb_buf b;
    osb_buf_init(&b, OSB_MAX_PART_HEAD * 2);
    for (const char *p = q2 + 1; *p; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
            c = lo < 0 ? 0 : hi << 4 | lo;
            if (c == 0) { /* a bad escape, or %00 (values are C strings) */
                osb_buf_free(&b);
                return osb_err_set(err, OSB_E_INVALID, "bad percent-escape in filename*");
            }
            p += 2;
        }
        if (add_char(&b, (unsigned)c, latin1) < 0) {
            osb_buf_free(&b);
            return osb_err_set(err, OSB_E_TOOBIG, "filename* exceeds %d bytes",
                               OSB_MAX_PART_HEAD * 2);
        }
    }
    *out = osb_buf_steal(&b, NULL);
    return 0;
}

/* One disposition parameter; unknown ones are ignored. */
static int disposition_param(struct osb_multipart *mp, char *name, char *value, char **ext,
                             struct osb_err *err)
{
    int r = 0;
    if (strcasecmp(name, "name") == 0)
        r = set_once(&mp->name, value, "name", err);
    else if (strcasecmp(name, "filename") == 0)
        r = set_once(&mp->filename, value, "filename", err);
    else if (strcasecmp(name, "filename*") == 0)
        r = set_once(ext, value, "filename*", err);
    else
        free(value);
    free(name);
    return r;
}

static int parse_disposition(struct osb_multipart *mp, const char *v, struct osb_err *err)
{
    size_t tlen;
    const char *t = read_type(v, &tlen);
    if (!type_is(t, tlen, "form-data"))
        return osb_err_set(err, OSB_E_INVALID,
                           "part Content-Disposition must be form-data, got \"%.60s\"", v);
    const char *s = t + tlen;
    char *name, *value, *ext = NULL, *decoded = NULL;
    int r;
    while ((r = next_param(&s, &name, &value, err)) > 0)
        if (disposition_param(mp, name, value, &ext, err) < 0) {
            r = -1;
            break;
        }
    if (r == 0 && ext && (r = decode_ext_value(ext, &decoded, err)) == 0) {
        free(mp->filename);
        mp->filename = decoded;
    }
    free(ext);
    if (r < 0)
        return osb_err_wrap(err, "bad part Content-Disposition");
    if (!mp->name)
        return osb_err_set(err, OSB_E_INVALID, "part Content-Disposition has no name parameter");
    return 0;
}

/* One "Name: value" line (NUL-terminated, CRLF removed). */
static int header_line(struct osb_multipart *mp, char *line, bool *have_cd, struct osb_err *err)
{
    if (is_ows(*line))
        return osb_err_set(err, OSB_E_INVALID, "folded part header lines are not supported");
    if (strpbrk(line, "\r\n"))
        return osb_err_set(err, OSB_E_INVALID, "bare CR or LF in part headers");
    char *colon = line;
    while (is_tchar((unsigned char)*colon))
        colon++;
    if (*colon != ':' || colon == line)
        return osb_err_set(err, OSB_E_INVALID, "malformed part header line \"%.60s\"", line);
    *colon = '\0';
    char *v = (char *)skip_ows(colon + 1), *e = v + strlen(v);
    while (e > v && is_ows(e[-1]))
        *--e = '\0';
    if (strcasecmp(line, "content-disposition") == 0) {
        if (*have_cd)
            return osb_err_set(err, OSB_E_INVALID, "duplicate part Content-Disposition header");
        *have_cd = true;
        return parse_disposition(mp, v, err);
    }
    if (strcasecmp(line, "content-type") == 0) {
        if (mp->ctype)
            return osb_err_set(err, OSB_E_INVALID, "duplicate part Content-Type header");
        mp->ctype = osb_xstrdup(v);
    }
    return 0;
}

/* Parses the header block h (ends with an empty line) into the part fields. */
static int parse_head(struct osb_multipart *mp, char *h, size_t len, struct osb_err *err)
{
    if (memchr(h, '\0', len))
        return osb_err_set(err, OSB_E_INVALID, "NUL byte in part headers");
    bool have_cd = false;
    char *end = h + len;
    for (char *line = h; line < end;) {
        char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
        *eol = '\0';
        if (eol == line)
            break;
        if (header_line(mp, line, &have_cd, err) < 0)
            return -1;
        line = eol + 2;
    }
    if (!have_cd)
        return osb_err_set(err, OSB_E_INVALID, "part %u has no Content-Disposition header",
                           mp->parts + 1);
    return 0;
}

static int cb_failed(struct osb_err *err)
{
    return osb_err_set(err, OSB_E_INTERNAL, "multipart: aborted by a part callback");
}

static int begin_part(struct osb_multipart *mp, struct osb_err *err)
{
    if (parse_head(mp, mp->head.data, mp->head.len, err) < 0)
        return osb_err_wrap(err, "multipart part %u", mp->parts + 1);
    osb_buf_reset(&mp->head);
    mp->parts++;
    mp->st = ST_SCAN;
    mp->in_part = true;
    mp->held = 2; /* the body may be empty: "--boundary" right after the headers */
    mp->virt = true;
    struct osb_multipart_part p = {mp->name, mp->filename, mp->ctype};
    if (mp->cbs.on_part_begin && mp->cbs.on_part_begin(mp->ud, &p) < 0)
        return cb_failed(err);
    return 0;
}

/* The end of the header block in the buffer, searching only where new bytes
 * (from `old` on) can complete it; 0 if not there yet. */
static size_t head_end(const struct osb_buf *h, size_t old)
{
    if (h->len >= 2 && h->data[0] == '\r' && h->data[1] == '\n')
        return 2; /* no headers at all */
    size_t from = old > 3 ? old - 3 : 0;
    const char *e = memmem(h->data + from, h->len - from, "\r\n\r\n", 4);
    return e ? (size_t)(e - h->data) + 4 : 0;
}

static ssize_t feed_head(struct osb_multipart *mp, const char *p, size_t n, struct osb_err *err)
{
    size_t old = mp->head.len, room = OSB_MAX_PART_HEAD - old;
    size_t take = n < room ? n : room;
    if (osb_buf_add(&mp->head, p, take) < 0) /* take fits by construction */
        return osb_err_set(err, OSB_E_INTERNAL, "multipart part %u: header buffer", mp->parts + 1);
    size_t end = head_end(&mp->head, old);
    if (end) {
        mp->head.len = end;
        mp->head.data[end] = '\0';
        return begin_part(mp, err) < 0 ? -1 : (ssize_t)(end - old);
    }
    if (mp->head.len >= OSB_MAX_PART_HEAD)
        return osb_err_set(err, OSB_E_TOOBIG, "multipart part %u: headers exceed %d bytes",
                           mp->parts + 1, OSB_MAX_PART_HEAD);
    return (ssize_t)take;
}

/* ---- body scanning ---- */

static int emit(struct osb_multipart *mp, const char *p, size_t n, struct osb_err *err)
{
    if (!mp->in_part || n == 0 || !mp->cbs.on_part_data)
        return 0;
    return mp->cbs.on_part_data(mp->ud, p, n) < 0 ? cb_failed(err) : 0;
}

/* Emits the held delimiter prefix as data (its match failed). */
static int release_held(struct osb_multipart *mp, struct osb_err *err)
{
    size_t skip = mp->virt ? 2 : 0;
    int r = mp->held > skip ? emit(mp, mp->delim + skip, mp->held - skip, err) : 0;
    mp->held = 0;
    mp->virt = false;
    return r;
}

/* Offset of the first delimiter in p[0..n), complete or cut off by the end
 * of the input; n if none. The boundary holds no CR, so a delimiter can
 * only start at a CR. */
static size_t find_delim(const struct osb_multipart *mp, const char *p, size_t n)
{
    const char *s = p, *end = p + n;
    while ((s = memchr(s, '\r', (size_t)(end - s)))) {
        size_t rem = (size_t)(end - s);
        size_t m = rem < mp->dlen ? rem : mp->dlen;
        if (m < 2 || (s[1] == '\n' && memcmp(s, mp->delim, m) == 0))
            return (size_t)(s - p);
        s++;
    }
    return n;
}

/* Continues a delimiter match held from earlier input. Returns the bytes
 * consumed, or 0 after releasing the held bytes when the match fails (the
 * input is then rescanned from its start: what matched holds no CR). */
static ssize_t continue_held(struct osb_multipart *mp, const char *p, size_t n, struct osb_err *err)
{
    size_t need = mp->dlen - mp->held, m = n < need ? n : need;
    if (memcmp(p, mp->delim + mp->held, m) != 0)
        return release_held(mp, err);
    mp->held += m;
    if (mp->held == mp->dlen) {
        mp->held = 0; /* virt stays: not_a_boundary must not emit a virtual CRLF */
        mp->st = ST_AFTER;
    }
    return (ssize_t)m;
}

static ssize_t scan(struct osb_multipart *mp, const char *p, size_t n, struct osb_err *err)
{
    if (mp->held)
        return continue_held(mp, p, n, err);
    size_t at = find_delim(mp, p, n);
    if (emit(mp, p, at, err) < 0)
        return -1;
    if (at == n)
        return (ssize_t)n;
    if (n - at >= mp->dlen) {
        mp->st = ST_AFTER;
        return (ssize_t)(at + mp->dlen);
    }
    mp->held = n - at;
    return (ssize_t)n;
}

/* The delimiter turned out to be data ("--boundaryX"): emit it (plus the
 * '-' seen in ST_DASH) and rescan from the current byte. */
static ssize_t not_a_boundary(struct osb_multipart *mp, bool dash, struct osb_err *err)
{
    size_t skip = mp->virt ? 2 : 0;
    mp->st = ST_SCAN;
    mp->virt = false;
    if (emit(mp, mp->delim + skip, mp->dlen - skip, err) < 0 || (dash && emit(mp, "-", 1, err) < 0))
        return -1;
    return 0;
}

static int end_part(struct osb_multipart *mp, struct osb_err *err)
{
    if (!mp->in_part)
        return 0;
    mp->in_part = false;
    clear_part(mp);
    if (mp->cbs.on_part_end && mp->cbs.on_part_end(mp->ud) < 0)
        return cb_failed(err);
    return 0;
}

static int bad_boundary_line(struct osb_err *err)
{
    return osb_err_set(err, OSB_E_INVALID,
                       "multipart: malformed boundary line "
                       "(want \"--boundary\" then CRLF, or \"--boundary--\")");
}

/* One byte of the boundary line; returns bytes consumed (0 or 1). */
static ssize_t boundary_byte(struct osb_multipart *mp, char c, struct osb_err *err)
{
    switch (mp->st) {
    case ST_AFTER:
        if (c == '-')
            mp->st = ST_DASH;
        else if (is_ows(c))
            mp->st = ST_PAD;
        else if (c == '\r')
            mp->st = ST_LF;
        else if (c == '\n')
            return bad_boundary_line(err);
        else
            return not_a_boundary(mp, false, err);
        return 1;
    case ST_DASH:
        if (c != '-')
            return not_a_boundary(mp, true, err);
        mp->st = ST_EPILOGUE;
        return end_part(mp, err) < 0 ? -1 : 1;
    case ST_PAD:
        if (c == '\r')
            mp->st = ST_LF;
        else if (!is_ows(c))
            return bad_boundary_line(err);
        return 1;
    case ST_LF:
        if (c != '\n')
            return bad_boundary_line(err);
        mp->st = ST_HEAD;
        return end_part(mp, err) < 0 ? -1 : 1;
    default: return osb_err_set(err, OSB_E_INTERNAL, "multipart: bad state %d", (int)mp->st);
    }
}

static ssize_t step(struct osb_multipart *mp, const char *p, size_t n, struct osb_err *err)
{
    switch (mp->st) {
    case ST_SCAN: return scan(mp, p, n, err);
    case ST_HEAD: return feed_head(mp, p, n, err);
    case ST_EPILOGUE: return (ssize_t)n;
    default: return boundary_byte(mp, *p, err);
    }
}

static int fail(struct osb_multipart *mp, const struct osb_err *err)
{
    mp->st = ST_ERROR;
    mp->saved = *err;
    return -1;
}

static int replay(const struct osb_multipart *mp, struct osb_err *err)
{
    if (err)
        *err = mp->saved;
    return -1;
}

int osb_multipart_feed(struct osb_multipart *mp, const char *data, size_t len, struct osb_err *err)
{
    if (mp->st == ST_ERROR)
        return replay(mp, err);
    struct osb_err local;
    if (!err)
        err = &local;
    for (size_t i = 0; i < len;) {
        ssize_t n = step(mp, data + i, len - i, err);
        if (n < 0)
            return fail(mp, err);
        i += (size_t)n;
    }
    return 0;
}

int osb_multipart_finish(struct osb_multipart *mp, struct osb_err *err)
{
    struct osb_err local;
    if (!err)
        err = &local;
    switch (mp->st) {
    case ST_EPILOGUE: return 0;
    case ST_ERROR: return replay(mp, err);
    case ST_HEAD:
        osb_err_set(err, OSB_E_INVALID, "multipart: body ends inside the headers of part %u",
                    mp->parts + 1);
        break;
    case ST_DASH:
    case ST_PAD:
    case ST_LF:
        osb_err_set(err, OSB_E_INVALID, "multipart: body ends inside a boundary line");
        break;
    default:
        if (mp->in_part)
            osb_err_set(err, OSB_E_INVALID,
                        "multipart: body ends inside part \"%.100s\" (no closing boundary)",
                        mp->name);
        else if (mp->parts == 0)
            osb_err_set(err, OSB_E_INVALID, "multipart: no boundary \"%.*s\" found in the body",
                        (int)mp->dlen - 2, mp->delim + 2);
        else
            osb_err_set(err, OSB_E_INVALID, "multipart: body ends without a closing boundary");
    }
    return fail(mp, err);
}
