/* Commands, sessions and code: requests whose answer is execd's event
 * stream (protocol.md 3.3), delivered to the caller's callbacks as events
 * arrive, and the small JSON calls around them. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

static int cb_text(int (*fn)(void *, const char *, size_t), void *ud, json_t *ev)
{
    json_t *t = json_object_get(ev, "text");
    const char *s = json_string_value(t);
    return fn && s ? fn(ud, s, json_string_length(t)) : 0;
}

static int set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
    return s && !*dst ? -1 : 0;
}

/* error: {ename, evalue, traceback[]}. A command's exit code is evalue of a
 * CommandExecError (protocol.md 0.3); any other error is an exception: 1. */
static int on_error(struct osbcl_run *x, json_t *ev)
{
    json_t *e = json_object_get(ev, "error");
    const char *name = json_string_value(json_object_get(e, "ename"));
    const char *value = json_string_value(json_object_get(e, "evalue"));
    json_t *lines = json_object_get(e, "traceback");
    struct osbcl_sb tb = {0};
    json_t *line;
    size_t i;
    json_array_foreach(lines, i, line)
    {
        if (i)
            osbcl_sb_adds(&tb, "\n");
        if (json_is_string(line))
            osbcl_sb_adds(&tb, json_string_value(line));
    }
    if (json_is_array(lines) && !tb.p) /* no lines: "" */
        osbcl_sb_add(&tb, "", 0);
    if (set_str(&x->r->error_name, name) < 0 || set_str(&x->r->error_value, value) < 0 || tb.oom) {
        osbcl_sb_free(&tb);
        return OSBC_E_NOMEM;
    }
    free(x->r->traceback);
    x->r->traceback = tb.p;
    x->errored = true;
    x->r->exit_code = 1;
    if (name && !strcmp(name, "CommandExecError") && value) {
        char *end;
        long v = strtol(value, &end, 10);
        if (end != value && !*end)
            x->r->exit_code = (int)v;
    }
    return 0;
}

/* A JSON object without "type" that names an error, {"code","message"}:
 * what execd writes into an open session stream when the run times out
 * (protocol.md 3.3). The end is not reported otherwise, so keep the reason. */
static int on_untyped(struct osbcl_run *x, json_t *ev)
{
    const char *code = json_string_value(json_object_get(ev, "code"));
    const char *msg = json_string_value(json_object_get(ev, "message"));
    if (!code || x->errored)
        return 0;
    if (set_str(&x->r->error_name, code) < 0 || set_str(&x->r->error_value, msg) < 0)
        return OSBC_E_NOMEM;
    x->errored = true;
    return 0;
}

/* What the run's result learns from an event, before any callback sees it
 * (so a stop at init still knows what to interrupt). */
static int record(struct osbcl_run *x, const char *type, json_t *ev)
{
    if (!strcmp(type, "init"))
        return set_str(&x->r->execution_id, json_string_value(json_object_get(ev, "text"))) < 0
                   ? OSBC_E_NOMEM
                   : 0;
    if (!strcmp(type, "error"))
        return on_error(x, ev);
    if (!strcmp(type, "execution_complete")) {
        x->r->complete = 1;
        /* Go's omitempty leaves a 0 ms execution_time out. */
        json_t *t = json_object_get(ev, "execution_time");
        x->r->execution_time_ms = json_is_integer(t) ? (long)json_integer_value(t) : 0;
        if (!x->errored)
            x->r->exit_code = 0;
    }
    return 0;
}

/* The typed callback of an event; its return value (non-zero stops). */
static int dispatch(struct osbcl_run *x, const char *type, json_t *ev)
{
    const struct osbc_exec_cbs *cb = x->cbs;
    if (!cb)
        return 0;
    if (!strcmp(type, "init"))
        return cb->on_init && x->r->execution_id ? cb->on_init(cb->ud, x->r->execution_id) : 0;
    if (!strcmp(type, "stdout"))
        return cb_text(cb->on_stdout, cb->ud, ev);
    if (!strcmp(type, "stderr"))
        return cb_text(cb->on_stderr, cb->ud, ev);
    if (!strcmp(type, "result") && cb->on_result) {
        char *r = osbcl_json_dump(json_object_get(ev, "results"));
        if (!r) {
            x->rc = OSBC_E_NOMEM;
            return 0;
        }
        int stop = cb->on_result(cb->ud, r);
        free(r);
        return stop;
    }
    return 0;
}

