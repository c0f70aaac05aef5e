/* A run's tap and its part of the audit record (audit_run.h). execd's
 * answer is read with http-parser, which keeps no bytes of its own, and
 * its body goes through the SSE scan (audit_execd.h). */
#include "server/audit_run.h"

#include <http_parser.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/audit_execd.h"

enum run_kind { RUN_COMMAND, RUN_SESSION, RUN_CODE, RUN_PTY };

struct osb_audit_run {
    enum run_kind kind;
    struct osb_audit_body body;
    http_parser parser;
    bool parse_failed, ended, client_left;
    int status; /* execd's, 0 before its answer */
    struct osb_audit_sse sse;
};

/* The runs, by the path execd routes: its router matches the path as
 * forwarded, exactly ("command/" is no run). */
static bool run_kind_of(const char *path, enum run_kind *kind)
{
    size_t sl = strncmp(path, "session/", 8) == 0 ? strcspn(path + 8, "/") : 0;
    if (strcmp(path, "command") == 0)
        *kind = RUN_COMMAND;
    else if (strcmp(path, "code") == 0)
        *kind = RUN_CODE;
    else if (strcmp(path, "pty") == 0)
        *kind = RUN_PTY;
    else if (sl > 0 && strcmp(path + 8 + sl, "/run") == 0)
        *kind = RUN_SESSION;
    else
        return false;
    return true;
}

struct osb_audit_run *osb_audit_run_new(const char *method, const char *path)
{
    enum run_kind kind;
    if (!method || !path || strcmp(method, "POST") != 0 || !run_kind_of(path, &kind))
        return NULL;
    struct osb_audit_run *r = osb_xcalloc(1, sizeof *r);
    r->kind = kind;
    osb_audit_body_init(&r->body, kind == RUN_CODE ? "code" : "command");
    osb_audit_sse_init(&r->sse);
    http_parser_init(&r->parser, HTTP_RESPONSE);
    r->parser.data = r;
    return r;
}

void osb_audit_run_free(void *run)
{
    free(run);
}

static int on_headers(http_parser *p)
{
    struct osb_audit_run *r = p->data;
    r->status = (int)p->status_code;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct osb_audit_run *r = p->data;
    if (r->status == 200) /* an error answer is one JSON body; its status says it */
        osb_audit_sse_feed(&r->sse, at, n);
    return 0;
}

static const http_parser_settings answer_settings = {.on_headers_complete = on_headers,
                                                     .on_body = on_body};

static void answer(struct osb_audit_run *r, const char *data, size_t len)
{
    if (r->parse_failed)
        return;
    size_t n = http_parser_execute(&r->parser, &answer_settings, data, len);
    if (n != len || HTTP_PARSER_ERRNO(&r->parser) != HPE_OK)
        r->parse_failed = true; /* only the scan stops: the record says less */
}

static void tap_request(void *ud, const char *data, size_t len)
{
    struct osb_audit_run *r = ud;
    osb_audit_body_feed(&r->body, data, len);
}

static void tap_response(void *ud, const char *data, size_t len)
{
    answer(ud, data, len);
}

static void tap_end(void *ud, bool client_left)
{
    struct osb_audit_run *r = ud;
    if (r->ended)
        return;
    answer(r, NULL, 0); /* the end of an answer that runs to the close */
    osb_audit_sse_finish(&r->sse);
    r->ended = true;
    r->client_left = client_left;
}

void osb_audit_run_tap(struct osb_audit_run *r, struct osb_http_tap *tap)
{
    *tap = (struct osb_http_tap){tap_request, tap_response, tap_end, r};
}

/* How a run in the foreground ended: its exit code, its error, or neither
 * (the client left, or execd's stream stopped short). */
static void outcome(const struct osb_audit_run *r, json_t *d)
{
    const struct osb_audit_sse *s = &r->sse;
    if (s->has_exit)
        json_object_set_new(d, "exitCode", json_integer(s->exit_code));
    else if (s->end == OSB_AUDIT_ERROR)
        json_object_set_new(d, "error", json_string(s->error));
    else if (r->status == 0 || r->status == 200)
        json_object_set_new(d, "ended",
                            json_string(r->client_left ? "disconnected" : "incomplete"));
}

void osb_audit_run_detail(struct osb_audit_run *r, json_t *detail)
{
    if (!r)
        return;
    tap_end(r, false);
    size_t len;
    const char *text = osb_audit_body_text(&r->body, &len);
    json_t *t = text ? json_stringn(text, len) : NULL; /* NULL too when not UTF-8 */
    if (t)
        json_object_set_new(detail, "text", t);
    if (t && r->body.truncated)
        json_object_set_new(detail, "textTruncated", json_true());
    bool background = r->kind == RUN_COMMAND && r->body.background;
    if (background)
        json_object_set_new(detail, "background", json_true());
    /* A pty answers with its session (the terminal runs on over a
     * WebSocket); a background command at once: neither has an exit yet. */
    if (r->kind != RUN_PTY && !background)
        outcome(r, detail);
}
