#include "execd/command.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/cmd_out.h"
#include "execd/cmd_util.h"
#include "execd/events.h"
#include "execd/errmap.h"
#include "execd/execd.h"
#include "execd/spawn.h"

/* Pipe buffer for a foreground command's stdout/stderr: fewer wakeups when
 * a command writes fast (best effort; capped by /proc/sys/fs/pipe-max-size). */
#define PIPE_SIZE (1024 * 1024)
/* Logs up to this size are answered in one buffered response. */
#define LOGS_INLINE_MAX (1024 * 1024)
#define LOGS_CHUNK (256 * 1024)

struct fg_run;

/* What /command/status reports; lives until evicted. */
struct cmd_rec {
    struct osb_execd_commands *m;
    struct cmd_rec *prev, *next;
    char id[33];
    char *content;
    bool background, running, has_exit;
    int exit_code;
    int wstatus;
    char *error;
    struct timespec started, finished;
    int64_t start_mono;
    pid_t pid; /* process (and group) id while running, else 0 */
    char *log_path;
    struct fg_run *run;
    uv_timer_t *timeout;
};

/* A foreground command's open stream. */
struct fg_run {
    struct cmd_rec *rec;
    struct osb_sse *sse; /* NULL once the client is gone */
    struct osb_cmd_out *out;
    bool starting, ending, gone;
};

/* The module's state (x->commands): the records, oldest first. */
struct osb_execd_commands {
    struct osb_execd *x;
    struct cmd_rec *head, *tail;
    size_t count;
};

/* The validated request. */
struct cmd_req {
    const char *command;
    const char *cwd;
    bool background;
    int64_t timeout;
    bool has_uid, has_gid;
    uint32_t uid, gid;
    json_t *envs;
};

/* ---- records ---- */

static struct cmd_rec *rec_find(struct osb_execd_commands *m, const char *id)
{
    for (struct cmd_rec *r = m->tail; r; r = r->prev)
        if (strcmp(r->id, id) == 0)
            return r;
    return NULL;
}

static void timer_free(uv_handle_t *h)
{
    free(h);
}

static void rec_free(struct cmd_rec *r)
{
    struct osb_execd_commands *m = r->m;
    if (r->prev)
        r->prev->next = r->next;
    else
        m->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        m->tail = r->prev;
    m->count--;
    if (r->log_path)
        unlink(r->log_path);
    free(r->log_path);
    free(r->content);
    free(r->error);
    free(r);
}

/* Drop the oldest finished records beyond the cap (running ones stay, and so
 * does the newest: rec_new's caller is about to start it). */
static void rec_evict(struct osb_execd_commands *m)
{
    struct cmd_rec *r = m->head;
    while (m->count > OSB_MAX_COMMAND_RECORDS && r && r != m->tail) {
        struct cmd_rec *next = r->next;
        if (!r->running && !r->run)
            rec_free(r);
        r = next;
    }
}

static struct cmd_rec *rec_new(struct osb_execd_commands *m, const struct cmd_req *q)
{
    struct cmd_rec *r = osb_xcalloc(1, sizeof *r);
    r->m = m;
    osb_random_hex(r->id, 16);
    r->content = osb_xstrdup(q->command);
    r->background = q->background;
    clock_gettime(CLOCK_REALTIME, &r->started);
    r->start_mono = osb_mono_ms();
    r->prev = m->tail;
    if (m->tail)
        m->tail->next = r;
    else
        m->head = r;
    m->tail = r;
    m->count++;
    rec_evict(m);
    return r;
}

static void rec_stop_timer(struct cmd_rec *r)
{
    if (!r->timeout)
        return;
    uv_timer_stop(r->timeout);
    uv_close((uv_handle_t *)r->timeout, timer_free);
    r->timeout = NULL;
}