static int on_event(void *ud, const char *text, size_t len)
{
    struct osbcl_run *x = ud;
    json_t *ev = json_loadb(text, len, 0, NULL);
    if (!json_is_object(ev)) { /* not an event: skip it, as the SDKs do */
        json_decref(ev);
        return 0;
    }
    const char *type = json_string_value(json_object_get(ev, "type"));
    x->rc = type ? record(x, type, ev) : on_untyped(x, ev);
    int stop = 0;
    if (!x->rc && x->cbs && x->cbs->on_event)
        stop = x->cbs->on_event(x->cbs->ud, text);
    if (!x->rc && !stop && type)
        stop = dispatch(x, type, ev);
    json_decref(ev);
    if (stop)
        x->stopped = true;
    return stop || x->rc;
}

int osbcl_run_feed(void *ud, const char *data, size_t len)
{
    struct osbcl_run *x = ud;
    int rc = osbcl_sse_feed(&x->sse, data, len, on_event, x);
    if (rc < 0 && !x->rc)
        x->rc = rc;
    return rc != 0;
}

void osbcl_run_init(struct osbcl_run *x, const struct osbc_exec_cbs *cbs,
                    struct osbc_exec_result *r)
{
    memset(x, 0, sizeof *x);
    x->cbs = cbs;
    x->r = r;
    osbc_exec_result_clear(r);
    r->exit_code = -1;
    r->execution_time_ms = -1;
}

void osbcl_run_end(struct osbcl_run *x)
{
    if (!x->rc && !x->stopped)
        osbcl_sse_end(&x->sse, on_event, x);
}

void osbcl_run_free(struct osbcl_run *x)
{
    osbcl_sse_free(&x->sse);
}

static const char *const sse_headers[] = {"Accept: text/event-stream", NULL};

/* A stream's timeout is per read: execd sends a ping event every 3 s while
 * a command is quiet, so a long silent command is fine, and a dead peer is
 * noticed. A client timeout shorter than a few pings would cut every quiet
 * command, so reads wait at least this long. */
#define SSE_READ_MIN_MS 10000

/* Runs one streaming call; on a stop asked by a callback, DELETE
 * <intr_prefix><intr_id> interrupts the run remotely (intr_id NULL: the
 * execution id from the init event; intr_prefix NULL: no interrupt). */
static int stream(osbc_client *c, const char *id, const char *path, json_t *body,
                  const char *intr_prefix, const char *intr_id, const struct osbc_exec_cbs *cbs,
                  struct osbc_exec_result *result, struct osbc_error *err)
{
    struct osbc_exec_result local = {0};
    struct osbcl_run x;
    osbcl_run_init(&x, cbs, result ? result : &local);
    char *text = osbcl_json_dump(body);
    json_decref(body);
    if (!text)
        return osbcl_fail(err, OSBC_E_NOMEM, "cannot encode the request");
    struct osbcl_req rq = {.method = "POST",
                           .path = path,
                           .headers = sse_headers,
                           .content_type = "application/json",
                           .body = text,
                           .body_len = strlen(text),
                           .on_data = osbcl_run_feed,
                           .data_ud = &x,
                           .timeout_ms = osbcl_timeout_ms(c) < SSE_READ_MIN_MS
                                             ? SSE_READ_MIN_MS
                                             : osbcl_timeout_ms(c)};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    free(text);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300)) {
        char what[300];
        snprintf(what, sizeof what, "POST %.200s", path);
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, what);
    }
    if (rc == 0)
        osbcl_run_end(&x);
    osbcl_run_free(&x);
    if (rs.status)
        osbcl_resp_free(&rs);
    if (x.stopped) {
        if (!intr_id)
            intr_id = x.r->execution_id;
        if (intr_prefix && intr_id) {
            struct osbcl_sb p = {0};
            osbcl_sb_adds(&p, intr_prefix);
            osbcl_sb_esc(&p, intr_id);
            char *ip = osbcl_sb_done(&p, NULL);
            if (ip)
                osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", ip, NULL, NULL, NULL);
            free(ip);
        }
        rc = osbcl_fail(err, OSBC_E_CANCELLED, "stopped by the caller");
    } else if (x.rc == OSBC_E_NOMEM) {
        rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    } else if (x.rc == OSBC_E_PROTOCOL) {
        rc = osbcl_fail(err, OSBC_E_PROTOCOL, "POST %s: an event over %d bytes", path,
                        OSBCL_SSE_MAX_EVENT);
    }
    osbc_exec_result_clear(&local);
    return rc;
}

