/* What the audit trail reads from a run proxied to execd (audit_run.h
 * uses it; docs/operations.md, "Audit trail"): the text run, from the
 * request body, and how it ended, from execd's SSE answer. Both scans are
 * streaming and bounded (a fixed struct each, no allocation): they see the
 * bytes in whatever pieces the proxy relays them, and keep only what a
 * record needs, so a body's other fields (envs, which may hold secrets) and
 * the command's output are never kept. */
#ifndef OSB_SRV_AUDIT_EXECD_H
#define OSB_SRV_AUDIT_EXECD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The text a record keeps, in bytes of UTF-8 (cut on a character). */
#define OSB_AUDIT_MAX_TEXT 4096
/* The part of an SSE line read: execd's final events are short, and the
 * fields read come first in them. */
#define OSB_AUDIT_MAX_LINE 1024

/* ---- the request body: one top-level string field of a JSON object ---- */
struct osb_audit_body {
    const char *field; /* "command" or "code" */
    int depth;         /* of the byte being read; 1: in the top-level object */
    unsigned state;    /* lexer state (audit_execd.c) */
    unsigned sink;     /* where the string being read goes (audit_execd.c) */
    bool want_key;     /* the top-level object expects a key next */
    unsigned digits;   /* \uXXXX digits read */
    uint32_t cp, hi;   /* the code point being read; a high surrogate waiting */
    char key[16];      /* the last top-level key (cut: no match) */
    size_t key_len;
    bool key_long;
    char scalar[6]; /* a top-level non-string value's first bytes */
    size_t scalar_len;
    bool bad;        /* not a JSON object: nothing more is read */
    bool found;      /* field seen with a string value */
    bool truncated;  /* its text was longer than OSB_AUDIT_MAX_TEXT */
    bool background; /* "background": true */
    char text[OSB_AUDIT_MAX_TEXT];
    size_t text_len;
};

void osb_audit_body_init(struct osb_audit_body *b, const char *field);
void osb_audit_body_feed(struct osb_audit_body *b, const char *data, size_t len);
/* The text (not NUL-terminated; cut on a UTF-8 character), or NULL when
 * the body had no such string field. */
const char *osb_audit_body_text(const struct osb_audit_body *b, size_t *len);

/* ---- execd's answer body: events "<json>\n\n" (protocol.md 3.3) ---- */
enum osb_audit_end {
    OSB_AUDIT_OPEN,     /* no final event (yet) */
    OSB_AUDIT_COMPLETE, /* execution_complete */
    OSB_AUDIT_ERROR,    /* an error event, or a {code,message} event */
};

struct osb_audit_sse {
    char line[OSB_AUDIT_MAX_LINE + 1]; /* the line being read, its first bytes */
    size_t line_len;
    enum osb_audit_end end;
    bool has_exit;
    int64_t exit_code;
    char error[64]; /* the error's ename (a code cell's exception) or code */
};

void osb_audit_sse_init(struct osb_audit_sse *s);
/* Decoded body bytes (no chunked framing). The first final event wins. */
void osb_audit_sse_feed(struct osb_audit_sse *s, const char *data, size_t len);
/* The answer ended: a last line without its newline counts. */
void osb_audit_sse_finish(struct osb_audit_sse *s);
#endif