/* The command is over (exit status, or it never started: msg). */
static void rec_finish(struct cmd_rec *r, int code, const char *msg)
{
    r->running = false;
    r->has_exit = true;
    r->exit_code = code;
    free(r->error);
    r->error = msg ? osb_xstrdup(msg) : NULL;
    clock_gettime(CLOCK_REALTIME, &r->finished);
    r->pid = 0;
    rec_stop_timer(r);
}

static void on_timeout(uv_timer_t *t)
{
    struct cmd_rec *r = t->data;
    if (r->running && r->pid > 0) {
        osb_info("command %s: timeout, killing process group %d", r->id, (int)r->pid);
        kill(-r->pid, SIGKILL);
    }
}

static void rec_start_timer(struct cmd_rec *r, int64_t ms)
{
    if (ms <= 0)
        return;
    r->timeout = osb_xmalloc(sizeof *r->timeout);
    uv_timer_init(r->m->x->loop, r->timeout);
    r->timeout->data = r;
    uv_timer_start(r->timeout, on_timeout, (uint64_t)ms, 0);
}

/* ---- request parsing ---- */

static int get_u32(json_t *body, const char *key, bool *has, uint32_t *out, struct osb_err *err)
{
    int64_t v;
    int r = osb_json_int(body, key, false, &v, err);
    if (r <= 0)
        return r;
    if (v < 0 || v > UINT32_MAX)
        return osb_err_set(err, OSB_E_INVALID, "field '%s' must be between 0 and 4294967295", key);
    *has = true;
    *out = (uint32_t)v;
    return 0;
}

static int parse_req(json_t *body, struct cmd_req *q, struct osb_err *err)
{
    if (osb_json_str(body, "command", true, &q->command, err) < 0 ||
        osb_json_name(body, "cwd", false, &q->cwd, err) < 0 ||
        osb_json_bool(body, "background", false, &q->background, err) < 0 ||
        osb_json_int(body, "timeout", false, &q->timeout, err) < 0 ||
        get_u32(body, "uid", &q->has_uid, &q->uid, err) < 0 ||
        get_u32(body, "gid", &q->has_gid, &q->gid, err) < 0 ||
        osb_json_strmap(body, "envs", &q->envs, err) < 0)
        return -1;
    if (!*q->command)
        return osb_err_set(err, OSB_E_INVALID, "field 'command' must not be empty");
    if (q->timeout < 0)
        return osb_err_set(err, OSB_E_INVALID, "field 'timeout' must not be negative");
    if (q->has_gid && !q->has_uid)
        return osb_err_set(err, OSB_E_INVALID, "uid is required when gid is provided");
    return 0;
}

/* ---- spawning ---- */

struct launch {
    char **env;
    char *cwd; /* expanded, or NULL */
};

static void launch_free(struct launch *l)
{
    osb_execd_env_free(l->env);
    free(l->cwd);
}

/* Environment and working directory; a bad cwd is the caller's error. */
static int launch_prepare(const struct osb_execd *x, const struct cmd_req *q, struct launch *l,
                          struct osb_err *err)
{
    l->env = osb_execd_env_build(x, q->envs);
    if (!q->cwd || !*q->cwd)
        return 0;
    if (osb_cmd_expand_path(q->cwd, l->env, &l->cwd, err) < 0)
        return -1;
    return osb_cmd_check_dir(l->cwd, q->cwd, err);
}

static pid_t launch(struct osb_execd *x, const struct cmd_req *q, const struct launch *l,
                    int out_fd, int err_fd, struct osb_err *err)
{
    const char *argv[] = {osb_cmd_shell(), "-c", q->command, NULL};
    struct osb_spawn sp = {
        .argv = argv,
        .envp = (const char *const *)l->env,
        .cwd = l->cwd,
        .stdin_fd = -1,
        .stdout_fd = out_fd,
        .stderr_fd = err_fd,
        .ctty_fd = -1,
    };
    /* Asking for the identity execd already has needs no switch (which
     * would fail without CAP_SETGID in a capability-dropped sandbox). */
    if (q->has_uid && !(q->uid == getuid() && (!q->has_gid || q->gid == getgid()))) {
        sp.set_ids = true;
        sp.uid = q->uid;
        sp.gid = q->has_gid ? q->gid : osb_cmd_primary_gid(q->uid);
    }
    return osb_execd_spawn(x, &sp, err);
}

