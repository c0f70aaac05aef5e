/* The scans of audit_execd.h: a JSON lexer that follows only the top-level
 * object of a request body (a byte at a time, so any split of the bytes
 * reads the same), and a line scan of execd's SSE answer. */
#include "server/audit_execd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_START, ST_OUT, ST_STR, ST_ESC, ST_HEX, ST_DONE };
enum { SINK_NONE, SINK_KEY, SINK_TEXT };

void osb_audit_body_init(struct osb_audit_body *b, const char *field)
{
    memset(b, 0, sizeof *b);
    b->field = field;
}

static void put_byte(struct osb_audit_body *b, unsigned char c)
{
    if (b->sink == SINK_KEY) {
        if (b->key_len < sizeof b->key)
            b->key[b->key_len++] = (char)c;
        else
            b->key_long = true;
    } else if (b->sink == SINK_TEXT && !b->truncated) {
        if (b->text_len < OSB_AUDIT_MAX_TEXT)
            b->text[b->text_len++] = (char)c;
        else
            b->truncated = true;
    }
}

/* A decoded \u escape, as UTF-8: whole, or (past the cap) not at all. */
static void put_cp(struct osb_audit_body *b, uint32_t cp)
{
    unsigned char u[4];
    size_t n;
    if (cp < 0x80)
        u[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800)
        u[0] = (unsigned char)(0xc0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        u[0] = (unsigned char)(0xe0 | cp >> 12), u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
        u[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
    else
        u[0] = (unsigned char)(0xf0 | cp >> 18), u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
        u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (unsigned char)(0x80 | (cp & 0x3f)),
        n = 4;
    if (b->sink == SINK_TEXT && b->text_len + n > OSB_AUDIT_MAX_TEXT) {
        b->truncated = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        put_byte(b, u[i]);
}

/* A string starts: a top-level key, the field's value, or anything else. */
static void string_start(struct osb_audit_body *b)
{
    b->state = ST_STR;
    b->sink = SINK_NONE;
    b->hi = 0;
    if (b->depth != 1)
        return;
    if (b->want_key) {
        b->sink = SINK_KEY;
        b->key_len = 0;
        b->key_long = false;
    } else if (!b->key_long && b->key_len == strlen(b->field) &&
               memcmp(b->key, b->field, b->key_len) == 0) {
        /* A repeated key: the last one counts (execd refuses the body). */
        b->sink = SINK_TEXT;
        b->found = true;
        b->truncated = false;
        b->text_len = 0;
    }
}

/* A top-level value that is not a string ended: "background": true? */
static void scalar_end(struct osb_audit_body *b)
{
    if (b->scalar_len == 4 && memcmp(b->scalar, "true", 4) == 0 && !b->key_long &&
        b->key_len == 10 && memcmp(b->key, "background", 10) == 0)
        b->background = true;
    b->scalar_len = 0;
}

static void out_byte(struct osb_audit_body *b, char c)
{
    switch (c) {
    case '"': string_start(b); return;
    case '{':
    case '[': b->depth++; return;
    case '}':
    case ']':
        if (b->depth == 1)
            scalar_end(b);
        if (--b->depth == 0)
            b->state = ST_DONE;
        return;
    case ':':
        if (b->depth == 1)
            b->want_key = false;
        return;
    case ',':
        if (b->depth == 1) {
            scalar_end(b);
            b->want_key = true;
        }
        return;
    default:
        if (b->depth == 1 && !b->want_key && !strchr(" \t\r\n", c) &&
            b->scalar_len < sizeof b->scalar)
            b->scalar[b->scalar_len++] = c;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The 4th hex digit is in: a code point, half of a surrogate pair, or (a
 * lone half, which execd's parser refuses) nothing. */
static void hex_done(struct osb_audit_body *b)
{
    uint32_t cp = b->cp;
    b->state = ST_STR;
    if (cp >= 0xd800 && cp < 0xdc00) {
        b->hi = cp;
        return;
    }
    if (cp >= 0xdc00 && cp < 0xe000) {
        if (b->hi)
            put_cp(b, 0x10000 + ((b->hi - 0xd800) << 10) + (cp - 0xdc00));
        b->hi = 0;
        return;
    }
    b->hi = 0;
    put_cp(b, cp);
}

static void esc_byte(struct osb_audit_body *b, char c)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *p = c ? strchr(from, c) : NULL;
    b->state = ST_STR;
    if (c == 'u') {
        b->state = ST_HEX;
        b->digits = 0;
        b->cp = 0;
    } else if (p) {
        put_byte(b, (unsigned char)to[p - from]);
    } else {
        b->bad = true; /* not JSON: execd refuses it */
    }
}

static void body_byte(struct osb_audit_body *b, char c)
{
    switch (b->state) {
    case ST_START:
        if (c == '{') {
            b->state = ST_OUT;
            b->depth = 1;
            b->want_key = true;
        } else if (!strchr(" \t\r\n", c)) {
            b->bad = true;
        }
        return;
    case ST_OUT: out_byte(b, c); return;
    case ST_STR:
        if (c == '"') {
            b->state = ST_OUT;
            b->sink = SINK_NONE;
        } else if (c == '\\') {
            b->state = ST_ESC;
        } else {
            put_byte(b, (unsigned char)c);
        }
        return;
    case ST_ESC: esc_byte(b, c); return;
    case ST_HEX: {
        int v = hexval(c);
        if (v < 0) {
            b->bad = true;
            return;
        }
        b->cp = b->cp << 4 | (uint32_t)v;
        if (++b->digits == 4)
            hex_done(b);
        return;
    }
    default: return;
    }
}

void osb_audit_body_feed(struct osb_audit_body *b, const char *data, size_t len)
{
    for (size_t i = 0; i < len && !b->bad && b->state != ST_DONE; i++)
        body_byte(b, data[i]);
}

/* The length of text without a UTF-8 character cut at its end. */
static size_t whole_chars(const char *t, size_t n)
{
    size_t i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)t[i - 1] & 0xc0) == 0x80)
        i--;
    if (i == 0)
        return n;
    unsigned char lead = (unsigned char)t[i - 1];
    size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    return n - (i - 1) >= want ? n : i - 1;
}

const char *osb_audit_body_text(const struct osb_audit_body *b, size_t *len)
{
    if (!b->found || b->bad) {
        *len = 0;
        return NULL;
    }
    *len = b->truncated ? whole_chars(b->text, b->text_len) : b->text_len;
    return b->text;
}

/* ------------------------------------------------------------ SSE scan */

void osb_audit_sse_init(struct osb_audit_sse *s)
{
    memset(s, 0, sizeof *s);
}

/* The string value of "name":"..." in line (execd writes no escapes in
 * the names and codes read here), cut to n - 1 bytes; "" when absent. */
static void str_field(const char *line, const char *name, char *out, size_t n)
{
    const char *p = strstr(line, name);
    out[0] = 0;
    if (!p)
        return;
    p += strlen(name);
    size_t k = strcspn(p, "\"\\");
    if (p[k] != '"')
        return; /* cut, or escaped: not a name execd writes */
    snprintf(out, n, "%.*s", (int)k, p);
}

static void error_event(struct osb_audit_sse *s, const char *line)
{
    char ename[64], evalue[32];
    str_field(line, "\"ename\":\"", ename, sizeof ename);
    str_field(line, "\"evalue\":\"", evalue, sizeof evalue);
    char *end;
    long long code = strtoll(evalue, &end, 10);
    s->end = OSB_AUDIT_ERROR;
    /* A command's non-zero exit: its code is the evalue. */
    if (strcmp(ename, "CommandExecError") == 0 && *evalue && !*end) {
        s->has_exit = true;
        s->exit_code = code;
        return;
    }
    snprintf(s->error, sizeof s->error, "%s", *ename ? ename : "error");
}

/* One line (NUL-terminated, maybe cut). execd writes "type" first, so the
 * kind of an event is its first bytes; output lines are never parsed. */
static void line_done(struct osb_audit_sse *s, char *line)
{
    if (strncmp(line, "data:", 5) == 0)
        line += line[5] == ' ' ? 6 : 5;
    if (s->end != OSB_AUDIT_OPEN)
        return;
    if (strncmp(line, "{\"type\":\"execution_complete\"", 28) == 0) {
        s->end = OSB_AUDIT_COMPLETE;
        s->has_exit = true;
        s->exit_code = 0;
    } else if (strncmp(line, "{\"type\":\"error\"", 15) == 0) {
        error_event(s, line);
    } else if (strncmp(line, "{\"code\":\"", 9) == 0) {
        s->end = OSB_AUDIT_ERROR; /* e.g. a session run's timeout */
        str_field(line, "{\"code\":\"", s->error, sizeof s->error);
    }
}

void osb_audit_sse_feed(struct osb_audit_sse *s, const char *data, size_t len)
{
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        size_t room = OSB_AUDIT_MAX_LINE - s->line_len;
        memcpy(s->line + s->line_len, data, n < room ? n : room);
        s->line_len += n < room ? n : room;
        if (!nl)
            return;
        s->line[s->line_len] = 0;
        line_done(s, s->line);
        s->line_len = 0;
        data += n + 1;
        len -= n + 1;
    }
}

void osb_audit_sse_finish(struct osb_audit_sse *s)
{
    if (!s->line_len)
        return;
    s->line[s->line_len] = 0;
    line_done(s, s->line);
    s->line_len = 0;
}
