#include "execd/code.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/cmd_util.h"
#include "execd/code_interp.h"
#include "execd/events.h"
#include "execd/errmap.h"
#include "execd/execd.h"

struct run;

/* A code context: one interpreter, one run at a time. */
struct ctx {
    struct osb_execd_code *m;
    struct ctx *next;
    char id[33];
    enum osb_code_lang lang;
    char *cwd;       /* NULL: execd's */
    bool is_default; /* the language's context for runs without an id */
    bool ever_ready;
    struct osb_interp *ip; /* NULL after the interpreter died: the next run starts one */
    bool ready;
    struct osb_http_req *create_req; /* POST /code/context waiting for the driver */
    struct run *run;                 /* running, or waiting for the driver */
    int64_t count;                   /* execution count */
};

struct run {
    struct ctx *ctx;
    struct osb_http_req *req; /* NULL once the client is gone */
    struct osb_sse *sse;      /* the open stream, once started */
    char *code;
    size_t len;
    int64_t t0;
    bool orphaned; /* its client left: interrupted, and again until it ends */
};

static const struct osb_interp_cbs interp_cbs;

/* ---- warm spares ----
 * Interpreter startup (Python ~30 ms, Node ~100 ms, more under load)
 * dominates context creation, so after a language is first used one idle
 * interpreter of it is kept started; the next context without a cwd adopts
 * it at once. EXECD_CODE_SPARES=0 turns this off. */

struct spare {
    struct osb_interp *ip;
    bool ready;
};

/* The module's state (x->code). */
struct osb_execd_code {
    struct osb_execd *x;
    struct ctx *contexts; /* newest first */
    size_t ncontexts;
    struct spare spares[OSB_CODE_NLANGS];
    uv_timer_t orphan_timer; /* see orphan_retry_start */
    bool orphan_timer_on;
};

/* ---- registry ---- */