static void fg_exited(struct cmd_rec *r);

static void on_exit_status(pid_t pid, int wstatus, void *ud)
{
    (void)pid;
    struct cmd_rec *r = ud;
    char text[128];
    osb_cmd_exit_text(wstatus, text, sizeof text);
    int code = osb_cmd_exit_code(wstatus);
    rec_finish(r, code, code == 0 ? NULL : text);
    r->wstatus = wstatus;
    osb_debug("command %s: %s", r->id, text);
    fg_exited(r);
}

/* ---- foreground ---- */

static void send_init(struct osb_sse *sse, const char *id)
{
    struct osb_execd_event ev = {.type = "init", .text = id};
    osb_sse_send(sse, &ev);
}

static void send_error(struct osb_sse *sse, const char *evalue, const char *traceback)
{
    json_t *tb = json_pack("[s]", traceback);
    struct osb_execd_event ev = {
        .type = "error", .ename = "CommandExecError", .evalue = evalue, .traceback = tb};
    osb_sse_send(sse, &ev);
    json_decref(tb);
}

static void send_terminal(struct osb_sse *sse, const struct cmd_rec *r)
{
    if (r->exit_code == 0) {
        struct osb_execd_event ev = {.type = "execution_complete",
                                     .execution_time = osb_mono_ms() - r->start_mono};
        osb_sse_send(sse, &ev);
        return;
    }
    char code[16];
    snprintf(code, sizeof code, "%d", r->exit_code);
    send_error(sse, code, r->error ? r->error : "");
}

static void run_free(struct fg_run *run)
{
    if (run->rec)
        run->rec->run = NULL;
    osb_cmd_out_free(run->out);
    free(run);
}

/* All output is on the socket: the terminal event, then end the stream. */
static void fg_done(void *ud)
{
    struct fg_run *run = ud;
    run->ending = true; /* a disconnect while sending only clears run->sse */
    osb_cmd_out_set_sse(run->out, NULL);
    send_terminal(run->sse, run->rec);
    if (run->sse)
        osb_sse_close(run->sse);
    run_free(run);
}

/* The process exited: finish the output (the terminal event follows). */
static void fg_exited(struct cmd_rec *r)
{
    if (r->run)
        osb_cmd_out_finish(r->run->out, OSB_CMD_EOF_WAIT_MS, fg_done, r->run);
}

/* The client went away: nobody can see the results, so stop the command
 * (as upstream's request-context cancel does) but keep its record. */
static void fg_abort(struct fg_run *run)
{
    struct cmd_rec *r = run->rec;
    if (r->running && r->pid > 0) {
        osb_info("command %s: client disconnected, killing process group %d", r->id, (int)r->pid);
        kill(-r->pid, SIGKILL);
    }
    run_free(run);
}

/* on_gone of the stream; while the run is being set up or ended, only noted
 * (the stream is freed after this returns either way). */
static void fg_gone(void *ud)
{
    struct fg_run *run = ud;
    run->sse = NULL;
    run->gone = true;
    if (!run->ending && !run->starting)
        fg_abort(run);
}

static int make_pipe(int p[2], struct osb_err *err)
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    fcntl(p[0], F_SETPIPE_SZ, PIPE_SIZE);
    return 0;
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    p[0] = p[1] = -1;
}

static void note_gone(void *ud)
{
    *(bool *)ud = true;
}

/* Spawn failed after validation: the stream still starts (init), then the
 * error, as upstream does. */