void osbc_exec_result_clear(struct osbc_exec_result *r)
{
    if (!r)
        return;
    free(r->execution_id);
    free(r->error_name);
    free(r->error_value);
    free(r->traceback);
    memset(r, 0, sizeof *r);
}

/* Path "<a><escaped b><c>"; NULL with err on OOM. */
static char *path3(const char *a, const char *b, const char *c, struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, a);
    if (b)
        osbcl_sb_esc(&p, b);
    if (c)
        osbcl_sb_adds(&p, c);
    return osbcl_sb_done(&p, err);
}

static bool empty(const char *s)
{
    return !s || !*s;
}

/* Adds the fields of o a command request takes. -1 on OOM. */
static int run_fields(json_t *b, const struct osbc_run_opts *o, bool session)
{
    int rc = 0;
    if (!o)
        return session ? 0 : json_object_set_new(b, "background", json_false());
    if (o->cwd && *o->cwd)
        rc |= json_object_set_new(b, "cwd", json_string(o->cwd));
    if (o->timeout_ms > 0)
        rc |= json_object_set_new(b, "timeout", json_integer(o->timeout_ms));
    if (session)
        return rc;
    rc |= json_object_set_new(b, "background", json_boolean(o->background));
    if (o->n_env)
        rc |= osbcl_json_kv(b, "envs", o->env, o->n_env);
    if (o->uid > 0)
        rc |= json_object_set_new(b, "uid", json_integer(o->uid));
    if (o->uid > 0 && o->gid > 0)
        rc |= json_object_set_new(b, "gid", json_integer(o->gid));
    return rc ? -1 : 0;
}

int osbc_command_run(osbc_client *c, const char *id, const char *command,
                     const struct osbc_run_opts *o, const struct osbc_exec_cbs *cbs,
                     struct osbc_exec_result *result, struct osbc_error *err)
{
    if (empty(id) || empty(command))
        return osbcl_fail(err, OSBC_E_ARG, "command run: a sandbox id and a command");
    if (o && (o->uid < 0 || o->gid < 0 || (o->gid > 0 && o->uid == 0)))
        return osbcl_fail(err, OSBC_E_ARG,
                          "command run: uid and gid are positive; a gid needs a uid");
    json_t *b = json_pack("{s:s}", "command", command);
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "command run: the command is not UTF-8");
    if (run_fields(b, o, false) < 0) {
        json_decref(b);
        return osbcl_fail(err, OSBC_E_NOMEM, "cannot build the request");
    }
    return stream(c, id, "/command", b, "/command?id=", NULL, cbs, result, err);
}

