/* Commands, sessions and code: requests whose answer is execd's event
 * stream (protocol.md 3.3), delivered to the caller's callbacks as events
 * arrive, and the small JSON calls around them. */
#include <stdlib.h>
#include <string.h>

#include "sse.h"

struct run {
    const struct osbc_exec_cbs *cbs;
    struct osbc_exec_result *r;
    struct osbcl_sse sse;
    int rc; /* OSBC_E_NOMEM / _PROTOCOL met while reading, or 0 */
    bool stopped, errored;
};

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
static int on_error(struct run *x, json_t *ev)
{
    json_t *e = json_object_get(ev, "error");
    const char *name = json_string_value(json_object_get(e, "ename"));
    const char *value = json_string_value(json_object_get(e, "evalue"));
    struct osbcl_sb tb = {0};
    json_t *line;
    size_t i;
    json_array_foreach(json_object_get(e, "traceback"), i, line)
    {
        if (i)
            osbcl_sb_adds(&tb, "\n");
        if (json_is_string(line))
            osbcl_sb_adds(&tb, json_string_value(line));
    }
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

static int on_event(void *ud, const char *text, size_t len)
{
    struct run *x = ud;
    const struct osbc_exec_cbs *cb = x->cbs;
    void *u = cb ? cb->ud : NULL;
    json_t *ev = json_loadb(text, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!type) { /* not an event: skip it, as the SDKs do */
        json_decref(ev);
        return 0;
    }
    int stop = 0;
    if (cb && cb->on_event)
        stop = cb->on_event(u, text);
    if (!stop && !strcmp(type, "init")) {
        if (set_str(&x->r->execution_id, json_string_value(json_object_get(ev, "text"))) < 0)
            x->rc = OSBC_E_NOMEM;
        else if (cb && cb->on_init && x->r->execution_id)
            stop = cb->on_init(u, x->r->execution_id);
    } else if (!stop && !strcmp(type, "stdout")) {
        stop = cb_text(cb ? cb->on_stdout : NULL, u, ev);
    } else if (!stop && !strcmp(type, "stderr")) {
        stop = cb_text(cb ? cb->on_stderr : NULL, u, ev);
    } else if (!stop && !strcmp(type, "result") && cb && cb->on_result) {
        char *r = osbcl_json_dump(json_object_get(ev, "results"));
        if (!r)
            x->rc = OSBC_E_NOMEM;
        else
            stop = cb->on_result(u, r);
        free(r);
    } else if (!stop && !strcmp(type, "error")) {
        x->rc = on_error(x, ev);
    } else if (!stop && !strcmp(type, "execution_complete")) {
        x->r->complete = 1;
        json_t *t = json_object_get(ev, "execution_time");
        x->r->execution_time_ms = json_is_integer(t) ? (long)json_integer_value(t) : 0;
        if (!x->errored)
            x->r->exit_code = 0;
    }
    json_decref(ev);
    if (stop)
        x->stopped = true;
    return stop || x->rc;
}

static int on_data(void *ud, const char *data, size_t len)
{
    struct run *x = ud;
    int rc = osbcl_sse_feed(&x->sse, data, len, on_event, x);
    if (rc < 0 && !x->rc)
        x->rc = rc;
    return rc != 0;
}

static const char *const sse_headers[] = {"Accept: text/event-stream", NULL};

/* Runs one streaming call; on a stop asked by a callback, DELETE
 * <intr_prefix><intr_id> interrupts the run remotely (intr_id NULL: the
 * execution id from the init event; intr_prefix NULL: no interrupt). */
static int stream(osbc_client *c, const char *id, const char *path, json_t *body,
                  const char *intr_prefix, const char *intr_id, const struct osbc_exec_cbs *cbs,
                  struct osbc_exec_result *result, struct osbc_error *err)
{
    struct osbc_exec_result local = {0};
    struct run x = {.cbs = cbs, .r = result ? result : &local};
    osbc_exec_result_clear(x.r);
    x.r->exit_code = -1;
    x.r->execution_time_ms = -1;
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
                           .on_data = on_data,
                           .data_ud = &x};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    free(text);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300)) {
        char what[300];
        snprintf(what, sizeof what, "POST %.200s", path);
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, what);
    }
    if (rc == 0 && !x.rc)
        x.rc = osbcl_sse_end(&x.sse, on_event, &x) < 0 ? OSBC_E_PROTOCOL : 0;
    osbcl_sse_free(&x.sse);
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
    } else if (x.rc) {
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
    if (!b || run_fields(b, o, false) < 0) {
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
    if (!b || run_fields(b, o, true) < 0) {
        json_decref(b);
        rc = osbcl_fail(err, OSBC_E_NOMEM, "cannot build the request");
    } else {
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
    /* An interrupt of code names its context (DELETE /code?id=); without
     * one there is nothing to name, and closing the stream is all we can do. */
    return stream(c, id, "/code", b, empty(context_id) ? NULL : "/code?id=", context_id, cbs,
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