static void fail_stream(struct osb_http_req *req, struct cmd_rec *r, const char *msg)
{
    rec_finish(r, 255, msg);
    bool gone = false;
    struct osb_sse *sse = osb_sse_open(r->m->x->loop, req, note_gone, &gone);
    send_init(sse, r->id);
    send_error(sse, msg, msg);
    if (!gone) /* a stream whose client vanished is already freed */
        osb_sse_close(sse);
}

/* The command runs: watch its exit and arm its timeout. */
static void rec_running(struct cmd_rec *r, pid_t pid, int64_t timeout_ms)
{
    r->pid = pid;
    r->running = true;
    osb_execd_watch_child(r->m->x, pid, on_exit_status, r);
    rec_start_timer(r, timeout_ms);
}

static void run_foreground(struct osb_execd_commands *m, struct osb_http_req *req,
                           const struct cmd_req *q, const struct launch *l)
{
    struct osb_err err = {0};
    int out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (make_pipe(out, &err) < 0 || make_pipe(errp, &err) < 0) {
        close_pair(out);
        close_pair(errp);
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error running commands %s", err.msg);
        return;
    }
    struct cmd_rec *r = rec_new(m, q);
    pid_t pid = launch(m->x, q, l, out[1], errp[1], &err);
    close(out[1]);
    close(errp[1]);
    if (pid < 0) {
        close(out[0]);
        close(errp[0]);
        fail_stream(req, r, err.msg);
        return;
    }
    rec_running(r, pid, q->timeout);

    struct fg_run *run = osb_xcalloc(1, sizeof *run);
    run->rec = r;
    r->run = run;
    run->out = osb_cmd_out_new(m->x->loop);
    run->starting = true;
    struct osb_sse *sse = osb_sse_open(m->x->loop, req, fg_gone, run);
    if (!run->gone)
        run->sse = sse;
    osb_cmd_out_set_sse(run->out, run->sse);
    /* Each add takes its fd, even when it fails. */
    if (osb_cmd_out_add(run->out, out[0], "stdout", &err) < 0)
        osb_warn("command %s: %s", r->id, err.msg);
    if (osb_cmd_out_add(run->out, errp[0], "stderr", &err) < 0)
        osb_warn("command %s: %s", r->id, err.msg);
    send_init(run->sse, r->id);
    run->starting = false;
    if (run->gone)
        fg_abort(run);
}

/* ---- background ---- */

static int open_log(struct cmd_rec *r, struct osb_err *err)
{
    const char *dir = osb_cmd_tmpdir(r->m->x, err);
    if (!dir)
        return -1;
    r->log_path = osb_xasprintf("%s/%s.log", dir, r->id);
    int fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return osb_err_sys(err, "create log file %s", r->log_path);
    return fd;
}

static void run_background(struct osb_execd_commands *m, struct osb_http_req *req,
                           const struct cmd_req *q, const struct launch *l)
{
    struct osb_err err = {0};
    struct cmd_rec *r = rec_new(m, q);
    int fd = open_log(r, &err);
    if (fd < 0) {
        rec_free(r);
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error running commands %s", err.msg);
        return;
    }
    pid_t pid = launch(m->x, q, l, fd, fd, &err);
    close(fd);
    if (pid < 0) {
        fail_stream(req, r, err.msg);
        return;
    }
    rec_running(r, pid, q->timeout);
    bool gone = false;
    struct osb_sse *sse = osb_sse_open(r->m->x->loop, req, note_gone, &gone);
    send_init(sse, r->id);
    struct osb_execd_event ev = {.type = "execution_complete",
                                 .execution_time = osb_mono_ms() - r->start_mono};
    osb_sse_send(sse, &ev);
    if (!gone)
        osb_sse_close(sse);
}

/* ---- handlers ---- */

