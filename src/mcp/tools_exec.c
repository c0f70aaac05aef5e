/* Execution tools: shell commands (one-off or in a session that keeps its
 * working directory and variables), code in a persistent context per
 * sandbox and language, interrupts. Output past MCP_TEXT_MAX is cut in the
 * result; the whole of it is written to a file in the sandbox and the
 * result's note names that file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/mcp.h"

#define SID \
    "\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Sandbox identifier.\"}"
#define CIM \
    "\"connect_if_missing\":{\"type\":\"boolean\",\"description\":\"Accepted for compatibility; sandboxes are always looked up on the server.\"}"
#define FULL_MAX (32 * 1024 * 1024) /* output kept to save in full */

struct collect {
    json_t *stdout_msgs, *stderr_msgs, *results;
    size_t shown; /* bytes put in the result */
    char *all;    /* everything, for the full-output file */
    size_t all_len;
    bool cut, dropped; /* cut: the result is partial; dropped: so is the file */
    bool lines;        /* command output: one event per line */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void keep_all(struct collect *x, const char *text, size_t len)
{
    if (x->all_len + len + 1 > FULL_MAX) {
        x->dropped = true;
        return;
    }
    char *n = realloc(x->all, x->all_len + len + 2);
    if (!n) {
        x->dropped = true;
        return;
    }
    x->all = n;
    memcpy(x->all + x->all_len, text, len);
    x->all_len += len;
    if (x->lines)
        x->all[x->all_len++] = '\n';
}

static int add(struct collect *x, json_t *arr, const char *text, size_t len, bool is_err)
{
    keep_all(x, text, len);
    if (x->shown + len > MCP_TEXT_MAX) {
        x->cut = true;
        return 0;
    }
    x->shown += len;
    json_array_append_new(arr, json_pack("{s:o,s:I,s:b}", "text", mcp_text(text, len), "timestamp",
                                         (json_int_t)now_ms(), "is_error", is_err));
    return 0;
}

static int on_out(void *ud, const char *t, size_t n)
{
    struct collect *x = ud;
    return add(x, x->stdout_msgs, t, n, false);
}

static int on_err(void *ud, const char *t, size_t n)
{
    struct collect *x = ud;
    return add(x, x->stderr_msgs, t, n, true);
}

static int on_result(void *ud, const char *json)
{
    struct collect *x = ud;
    json_t *r = json_loads(json, 0, NULL);
    if (r)
        json_array_append_new(x->results, r);
    return 0;
}

/* The Execution document (upstream's shape) with the truncation note. */
static json_t *execution(struct mcp *m, const char *sid, struct collect *x,
                         const struct osbc_exec_result *r)
{
    json_t *e = json_pack("{s:s?,s:o,s:{s:O,s:O}}", "id", r->execution_id, "exit_code",
                          r->exit_code >= 0 ? json_integer(r->exit_code) : json_null(), "logs",
                          "stdout", x->stdout_msgs, "stderr", x->stderr_msgs);
    if (json_array_size(x->results))
        json_object_set(e, "result", x->results);
    if (r->error_name)
        json_object_set_new(e, "error",
                            json_pack("{s:s,s:s,s:s}", "name", r->error_name, "value",
                                      r->error_value ? r->error_value : "", "traceback",
                                      r->traceback ? r->traceback : ""));
    if (r->complete)
        json_object_set_new(
            e, "complete",
            json_pack("{s:I}", "execution_time_in_millis", (json_int_t)r->execution_time_ms));
    if (!x->cut)
        return e;
    char path[160], note[400];
    snprintf(path, sizeof path, "/tmp/opensandbox-mcp/%s.log",
             r->execution_id ? r->execution_id : "output");
    struct osbc_error err;
    char msg[8];
    osbc_client *c = mcp_client(m, msg, sizeof msg);
    if (c && osbc_file_write(c, sid, path, x->all ? x->all : "", x->all_len, NULL, &err) == 0)
        snprintf(note, sizeof note,
                 "Output cut at %d KB. The whole output%s is in %s in the sandbox: read it "
                 "with file_read (range_header \"bytes=N-M\" for parts).",
                 MCP_TEXT_MAX / 1024, x->dropped ? " (its first 32 MB)" : "", path);
    else
        snprintf(note, sizeof note, "Output cut at %d KB (saving the whole output failed).",
                 MCP_TEXT_MAX / 1024);
    json_object_set_new(e, "truncated", json_true());
    json_object_set_new(e, "note", json_string(note));
    return e;
}

static void collect_init(struct collect *x, struct osbc_exec_cbs *cbs, bool lines)
{
    memset(x, 0, sizeof *x);
    x->stdout_msgs = json_array();
    x->stderr_msgs = json_array();
    x->results = json_array();
    x->lines = lines;
    *cbs = (struct osbc_exec_cbs){
        .on_stdout = on_out, .on_stderr = on_err, .on_result = on_result, .ud = x};
}

static void collect_free(struct collect *x)
{
    json_decref(x->stdout_msgs);
    json_decref(x->stderr_msgs);
    json_decref(x->results);
    free(x->all);
}

static const char *str(json_t *args, const char *k)
{
    return json_string_value(json_object_get(args, k));
}

static json_t *t_command_run(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = str(args, "sandbox_id");
    json_t *t = json_object_get(args, "timeout_seconds");
    struct osbc_run_opts o = {
        .cwd = str(args, "working_directory"),
        .background = json_is_true(json_object_get(args, "background")),
        .timeout_ms = json_is_number(t) ? (long)(json_number_value(t) * 1000) : 0,
    };
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, true);
    struct osbc_exec_result r = {0};
    struct osbc_error err;
    json_t *res = NULL;
    if (osbc_command_run(c, sid, str(args, "command"), &o, &cbs, &r, &err) < 0)
        mcp_fail(msg, cap, "command_run", &err);
    else
        res = execution(m, sid, &x, &r);
    osbc_exec_result_clear(&r);
    collect_free(&x);
    return res;
}