static struct ctx *ctx_find(struct osb_execd_code *m, const char *id)
{
    for (struct ctx *c = m->contexts; c; c = c->next)
        if (id && strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

static struct ctx *ctx_default(struct osb_execd_code *m, enum osb_code_lang lang)
{
    for (struct ctx *c = m->contexts; c; c = c->next)
        if (c->is_default && c->lang == lang)
            return c;
    return NULL;
}

static void ctx_unlink(struct ctx *c)
{
    for (struct ctx **p = &c->m->contexts; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            c->m->ncontexts--;
            return;
        }
    }
}

static void spare_drop(struct spare *sp)
{
    osb_interp_free(sp->ip);
    sp->ip = NULL;
    sp->ready = false;
}

static void spare_on_ready(struct osb_interp *ip, const struct osb_err *err, void *ud)
{
    (void)ip;
    struct spare *sp = ud;
    if (err)
        spare_drop(sp);
    else
        sp->ready = true;
}

static void spare_on_output(struct osb_interp *ip, int stream, const char *data, size_t len,
                            void *ud)
{
    (void)ip, (void)stream, (void)data, (void)len, (void)ud;
}

static void spare_on_done(struct osb_interp *ip, json_t *reply, void *ud)
{
    (void)ip, (void)reply, (void)ud;
}

static void spare_on_exit(struct osb_interp *ip, int wstatus, void *ud)
{
    (void)ip, (void)wstatus;
    spare_drop(ud);
}

static const struct osb_interp_cbs spare_cbs = {
    .on_ready = spare_on_ready,
    .on_output = spare_on_output,
    .on_done = spare_on_done,
    .on_exit = spare_on_exit,
};

static bool spares_enabled(void)
{
    const char *v = getenv("EXECD_CODE_SPARES");
    return !v || strcmp(v, "0") != 0;
}

static void spare_start(struct osb_execd_code *m, enum osb_code_lang lang)
{
    struct spare *sp = &m->spares[lang];
    struct osb_err err = {0};
    if (sp->ip || !spares_enabled())
        return;
    if (osb_interp_start(m->x, lang, NULL, &spare_cbs, sp, &sp->ip, &err) < 0)
        sp->ip = NULL;
}

/* A ready spare for a context without its own cwd, else NULL. */
static struct osb_interp *spare_take(struct osb_execd_code *m, enum osb_code_lang lang,
                                     const char *cwd)
{
    struct spare *sp = &m->spares[lang];
    if (cwd || !sp->ip || !sp->ready)
        return NULL;
    struct osb_interp *ip = sp->ip;
    sp->ip = NULL;
    sp->ready = false;
    return ip;
}

/* Start (or restart) the context's interpreter, adopting a warm spare when
 * there is one (then the context is ready at once); otherwise readiness
 * comes through on_ready. Either way a new spare is warmed up. */
static int ctx_start(struct ctx *c, struct osb_err *err)
{
    c->ready = false;
    c->ip = spare_take(c->m, c->lang, c->cwd);
    if (c->ip) {
        osb_interp_set_owner(c->ip, &interp_cbs, c);
        c->ready = c->ever_ready = true;
    } else if (osb_interp_start(c->m->x, c->lang, c->cwd, &interp_cbs, c, &c->ip, err) < 0) {
        c->ip = NULL;
        return -1;
    }
    spare_start(c->m, c->lang);
    return 0;
}

static struct ctx *ctx_new(struct osb_execd_code *m, enum osb_code_lang lang, const char *cwd,
                           bool is_default, struct osb_err *err)
{
    if (m->ncontexts >= OSB_MAX_CODE_CONTEXTS) {
        osb_err_set(err, OSB_E_INTERNAL, "too many code contexts (%d); delete some first",
                    OSB_MAX_CODE_CONTEXTS);
        return NULL;
    }
    struct ctx *c = osb_xcalloc(1, sizeof *c);
    c->m = m;
    osb_random_hex(c->id, 16);
    c->lang = lang;
    c->cwd = cwd ? osb_xstrdup(cwd) : NULL;
    c->is_default = is_default;
    if (ctx_start(c, err) < 0) {
        free(c->cwd);
        free(c);
        return NULL;
    }
    c->next = m->contexts;
    m->contexts = c;
    m->ncontexts++;
    return c;
}

/* ---- runs ---- */

static void run_free(struct run *r)
{
    if (r->ctx)
        r->ctx->run = NULL;
    if (r->req && !r->sse)
        osb_http_req_on_close(r->req, NULL, NULL);
    free(r->code);
    free(r);
}

static void send_error(struct osb_sse *sse, const char *ename, const char *evalue,
                       json_t *traceback)
{
    struct osb_execd_event st = {.type = "status", .text = "error"};
    osb_sse_send(sse, &st);
    struct osb_execd_event ev = {
        .type = "error", .ename = ename, .evalue = evalue, .traceback = traceback};
    osb_sse_send(sse, &ev);
}

/* End a run that cannot finish normally: an error event when the stream is
 * open, a 500 when it never started. */
static void run_abort(struct run *r, const char *ename, const char *evalue)
{
    if (r->sse) {
        json_t *tb = json_pack("[s]", evalue);
        send_error(r->sse, ename, evalue, tb);
        json_decref(tb);
        osb_sse_close(r->sse);
    } else if (r->req) {
        osb_http_req_on_close(r->req, NULL, NULL);
        osb_http_respond_error(r->req, 500, "RUNTIME_ERROR", "%s", evalue);
        r->req = NULL;
    }
    run_free(r);
}

/* Runs whose client left are interrupted again every ORPHAN_RETRY_MS until
 * they end: one SIGINT can meet code that is not listening yet (a driver
 * between cells, a C call that resumes), and nobody would ever retry.
 * Repeats are harmless: drivers drop SIGINTs meant for an earlier cell. */
#define ORPHAN_RETRY_MS 2000

static void on_orphan_tick(uv_timer_t *t)
{
    struct osb_execd_code *m = t->data;
    bool any = false;
    for (struct ctx *c = m->contexts; c; c = c->next)
        if (c->run && c->run->orphaned && c->ip) {
            osb_interp_interrupt(c->ip);
            any = true;
        }
    if (!any)
        uv_timer_stop(t);
}

static void orphan_retry_start(struct osb_execd_code *m)
{
    if (!m->orphan_timer_on) {
        uv_timer_init(m->x->loop, &m->orphan_timer);
        m->orphan_timer.data = m;
        uv_unref((uv_handle_t *)&m->orphan_timer);
        m->orphan_timer_on = true;
    }
    if (!uv_is_active((uv_handle_t *)&m->orphan_timer))
        uv_timer_start(&m->orphan_timer, on_orphan_tick, ORPHAN_RETRY_MS, ORPHAN_RETRY_MS);
}

static void on_sse_gone(void *ud)
{
    struct run *r = ud;
    r->sse = NULL;
    r->req = NULL;
    /* Nobody reads the result any more: stop the code (as upstream
     * interrupts the kernel); the context frees up when the driver replies. */
    if (r->ctx && r->ctx->ip) {
        osb_interp_pause_output(r->ctx->ip, false);
        osb_interp_interrupt(r->ctx->ip);
        r->orphaned = true;
        orphan_retry_start(r->ctx->m);
    }
}

static void on_sse_drain(void *ud)
{
    struct run *r = ud;
    if (r->ctx && r->ctx->ip)
        osb_interp_pause_output(r->ctx->ip, false);
}

static void run_begin(struct run *r)
{
    struct ctx *c = r->ctx;
    osb_http_req_on_close(r->req, NULL, NULL);
    r->sse = osb_sse_open(c->m->x->loop, r->req, on_sse_gone, r);
    osb_sse_on_drain(r->sse, on_sse_drain, r);
    struct osb_execd_event init = {.type = "init", .text = c->id};
    osb_sse_send(r->sse, &init);
    struct osb_execd_event cnt = {.type = "execution_count", .execution_count = ++c->count};
    osb_sse_send(r->sse, &cnt);
    r->t0 = osb_mono_ms();
    struct osb_err err = {0};
    int rc = osb_interp_run(c->ip, r->code, r->len, &err);
    free(r->code);
    r->code = NULL;
    if (rc < 0)
        run_abort(r, "ExecutionError", err.msg);
}

static void finish_ok(struct run *r)
{
    int64_t ms = osb_mono_ms() - r->t0;
    struct osb_execd_event ev = {.type = "execution_complete", .execution_time = ms};
    osb_sse_send(r->sse, &ev);
}

/* bash reports an exit status; anything but 0 is an error, as in Jupyter's
 * bash kernel, shaped like /command's (the SDKs read evalue as the code). */
static void finish_status(struct run *r, int status)
{
    if (status == 0) {
        finish_ok(r);
        return;
    }
    char code[16], text[32];
    snprintf(code, sizeof code, "%d", status);
    snprintf(text, sizeof text, "exit status %d", status);
    json_t *tb = json_pack("[s]", text);
    send_error(r->sse, "CommandExecError", code, tb);
    json_decref(tb);
}

static void finish_error(struct run *r, json_t *e)
{
    const char *ename = json_string_value(json_object_get(e, "ename"));
    const char *evalue = json_string_value(json_object_get(e, "evalue"));
    json_t *tb = json_object_get(e, "traceback");
    send_error(r->sse, ename ? ename : "Error", evalue ? evalue : "",
               json_is_array(tb) ? tb : NULL);
}

static void run_finish(struct run *r, json_t *reply)
{
    if (r->sse) {
        json_t *res = json_object_get(reply, "result");
        if (json_is_string(res)) {
            json_t *results = json_pack("{s:O}", "text", res);
            struct osb_execd_event ev = {.type = "result", .results = results};
            osb_sse_send(r->sse, &ev);
            json_decref(results);
        }
        json_t *e = json_object_get(reply, "error"), *st = json_object_get(reply, "status");
        if (json_is_object(e))
            finish_error(r, e);
        else if (json_is_integer(st))
            finish_status(r, (int)json_integer_value(st));
        else
            finish_ok(r);
        osb_sse_close(r->sse);
    }
    run_free(r);
}

/* ---- interpreter callbacks ---- */

static void respond_context(struct osb_http_req *req, struct ctx *c)
{
    json_t *o = json_pack("{s:s,s:s}", "id", c->id, "language", osb_code_lang_name(c->lang));
    if (c->cwd)
        json_object_set_new(o, "cwd", json_string(c->cwd));
    osb_http_respond_json(req, 200, o);
}

static void ctx_destroy(struct ctx *c, const char *why);

static void on_ready(struct osb_interp *ip, const struct osb_err *err, void *ud)
{
    struct ctx *c = ud;
    (void)ip;
    if (err) {
        osb_warn("code: context %s: %s", c->id, err->msg);
        osb_interp_free(c->ip);
        c->ip = NULL;
        if (c->create_req) {
            osb_http_req_on_close(c->create_req, NULL, NULL);
            osb_http_respond_error(c->create_req, 500, "RUNTIME_ERROR", "%s", err->msg);
            c->create_req = NULL;
        }
        if (c->run)
            run_abort(c->run, "ContextExited", err->msg);
        /* A context that never worked is not kept around. */
        if (!c->ever_ready)
            ctx_destroy(c, NULL);
        return;
    }
    c->ready = c->ever_ready = true;
    if (c->create_req) {
        osb_http_req_on_close(c->create_req, NULL, NULL);
        respond_context(c->create_req, c);
        c->create_req = NULL;
    }
    if (c->run && c->run->req)
        run_begin(c->run);
    else if (c->run)
        run_free(c->run);
}

static void on_output(struct osb_interp *ip, int stream, const char *data, size_t len, void *ud)
{
    struct ctx *c = ud;
    struct run *r = c->run;
    if (!r || !r->sse)
        return; /* between runs (a background job, a timer): nobody to tell */
    struct osb_execd_event ev = {
        .type = stream == 1 ? "stdout" : "stderr", .text = data, .text_len = len};
    osb_sse_send(r->sse, &ev);
    if (osb_sse_queued(r->sse) > OSB_WRITE_HIGH_WATER)
        osb_interp_pause_output(ip, true);
}

static void on_done(struct osb_interp *ip, json_t *reply, void *ud)
{
    struct ctx *c = ud;
    (void)ip;
    if (c->run)
        run_finish(c->run, reply);
}

static void on_exit_cb(struct osb_interp *ip, int wstatus, void *ud)
{
    struct ctx *c = ud;
    (void)ip;
    char why[160];
    int code = WIFSIGNALED(wstatus) ? -WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
    osb_info("code: context %s: %s interpreter (pid %d) exited (%d)", c->id,
             osb_code_lang_name(c->lang), (int)osb_interp_pid(ip), code);
    osb_interp_free(c->ip);
    c->ip = NULL;
    c->ready = false;
    if (c->run) {
        snprintf(why, sizeof why,
                 "the %s interpreter exited (%s %d); its state is lost and the next run "
                 "starts a new one",
                 osb_code_lang_name(c->lang), WIFSIGNALED(wstatus) ? "signal" : "status",
                 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
        run_abort(c->run, "ContextExited", why);
    }
}

static const struct osb_interp_cbs interp_cbs = {
    .on_ready = on_ready,
    .on_output = on_output,
    .on_done = on_done,
    .on_exit = on_exit_cb,
};

/* Remove a context: its interpreter is killed; a waiting create gets a 500
 * and a run in progress ends with a ContextDeleted error. */
static void ctx_destroy(struct ctx *c, const char *why)
{
    ctx_unlink(c);
    osb_interp_free(c->ip);
    c->ip = NULL;
    if (c->create_req) {
        osb_http_req_on_close(c->create_req, NULL, NULL);
        osb_http_respond_error(c->create_req, 500, "RUNTIME_ERROR", "%s",
                               why ? why : "context deleted");
        c->create_req = NULL;
    }
    if (c->run)
        run_abort(c->run, "ContextDeleted", why ? why : "context deleted");
    free(c->cwd);
    free(c);
}

/* ---- request parsing ---- */

static bool no_context_language(const char *lang)
{
    return strcmp(lang, "command") == 0 || strcmp(lang, "background-command") == 0 ||
           strcmp(lang, "sql") == 0;
}

/* A context language, or -1 after answering 400. */
static int parse_lang(struct osb_http_req *req, const char *lang)
{
    int l = osb_code_lang_parse(lang);
    if (l >= 0)
        return l;
    osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                           "unsupported language '%s' for a code context (supported: python, "
                           "javascript, typescript, java, bash, go)",
                           lang);
    return -1;
}

static json_t *parse_body(struct osb_http_req *req, bool allow_empty)
{
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    json_t *j;
    struct osb_err err = {0};
    if (osb_json_parse_object(body, len, allow_empty, &j, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "error parsing request, MAYBE invalid body format. %s", err.msg);
        return NULL;
    }
    return j;
}

static int check_cwd(struct osb_http_req *req, const char *cwd)
{
    struct stat st;
    if (stat(cwd, &st) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "cwd '%s': %s", cwd,
                               strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return 0;
    osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "cwd '%s' is not a directory", cwd);
    return -1;
}

/* An interpreter that could not be started: a missing program is the
 * caller's to fix (400 INTERPRETER_NOT_FOUND), anything else is ours. */
static void respond_start_error(struct osb_http_req *req, const struct osb_err *err,
                                const char *prefix)
{
    struct osb_execd_errinfo e = osb_execd_err_info(err);
    if (e.status == 400)
        osb_http_respond_error(req, 400, "INTERPRETER_NOT_FOUND", "%s", err->msg);
    else
        osb_http_respond_error(req, e.status, e.code, "%s%s", prefix, err->msg);
}

/* ---- handlers ---- */

static void on_create_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct ctx *c = ud;
    c->create_req = NULL;
}

