/* Execution tools: shell commands (one-off or in a session that keeps its
 * working directory and variables), code in a persistent context per
 * sandbox and language, interrupts. Results are upstream's Execution {id,
 * execution_count, result, error, logs: {stdout, stderr}} plus exit_code.
 * Output past MCP_TEXT_MAX is cut in the result; the whole of it is written
 * to a file in the sandbox and the result's note names that file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "mcp/mcp.h"

#define SID \
    "'sandbox_id':{'type':'string','minLength':1,'description':'Target sandbox identifier.'}"
#define CIM \
    "'connect_if_missing':{'type':'boolean','default':false,'description':'Accepted for " \
    "compatibility; sandboxes are always looked up on the server, no sandbox_connect needed.'}"
#define FULL_MAX (32 * 1024 * 1024) /* output kept to save in full */
#define ENTRY_COST 64               /* what one log entry adds to a result beyond its text */
#define OUT_DIR "/tmp/opensandbox-mcp"

struct collect {
    json_t *stdout_msgs, *stderr_msgs, *results;
    size_t shown; /* bytes put in the result */
    char *all;    /* everything, for the full-output file */
    size_t all_len;
    bool cut, dropped; /* cut: the result is partial; dropped: so is the file */
    bool lines;        /* command output: one event per line */
};

static void keep_all(struct collect *x, const char *text, size_t len)
{
    if (x->dropped || x->all_len + len + 1 > FULL_MAX) {
        x->dropped = true;
        return;
    }
    x->all = osb_xrealloc(x->all, x->all_len + len + 2);
    memcpy(x->all + x->all_len, text, len);
    x->all_len += len;
    if (x->lines)
        x->all[x->all_len++] = '\n';
}