static void h_run(struct osb_http_req *req, void *ud)
{
    struct osb_execd_commands *m = ud;
    struct osb_err err = {0};
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    json_t *j = NULL;
    if (osb_json_parse_object(body, len, false, &j, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "error parsing request, MAYBE invalid body format. %s", err.msg);
        return;
    }
    struct cmd_req q = {0};
    struct launch l = {0};
    if (parse_req(j, &q, &err) < 0 || launch_prepare(m->x, &q, &l, &err) < 0) {
        struct osb_execd_errinfo e = osb_execd_err_info(&err);
        osb_http_respond_error(req, e.status, e.code, "invalid request, validation error %s",
                               err.msg);
    } else if (q.background) {
        run_background(m, req, &q, &l);
    } else {
        run_foreground(m, req, &q, &l);
    }
    launch_free(&l);
    json_decref(j);
}

static void h_status(struct osb_http_req *req, void *ud)
{
    struct osb_execd_commands *m = ud;
    const char *id = osb_http_req_param(req, "id");
    struct cmd_rec *r = id ? rec_find(m, id) : NULL;
    if (!r) {
        osb_http_respond_error(req, 404, "INVALID_REQUEST_BODY", "command not found: %s",
                               id ? id : "");
        return;
    }
    char ts[48];
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(r->id));
    if (r->content && *r->content)
        json_object_set_new(o, "content", json_string(r->content));
    json_object_set_new(o, "running", json_boolean(r->running));
    if (r->has_exit)
        json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    if (r->error && *r->error)
        json_object_set_new(o, "error", json_string(r->error));
    osb_time_rfc3339(&r->started, ts, sizeof ts);
    json_object_set_new(o, "started_at", json_string(ts));
    if (r->has_exit) {
        osb_time_rfc3339(&r->finished, ts, sizeof ts);
        json_object_set_new(o, "finished_at", json_string(ts));
    }
    osb_http_respond_json(req, 200, o);
}

/* ---- logs ---- */

struct logs_send {
    struct osb_http_req *req;
    int fd;
    off_t off, end;
    char *buf;
};

static void logs_free(struct logs_send *ls)
{
    close(ls->fd);
    free(ls->buf);
    free(ls);
}

static void logs_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    logs_free(ud);
}

static void logs_pump(struct osb_http_req *req, void *ud)
{
    struct logs_send *ls = ud;
    while (ls->off < ls->end) {
        size_t want =
            (size_t)(ls->end - ls->off) < LOGS_CHUNK ? (size_t)(ls->end - ls->off) : LOGS_CHUNK;
        ssize_t n = OSB_RETRY(pread(ls->fd, ls->buf, want, ls->off));
        if (n <= 0) {
            /* The file shrank or failed: pad so the Content-Length holds. */
            n = (ssize_t)want;
            memset(ls->buf, 0, want);
        }
        ls->off += n;
        if (osb_http_write(req, ls->buf, (size_t)n) > OSB_WRITE_HIGH_WATER && ls->off < ls->end)
            return; /* on_drain calls back */
    }
    osb_http_req_on_close(req, NULL, NULL);
    osb_http_req_on_drain(req, NULL, NULL);
    osb_http_end(req);
    logs_free(ls);
}

static void send_log(struct osb_http_req *req, int fd, off_t cursor, off_t end)
{
    static const char ctype[] = "text/plain; charset=utf-8";
    char cur[32];
    snprintf(cur, sizeof cur, "%lld", (long long)end);
    osb_http_add_header(req, "EXECD-COMMANDS-TAIL-CURSOR", cur);
    size_t len = (size_t)(end - cursor);
    if (len <= LOGS_INLINE_MAX) {
        _cleanup_free_ char *buf = osb_xmalloc(len + 1);
        ssize_t n = len ? OSB_RETRY(pread(fd, buf, len, cursor)) : 0;
        close(fd);
        osb_http_respond(req, 200, ctype, buf, n > 0 ? (size_t)n : 0);
        return;
    }
    struct logs_send *ls = osb_xcalloc(1, sizeof *ls);
    *ls = (struct logs_send){req, fd, cursor, end, osb_xmalloc(LOGS_CHUNK)};
    osb_http_req_on_close(req, logs_gone, ls);
    osb_http_req_on_drain(req, logs_pump, ls);
    osb_http_start(req, 200, ctype, (int64_t)len);
    logs_pump(req, ls);
}