/* POST /code/context {"language", "cwd"?} */
static void h_create(struct osb_http_req *req, void *ud)
{
    struct osb_execd_code *m = ud;
    json_t *j = parse_body(req, true);
    if (!j)
        return;
    const char *lang = NULL, *cwd = NULL;
    struct osb_err err = {0};
    int lg = -1;
    if (osb_json_name(j, "language", false, &lang, &err) < 0 ||
        osb_json_name(j, "cwd", false, &cwd, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", err.msg);
    } else if ((lg = parse_lang(req, lang && *lang ? lang : "python")) >= 0 &&
               (!cwd || !*cwd || check_cwd(req, cwd) == 0)) {
        struct ctx *c = ctx_new(m, (enum osb_code_lang)lg, cwd && *cwd ? cwd : NULL, false, &err);
        if (!c) {
            respond_start_error(req, &err, "");
        } else if (c->ready) {
            respond_context(req, c);
        } else {
            c->create_req = req;
            osb_http_req_on_close(req, on_create_gone, c);
        }
    }
    json_decref(j);
}

static json_t *context_json(const struct ctx *c)
{
    return json_pack("{s:s,s:s}", "id", c->id, "language", osb_code_lang_name(c->lang));
}

/* GET /code/contexts[?language=] */
static void h_list(struct osb_http_req *req, void *ud)
{
    struct osb_execd_code *m = ud;
    const char *lang = osb_http_req_query(req, "language");
    if (lang && *lang && no_context_language(lang)) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "language '%s' has no code contexts",
                               lang);
        return;
    }
    json_t *a = json_array();
    /* The list is newest first; answer in creation order. */
    for (struct ctx *c = m->contexts; c; c = c->next)
        if (!lang || !*lang || strcmp(lang, osb_code_lang_name(c->lang)) == 0)
            json_array_insert_new(a, 0, context_json(c));
    osb_http_respond_json(req, 200, a);
}