static json_t *t_session_run(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = str(args, "sandbox_id");
    char *session = str(args, "session_id") ? strdup(str(args, "session_id")) : NULL;
    struct osbc_error err;
    if (!session && osbc_session_create(c, sid, str(args, "working_directory"), &session, &err) < 0)
        return mcp_fail(msg, cap, "session create", &err);
    json_t *t = json_object_get(args, "timeout_seconds");
    struct osbc_run_opts o = {
        .cwd = str(args, "session_id") ? str(args, "working_directory") : NULL,
        .timeout_ms = json_is_number(t) ? (long)(json_number_value(t) * 1000) : 0,
    };
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, true);
    struct osbc_exec_result r = {0};
    json_t *res = NULL;
    if (osbc_session_run(c, sid, session, str(args, "command"), &o, &cbs, &r, &err) < 0)
        mcp_fail(msg, cap, "session run", &err);
    else if ((res = execution(m, sid, &x, &r)))
        json_object_set_new(res, "session_id", json_string(session));
    osbc_exec_result_clear(&r);
    collect_free(&x);
    free(session);
    return res;
}

static json_t *t_interrupt(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    struct osbc_error err;
    if (!c)
        return NULL;
    if (osbc_command_interrupt(c, str(args, "sandbox_id"), str(args, "execution_id"), &err) < 0)
        return mcp_fail(msg, cap, "interrupt", &err);
    return json_pack("{s:s}", "status", "interrupted");
}

/* The context of (sandbox, language), made on first use. */
static const char *context_for(struct mcp *m, osbc_client *c, const char *sid, const char *lang,
                               bool fresh, struct osbc_error *err)
{
    for (size_t i = 0; i < m->n_ctxs; i++) {
        struct mcp_ctx *x = &m->ctxs[i];
        if (strcmp(x->sandbox, sid) || strcmp(x->language, lang))
            continue;
        if (!fresh)
            return x->id;
        free(x->id);
        x->id = NULL;
        if (osbc_code_context_create(c, sid, lang, NULL, &x->id, err) < 0)
            return NULL;
        return x->id;
    }
    char *id;
    if (osbc_code_context_create(c, sid, lang, NULL, &id, err) < 0)
        return NULL;
    m->ctxs = realloc(m->ctxs, (m->n_ctxs + 1) * sizeof *m->ctxs);
    m->ctxs[m->n_ctxs] = (struct mcp_ctx){strdup(sid), strdup(lang), id};
    return m->ctxs[m->n_ctxs++].id;
}

static json_t *t_code_run(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = str(args, "sandbox_id"), *lang = str(args, "language");
    const char *ctx = str(args, "context_id");
    struct osbc_error err;
    bool own = !ctx;
    if (own && !(ctx = context_for(m, c, sid, lang, false, &err)))
        return mcp_fail(msg, cap, "code context", &err);
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, false);
    struct osbc_exec_result r = {0};
    int rc = osbc_code_run(c, sid, ctx, lang, str(args, "code"), &cbs, &r, &err);
    if (rc < 0 && own && err.http_status == 404) { /* the context is gone: one new one */
        if (!(ctx = context_for(m, c, sid, lang, true, &err))) {
            collect_free(&x);
            return mcp_fail(msg, cap, "code context", &err);
        }
        rc = osbc_code_run(c, sid, ctx, lang, str(args, "code"), &cbs, &r, &err);
    }
    json_t *res = NULL;
    if (rc < 0)
        mcp_fail(msg, cap, "code_run", &err);
    else if ((res = execution(m, sid, &x, &r)))
        json_object_set_new(res, "context_id", json_string(ctx));
    osbc_exec_result_clear(&r);
    collect_free(&x);
    return res;
}

const struct mcp_tool mcp_exec_tools[] = {
    {"command_run",
     "Run a shell command in a sandbox (pipes and redirects work). Returns the execution: id, "
     "exit_code, logs.stdout/stderr (one entry per line), error. background=true returns at "
     "once with the id.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"command\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Shell command.\"},\"background\":{\"type\":\"boolean\"},\"working_directory\":{\"type\":\"string\"},\"timeout_seconds\":{\"type\":\"number\",\"minimum\":0,\"description\":\"Kill the command after this long.\"}," CIM
     "},\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
     t_command_run},
    {"command_interrupt", "Interrupt a running command by its execution id.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"execution_id\":{\"type\":\"string\",\"minLength\":1}," CIM
     "},\"required\":[\"sandbox_id\",\"execution_id\"],\"additionalProperties\":false}",
     t_interrupt},
    {"command_run_in_session",
     "Run a command in a bash session that keeps its working directory, variables and shell "
     "state between calls. Without session_id a new session is made; its id is returned.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"command\":{\"type\":\"string\",\"minLength\":1},\"session_id\":{\"type\":\"string\",\"minLength\":1},\"working_directory\":{\"type\":\"string\"},\"timeout_seconds\":{\"type\":\"number\",\"minimum\":0}},\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
     t_session_run},
    {"code_run",
     "Run code in a persistent context (one per sandbox and language, kept between calls: "
     "variables and imports stay). Returns stdout/stderr, results (expression values) and "
     "error (exception name, value, traceback).",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"code\":{\"type\":\"string\",\"minLength\":1},\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"typescript\",\"bash\",\"java\",\"go\"]},\"context_id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Run in this context instead of the language's.\"}},\"required\":[\"sandbox_id\",\"code\",\"language\"],\"additionalProperties\":false}",
     t_code_run},
    {NULL, NULL, NULL, NULL},
};