int osbc_command_interrupt(osbc_client *c, const char *id, const char *execution_id,
                           struct osbc_error *err)
{
    if (empty(id) || empty(execution_id))
        return osbcl_fail(err, OSBC_E_ARG, "command interrupt: a sandbox id and an execution id");
    char *p = path3("/command?id=", execution_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", p, NULL, NULL, err);
    free(p);
    return rc;
}

int osbc_command_status(osbc_client *c, const char *id, const char *execution_id, char **json,
                        struct osbc_error *err)
{
    if (empty(id) || empty(execution_id))
        return osbcl_fail(err, OSBC_E_ARG, "command status: a sandbox id and an execution id");
    char *p = path3("/command/status/", execution_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", p, NULL, json, err);
    free(p);
    return rc;
}

int osbc_command_logs(osbc_client *c, const char *id, const char *execution_id, long long cursor,
                      char **text, size_t *len, long long *next_cursor, struct osbc_error *err)
{
    if (empty(id) || empty(execution_id) || !text || cursor < 0)
        return osbcl_fail(err, OSBC_E_ARG,
                          "command logs: a sandbox id, an execution id and a cursor >= 0");
    *text = NULL;
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/command/");
    osbcl_sb_esc(&p, execution_id);
    osbcl_sb_addf(&p, "/logs?cursor=%lld", cursor);
    char *path = osbcl_sb_done(&p, err);
    if (!path)
        return OSBC_E_NOMEM;
    struct osbcl_req rq = {.method = "GET", .path = path};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300)) {
        char what[300];
        snprintf(what, sizeof what, "GET %.200s", path);
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, what);
    } else if (rc == 0) {
        const char *cur = osbcl_resp_header(&rs, "execd-commands-tail-cursor");
        if (next_cursor)
            *next_cursor = cur ? strtoll(cur, NULL, 10) : cursor + (long long)rs.len;
        if (len)
            *len = rs.len;
        *text = rs.body;
        rs.body = NULL;
    }
    free(path);
    if (rs.status)
        osbcl_resp_free(&rs);
    return rc;
}

/* ------------------------------------------------------------ sessions */

/* Reads a string field of a JSON answer into *out. */
static int answer_field(char *body, const char *field, const char *what, char **out,
                        struct osbc_error *err)
{
    json_t *j = osbcl_json_parse(body, strlen(body), what, err);
    free(body);
    if (!j)
        return OSBC_E_PROTOCOL;
    const char *v = json_string_value(json_object_get(j, field));
    int rc = 0;
    if (!v || !*v)
        rc = osbcl_fail(err, OSBC_E_PROTOCOL, "%s: the answer has no \"%s\"", what, field);
    else if (!(*out = strdup(v)))
        rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    json_decref(j);
    return rc;
}

int osbc_session_create(osbc_client *c, const char *id, const char *cwd, char **session_id,
                        struct osbc_error *err)
{
    if (empty(id) || !session_id)
        return osbcl_fail(err, OSBC_E_ARG, "session create: a sandbox id");
    *session_id = NULL;
    json_t *b = cwd && *cwd ? json_pack("{s:s}", "cwd", cwd) : json_object();
    char *text = b ? osbcl_json_dump(b) : NULL;
    json_decref(b);
    if (!text)
        return osbcl_fail(err, OSBC_E_NOMEM, "cannot build the request");
    char *body;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "POST", "/session", text, &body, err);
    free(text);
    if (rc < 0)
        return rc;
    return answer_field(body, "session_id", "POST /session", session_id, err);
}

int osbc_session_run(osbc_client *c, const char *id, const char *session_id, const char *command,
                     const struct osbc_run_opts *o, const struct osbc_exec_cbs *cbs,
                     struct osbc_exec_result *result, struct osbc_error *err)
{
    if (empty(id) || empty(session_id) || empty(command))
        return osbcl_fail(err, OSBC_E_ARG, "session run: a sandbox id, a session id and a command");
    char *p = path3("/session/", session_id, "/run", err);
    if (!p)
        return OSBC_E_NOMEM;
    json_t *b = json_pack("{s:s}", "command", command);
    int rc;
    if (!b) {
        rc = osbcl_fail(err, OSBC_E_ARG, "session run: the command is not UTF-8");
    } else if (run_fields(b, o, true) < 0) {
        json_decref(b);
        rc = osbcl_fail(err, OSBC_E_NOMEM, "cannot build the request");
    } else {
        /* No DELETE on a stop: execd's interrupt of a session id closes the
         * whole session. Closing the stream is the stop: our execd then kills
         * what the run started and keeps the shell. */
        rc = stream(c, id, p, b, NULL, NULL, cbs, result, err);
    }
    free(p);
    return rc;
}