/* DELETE /code/contexts?language= */
static void h_delete_lang(struct osb_http_req *req, void *ud)
{
    struct osb_execd_code *m = ud;
    const char *lang = osb_http_req_query(req, "language");
    if (!lang || !*lang) {
        osb_http_respond_error(req, 400, "MISSING_QUERY", "missing query parameter 'language'");
        return;
    }
    struct ctx *c = m->contexts;
    while (c) {
        struct ctx *next = c->next;
        if (strcmp(lang, osb_code_lang_name(c->lang)) == 0)
            ctx_destroy(c, "context deleted");
        c = next;
    }
    osb_http_respond_empty(req, 200);
}

static struct ctx *ctx_or_404(struct osb_http_req *req, struct osb_execd_code *m)
{
    const char *id = osb_http_req_param(req, "id");
    struct ctx *c = ctx_find(m, id);
    if (!c)
        osb_http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "context %s not found", id);
    return c;
}

/* GET /code/contexts/{id} */
static void h_get(struct osb_http_req *req, void *ud)
{
    struct ctx *c = ctx_or_404(req, ud);
    if (c)
        osb_http_respond_json(req, 200, context_json(c));
}

/* DELETE /code/contexts/{id} */
static void h_delete(struct osb_http_req *req, void *ud)
{
    struct ctx *c = ctx_or_404(req, ud);
    if (!c)
        return;
    ctx_destroy(c, "context deleted");
    osb_http_respond_empty(req, 200);
}