static int add(struct collect *x, json_t *arr, const char *text, size_t len, bool is_err)
{
    keep_all(x, text, len);
    if (x->cut || x->shown + len + ENTRY_COST > MCP_TEXT_MAX) {
        x->cut = true;
        return 0;
    }
    x->shown += len + ENTRY_COST;
    json_array_append_new(arr, json_pack("{s:o,s:I,s:b}", "text", mcp_text(text, len), "timestamp",
                                         (json_int_t)mcp_now_ms(), "is_error", is_err));
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

/* A code result {"text/plain"|"text": ..., "image/png": ...} as upstream's
 * ExecutionResult {text, timestamp, extra_properties}. A result too big for
 * what is left of the budget keeps its text only (and is noted). */
static int on_result(void *ud, const char *json)
{
    struct collect *x = ud;
    json_t *r = json_loads(json, 0, NULL);
    if (!json_is_object(r)) {
        json_decref(r);
        return 0;
    }
    json_t *text = json_object_get(r, "text");
    if (!text)
        text = json_object_get(r, "text/plain");
    json_t *extra = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(r, k, v) if (strcmp(k, "text") && strcmp(k, "text/plain"))
        json_object_set(extra, k, v);
    size_t size = strlen(json);
    if (x->shown + size + ENTRY_COST > MCP_TEXT_MAX) {
        x->cut = true;
        json_object_clear(extra);
        size = json_string_length(text);
    }
    x->shown += size + ENTRY_COST;
    json_array_append_new(x->results,
                          json_pack("{s:O?,s:I,s:o}", "text", text, "timestamp",
                                    (json_int_t)mcp_now_ms(), "extra_properties", extra));
    json_decref(r);
    return 0;
}

/* Writes the whole output next to the sandbox's other files; the note. */
static void save_all(struct mcp *m, const char *sid, struct collect *x, const char *exec_id,
                     char *note, size_t cap)
{
    char path[200], msg[8];
    struct osbc_error err;
    snprintf(path, sizeof path, OUT_DIR "/%s.log", exec_id ? exec_id : "output");
    osbc_client *c = mcp_client(m, msg, sizeof msg);
    if (c && osbc_file_write(c, sid, path, x->all ? x->all : "", x->all_len, NULL, &err) == 0)
        snprintf(note, cap,
                 "Output cut at %d KB. The whole output%s (stdout and stderr in order, %zu bytes) "
                 "is in %s in the sandbox: read it with file_read and range_header "
                 "\"bytes=START-END\", or with command_run (tail, grep).",
                 MCP_TEXT_MAX / 1024, x->dropped ? " (its first 32 MB)" : "", x->all_len, path);
    else
        snprintf(note, cap, "Output cut at %d KB (saving the whole output failed: %s).",
                 MCP_TEXT_MAX / 1024, c ? err.message : "no client");
}

static json_t *execution(struct mcp *m, const char *sid, struct collect *x,
                         const struct osbc_exec_result *r)
{
    json_t *e = json_pack("{s:s?,s:n,s:O,s:n,s:{s:O,s:O},s:o}", "id", r->execution_id,
                          "execution_count", "result", x->results, "error", "logs", "stdout",
                          x->stdout_msgs, "stderr", x->stderr_msgs, "exit_code",
                          r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    if (r->error_name) {
        json_t *tb = json_array();
        const char *p = r->traceback ? r->traceback : "";
        while (*p) {
            size_t n = strcspn(p, "\n");
            json_array_append_new(tb, mcp_text(p, n));
            p += n + (p[n] == '\n');
        }
        json_object_set_new(e, "error",
                            json_pack("{s:s,s:o,s:I,s:o}", "name", r->error_name, "value",
                                      mcp_text(r->error_value ? r->error_value : "",
                                               r->error_value ? strlen(r->error_value) : 0),
                                      "timestamp", (json_int_t)mcp_now_ms(), "traceback", tb));
    }
    if (!x->cut)
        return e;
    char note[600];
    save_all(m, sid, x, r->execution_id, note, sizeof note);
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

static long timeout_ms(json_t *args)
{
    double t = mcp_num(args, "timeout_seconds", 0);
    return t > 0 ? (long)(t * 1000 + 0.5) : 0;
}

static json_t *t_command_run(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = mcp_str(args, "sandbox_id");
    struct osbc_run_opts o = {
        .cwd = mcp_str(args, "working_directory"),
        .background = json_is_true(json_object_get(args, "background")),
        .timeout_ms = timeout_ms(args),
    };
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, true);
    struct osbc_exec_result r = {0};
    struct osbc_error err;
    json_t *res = NULL;
    if (osbc_command_run(c, sid, mcp_str(args, "command"), &o, &cbs, &r, &err) < 0)
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
    const char *sid = mcp_str(args, "sandbox_id"), *given = mcp_str(args, "session_id");
    const char *cwd = mcp_str(args, "working_directory");
    char *session = given ? osb_xstrdup(given) : NULL;
    struct osbc_error err;
    if (!session && osbc_session_create(c, sid, cwd, &session, &err) < 0)
        return mcp_fail(msg, cap, "session create", &err);
    struct osbc_run_opts o = {.cwd = given ? cwd : NULL, .timeout_ms = timeout_ms(args)};
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, true);
    struct osbc_exec_result r = {0};
    json_t *res = NULL;
    if (osbc_session_run(c, sid, session, mcp_str(args, "command"), &o, &cbs, &r, &err) < 0)
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
    if (osbc_command_interrupt(c, mcp_str(args, "sandbox_id"), mcp_str(args, "execution_id"),
                               &err) < 0)
        return mcp_fail(msg, cap, "interrupt", &err);
    return json_pack("{s:s}", "status", "interrupted");
}

/* The context of (sandbox, language), made on first use and kept in this
 * process; fresh: the old one is gone (a 404), make another. */
static const char *context_for(struct mcp *m, osbc_client *c, const char *sid, const char *lang,
                               bool fresh, struct osbc_error *err)
{
    struct mcp_ctx *x = NULL;
    for (size_t i = 0; i < m->n_ctxs && !x; i++)
        if (!strcmp(m->ctxs[i].sandbox, sid) && !strcmp(m->ctxs[i].language, lang))
            x = &m->ctxs[i];
    if (x && !fresh)
        return x->id;
    char *id;
    if (osbc_code_context_create(c, sid, lang, NULL, &id, err) < 0)
        return NULL;
    if (!x) {
        m->ctxs = osb_xrealloc(m->ctxs, (m->n_ctxs + 1) * sizeof *m->ctxs);
        x = &m->ctxs[m->n_ctxs++];
        *x = (struct mcp_ctx){osb_xstrdup(sid), osb_xstrdup(lang), NULL};
    }
    free(x->id);
    x->id = id;
    return id;
}

void mcp_forget_sandbox(struct mcp *m, const char *sandbox_id)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n_ctxs; i++) {
        struct mcp_ctx *x = &m->ctxs[i];
        if (strcmp(x->sandbox, sandbox_id)) {
            m->ctxs[k++] = *x;
            continue;
        }
        free(x->sandbox);
        free(x->language);
        free(x->id);
    }
    m->n_ctxs = k;
}