int osbc_session_delete(osbc_client *c, const char *id, const char *session_id,
                        struct osbc_error *err)
{
    if (empty(id) || empty(session_id))
        return osbcl_fail(err, OSBC_E_ARG, "session delete: a sandbox id and a session id");
    char *p = path3("/session/", session_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", p, NULL, NULL, err);
    free(p);
    return rc;
}

/* ------------------------------------------------------------ code */

int osbc_code_context_create(osbc_client *c, const char *id, const char *language, const char *cwd,
                             char **context_id, struct osbc_error *err)
{
    if (empty(id) || empty(language) || !context_id)
        return osbcl_fail(err, OSBC_E_ARG, "code context create: a sandbox id and a language");
    *context_id = NULL;
    json_t *b = json_pack("{s:s}", "language", language);
    if (b && cwd && *cwd && json_object_set_new(b, "cwd", json_string(cwd)) < 0) {
        json_decref(b);
        b = NULL;
    }
    char *text = b ? osbcl_json_dump(b) : NULL;
    json_decref(b);
    if (!text)
        return osbcl_fail(err, OSBC_E_NOMEM, "cannot build the request");
    char *body;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "POST", "/code/context", text, &body, err);
    free(text);
    if (rc < 0)
        return rc;
    return answer_field(body, "id", "POST /code/context", context_id, err);
}

int osbc_code_context_list(osbc_client *c, const char *id, const char *language, char **json,
                           struct osbc_error *err)
{
    if (empty(id))
        return osbcl_fail(err, OSBC_E_ARG, "code context list: a sandbox id");
    char *p = path3("/code/contexts?language=", language ? language : "", NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", p, NULL, json, err);
    free(p);
    return rc;
}

int osbc_code_context_delete(osbc_client *c, const char *id, const char *context_id,
                             struct osbc_error *err)
{
    if (empty(id) || empty(context_id))
        return osbcl_fail(err, OSBC_E_ARG, "code context delete: a sandbox id and a context id");
    char *p = path3("/code/contexts/", context_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", p, NULL, NULL, err);
    free(p);
    return rc;
}

int osbc_code_run(osbc_client *c, const char *id, const char *context_id, const char *language,
                  const char *code, const struct osbc_exec_cbs *cbs,
                  struct osbc_exec_result *result, struct osbc_error *err)
{
    if (empty(id) || !code || (empty(context_id) && empty(language)))
        return osbcl_fail(err, OSBC_E_ARG,
                          "code run: a sandbox id, code and a context or language");
    json_t *ctx = json_object();
    json_t *b = json_pack("{s:s}", "code", code);
    int bad = !ctx || !b;
    if (!bad && !empty(context_id))
        bad |= json_object_set_new(ctx, "id", json_string(context_id));
    if (!bad && !empty(language))
        bad |= json_object_set_new(ctx, "language", json_string(language));
    if (bad) {
        json_decref(ctx);
        json_decref(b);
        return osbcl_fail(err, OSBC_E_ARG, "code run: cannot encode the request (not UTF-8?)");
    }
    if (json_object_set_new(b, "context", ctx) < 0) {
        json_decref(b);
        return osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    }
    /* An interrupt of code names its context (DELETE /code?id=): the one
     * given, or the default context the init event names. */
    return stream(c, id, "/code", b, "/code?id=", empty(context_id) ? NULL : context_id, cbs,
                  result, err);
}

int osbc_code_interrupt(osbc_client *c, const char *id, const char *context_id,
                        struct osbc_error *err)
{
    if (empty(id) || empty(context_id))
        return osbcl_fail(err, OSBC_E_ARG, "code interrupt: a sandbox id and a context id");
    char *p = path3("/code?id=", context_id, NULL, err);
    if (!p)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "DELETE", p, NULL, NULL, err);
    free(p);
    return rc;
}