int osb_execd_code_interrupt(struct osb_execd *x, const char *id)
{
    struct ctx *c = ctx_find(x->code, id);
    if (!c)
        return -1;
    if (c->ip && c->ready && c->run && c->run->sse)
        osb_interp_interrupt(c->ip);
    return 0;
}

static void on_pending_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct run *r = ud;
    r->req = NULL;
}

/* The context for a run: by id, or the language's default (created on
 * demand). NULL after answering. */
static struct ctx *run_context(struct osb_execd_code *m, struct osb_http_req *req, const char *id,
                               const char *lang)
{
    struct osb_err err = {0};
    if (id && *id) {
        struct ctx *c = ctx_find(m, id);
        if (!c)
            osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                                   "error running codes context %s not found", id);
        else if (lang && *lang && strcmp(lang, osb_code_lang_name(c->lang)) != 0)
            osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                                   "context %s is a %s context, not %s", id,
                                   osb_code_lang_name(c->lang), lang);
        else
            return c;
        return NULL;
    }
    int lg = parse_lang(req, lang);
    if (lg < 0)
        return NULL;
    struct ctx *c = ctx_default(m, (enum osb_code_lang)lg);
    if (!c && !(c = ctx_new(m, (enum osb_code_lang)lg, NULL, true, &err)))
        respond_start_error(req, &err, "error running codes ");
    return c;
}