static int64_t parse_cursor(const char *s)
{
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return *end || errno ? 0 : v; /* unparsable means 0, like upstream */
}

static void h_logs(struct osb_http_req *req, void *ud)
{
    struct osb_execd_commands *m = ud;
    const char *id = osb_http_req_param(req, "id");
    struct cmd_rec *r = id ? rec_find(m, id) : NULL;
    int64_t cursor = parse_cursor(osb_http_req_query(req, "cursor"));
    if (!r) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "command not found: %s",
                               id ? id : "");
        return;
    }
    if (!r->background || !r->log_path) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "command %s is not running in background", r->id);
        return;
    }
    if (cursor < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "cursor cannot be negative");
        return;
    }
    int fd = open(r->log_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "error open combined output file for command %s: %s", r->id,
                               strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    send_log(req, fd, cursor > st.st_size ? st.st_size : cursor, st.st_size);
}

/* ---- interrupt ---- */

struct interrupt {
    struct osb_http_req *req;
    pid_t pgid;
    int64_t deadline;
    uv_timer_t timer;
};

static void intr_free(uv_handle_t *h)
{
    free(h->data);
}

static void intr_end(struct interrupt *in)
{
    if (in->req) {
        osb_http_req_on_close(in->req, NULL, NULL);
        osb_http_respond_empty(in->req, 200);
    }
    uv_timer_stop(&in->timer);
    uv_close((uv_handle_t *)&in->timer, intr_free);
}

static void intr_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct interrupt *in = ud;
    in->req = NULL;
    /* Keep polling: the SIGKILL escalation must still happen. */
}

static void intr_poll(uv_timer_t *t)
{
    struct interrupt *in = t->data;
    if (kill(-in->pgid, 0) < 0 && errno == ESRCH) {
        intr_end(in);
        return;
    }
    if (osb_mono_ms() < in->deadline)
        return;
    osb_warn("interrupt: process group %d did not exit after SIGTERM; SIGKILL", (int)in->pgid);
    kill(-in->pgid, SIGKILL);
    intr_end(in);
}

static void interrupt_command(struct osb_execd *x, struct osb_http_req *req, struct cmd_rec *r)
{
    if (!r->running || r->pid <= 0) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                               "error interrupting command. command %s is not running", r->id);
        return;
    }
    if (kill(-r->pid, SIGTERM) < 0) {
        osb_http_respond_empty(req, 200);
        return;
    }
    struct interrupt *in = osb_xcalloc(1, sizeof *in);
    in->req = req;
    in->pgid = r->pid;
    in->deadline = osb_mono_ms() + OSB_CMD_INTERRUPT_GRACE_MS;
    uv_timer_init(x->loop, &in->timer);
    in->timer.data = in;
    uv_timer_start(&in->timer, intr_poll, 20, 50);
    osb_http_req_on_close(req, intr_gone, in);
}

int osb_execd_command_interrupt(struct osb_execd *x, struct osb_http_req *req, const char *id)
{
    struct cmd_rec *r = rec_find(x->commands, id);
    if (!r)
        return -1;
    interrupt_command(x, req, r);
    return 0;
}

void osb_execd_command_routes(struct osb_execd *x)
{
    struct osb_execd_commands *m = osb_xcalloc(1, sizeof *m);
    m->x = x;
    x->commands = m;
    /* DELETE /command is interrupt.c's (it reaches sessions and code too). */
    const struct osb_http_route routes[] = {
        {"POST", "/command", h_run, 0, m},
        {"GET", "/command/status/:id", h_status, 0, m},
        {"GET", "/command/:id/logs", h_logs, 0, m},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