static json_t *t_code_run(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = mcp_str(args, "sandbox_id"), *lang = mcp_str(args, "language");
    const char *ctx = mcp_str(args, "context_id"), *code = mcp_str(args, "code");
    struct osbc_error err;
    bool own = !ctx;
    if (own && !(ctx = context_for(m, c, sid, lang, false, &err)))
        return mcp_fail(msg, cap, "code context", &err);
    struct collect x;
    struct osbc_exec_cbs cbs;
    collect_init(&x, &cbs, false);
    struct osbc_exec_result r = {0};
    int rc = osbc_code_run(c, sid, ctx, lang, code, &cbs, &r, &err);
    if (rc < 0 && own && err.http_status == 404) { /* the context is gone: one new one */
        if (!(ctx = context_for(m, c, sid, lang, true, &err))) {
            collect_free(&x);
            return mcp_fail(msg, cap, "code context", &err);
        }
        rc = osbc_code_run(c, sid, ctx, lang, code, &cbs, &r, &err);
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

#define TIMEOUT \
    "'timeout_seconds':{'type':['number','null'],'minimum':0,'default':null,'description':'Stop " \
    "the command after this long (default: no limit).'}"

const struct mcp_tool mcp_exec_tools[] = {
    {"command_run", "Run command",
     "Run a shell command inside a sandbox (pipes and redirects work). Returns the execution "
     "{id, exit_code, logs: {stdout, stderr} (one entry per line), error (name CommandExecError, "
     "value the exit code, when it fails)}. background=true returns at once with the id (redirect "
     "its output to a file to read it later). Output over 100 KB is cut; the note says where the "
     "whole of it is.",
     MCP_OBJ(SID
             ",'command':{'type':'string','minLength':1,'description':'Shell command to execute "
             "(supports pipes/redirects).'},'background':{'type':'boolean','default':false,"
             "'description':'If true, run asynchronously and return immediately.'},"
             "'working_directory':{'type':['string','null'],'default':null,'description':"
             "'Working directory for the command.'}," TIMEOUT "," CIM,
             "'sandbox_id','command'"),
     MCP_DESTRUCTIVE, t_command_run},
    {"command_interrupt", "Interrupt command",
     "Interrupt a running command execution (by the id command_run returned). Returns {status: "
     "interrupted}.",
     MCP_OBJ(SID
             ",'execution_id':{'type':'string','minLength':1,'description':'Execution identifier "
             "to interrupt.'}," CIM,
             "'sandbox_id','execution_id'"),
     MCP_IDEMPOTENT, t_interrupt},
    {"command_run_in_session", "Run command in session",
     "Run a command in a bash session that keeps its working directory, variables and shell "
     "state between calls. Without session_id a new session is made (in working_directory); the "
     "result has its session_id, pass it to the next call.",
     MCP_OBJ(SID
             ",'command':{'type':'string','minLength':1,'description':'Shell command.'},"
             "'session_id':{'type':['string','null'],'minLength':1,'default':null,'description':"
             "'A session from an earlier call; omit to start one.'},'working_directory':{'type':"
             "['string','null'],'default':null,'description':'Directory to start the new session "
             "in, or to run this command in.'}," TIMEOUT,
             "'sandbox_id','command'"),
     MCP_DESTRUCTIVE, t_session_run},
    {"code_run", "Run code",
     "Run code in a persistent context, one per sandbox and language, made on first use and kept "
     "between calls (variables and imports stay). Returns the execution: logs.stdout/stderr, "
     "result (values of expressions: text and extra_properties such as image/png), error (name, "
     "value, traceback) and context_id.",
     MCP_OBJ(SID ",'code':{'type':'string','minLength':1,'description':'The code to run.'},"
                 "'language':{'type':'string','enum':['python','javascript','typescript','bash',"
                 "'java','go'],'description':'The language (its context is kept).'},'context_id':{"
                 "'type':['string','null'],'minLength':1,'default':null,'description':'Run in this "
                 "context instead of the language’s default one.'}",
             "'sandbox_id','code','language'"),
     MCP_DESTRUCTIVE, t_code_run},
    {NULL, NULL, NULL, NULL, 0, NULL},
};