static void run_start(struct osb_http_req *req, struct ctx *c, const char *code, size_t len)
{
    struct osb_err err = {0};
    if (c->run) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error running codes session is busy");
        return;
    }
    if (!c->ip && ctx_start(c, &err) < 0) {
        respond_start_error(req, &err, "error running codes ");
        return;
    }
    struct run *r = osb_xcalloc(1, sizeof *r);
    r->ctx = c;
    r->req = req;
    r->code = osb_xstrndup(code, len);
    r->len = len;
    c->run = r;
    if (c->ready) {
        run_begin(r);
        return;
    }
    osb_http_req_on_close(req, on_pending_gone, r);
}

/* POST /code {"code", "context"?: {"id"?, "language"?}} */
static void h_run(struct osb_http_req *req, void *ud)
{
    struct osb_execd_code *m = ud;
    json_t *j = parse_body(req, false);
    if (!j)
        return;
    struct osb_err err = {0};
    const char *code = NULL, *id = NULL, *lang = NULL;
    json_t *cx = json_object_get(j, "context");
    if (osb_json_str(j, "code", true, &code, &err) < 0 ||
        (cx && !json_is_null(cx) && !json_is_object(cx) &&
         osb_err_set(&err, OSB_E_INVALID, "field 'context' must be an object") < 0) ||
        osb_json_name(cx, "id", false, &id, &err) < 0 ||
        osb_json_name(cx, "language", false, &lang, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", err.msg);
    } else if (!*code) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "field 'code' must not be empty");
    } else if ((!id || !*id) && (!lang || !*lang || strcmp(lang, "command") == 0)) {
        osb_code_command_run(m->x, req, code, json_string_length(json_object_get(j, "code")));
    } else {
        struct ctx *c = run_context(m, req, id, lang);
        if (c)
            run_start(req, c, code, json_string_length(json_object_get(j, "code")));
    }
    json_decref(j);
}

void osb_execd_code_routes(struct osb_execd *x)
{
    struct osb_execd_code *m = osb_xcalloc(1, sizeof *m);
    m->x = x;
    x->code = m;
    /* DELETE /code is interrupt.c's. */
    const struct osb_http_route routes[] = {
        {"POST", "/code/context", h_create, 0, m},
        {"GET", "/code/contexts", h_list, 0, m},
        {"DELETE", "/code/contexts", h_delete_lang, 0, m},
        {"GET", "/code/contexts/:id", h_get, 0, m},
        {"DELETE", "/code/contexts/:id", h_delete, 0, m},
        {"POST", "/code", h_run, 0, m},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
