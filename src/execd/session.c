#include "execd/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/cmd_out.h"
#include "execd/cmd_util.h"
#include "execd/command.h"
#include "execd/events.h"
#include "execd/errmap.h"
#include "execd/execd.h"
#include "execd/spawn.h"

/* After a timeout (or a vanished client) the run's processes are killed;
 * if the shell has not printed its marker by then, it is stuck in a builtin
 * (a `while :; do :; done`) and is killed and restarted. */
#define RECOVER_GRACE_MS 500
/* Upstream caps a run without a timeout at 24 h. */
#define DEFAULT_TIMEOUT_MS (24LL * 3600 * 1000)
/* Commands longer than this go through a file: bash reads a pipe one byte
 * per read(2), about 2 MB/s. */
#define INLINE_COMMAND_MAX (64 * 1024)
/* A marker record is "<32 hex> <rc> <cwd>\0". */
#define CTL_MAX (PATH_MAX + 64)

struct sess;
struct run;

/* One bash process and its three pipes. Lives until the process exited and
 * no run uses it any more. */
struct shell {
    struct osb_execd *x;
    struct sess *sess; /* NULL once detached (session deleted or shell replaced) */
    struct run *run;   /* the run using it */
    pid_t pid;
    bool exited;
    int wstatus;
    uv_pipe_t in;  /* the shell's stdin: commands */
    uv_pipe_t ctl; /* fd 3: markers */
    bool in_open, ctl_open;
    char ctlread[4096];
    struct osb_buf ctlbuf;
    struct osb_cmd_out *out;
    int handles;
    bool released;
};

struct sess {
    struct osb_execd_sessions *m;
    struct sess *prev, *next;
    char id[37];
    char *cwd; /* where a (re)started shell begins: the last known cwd */
    struct shell *sh;
    struct run *run;
    bool deleted;
};

struct run {
    struct sess *sess;
    struct shell *sh;
    struct osb_sse *sse; /* NULL once the client is gone */
    char marker[33];
    char *script_path; /* command file for long commands */
    pid_t *kids0;      /* the shell's children when the run started */
    size_t nkids0;
    int64_t start_mono, timeout_ms;
    uv_timer_t timeout, grace;
    int handles;
    bool timed_out, ending, by_marker, gone;
    int rc;      /* marker exit code */
    int wstatus; /* shell exit status when !by_marker */
};

/* The module's state (x->sessions). */
struct osb_execd_sessions {
    struct osb_execd *x;
    struct sess *head;
    size_t count;
};

static struct sess *sess_find(struct osb_execd_sessions *m, const char *id)
{
    if (!id)
        return NULL;
    for (struct sess *s = m->head; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static void sess_unlink(struct sess *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        s->m->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->m->count--;
}

static void sess_free(struct sess *s)
{
    if (s->sh)
        s->sh->sess = NULL;
    free(s->cwd);
    free(s);
}

/* ---- processes (from /proc) ---- */

struct proc_ent {
    pid_t pid, ppid;
};

/* Every process with its parent; *out is allocated. */
static size_t proc_table(struct proc_ent **out)
{
    size_t n = 0, cap = 64;
    struct proc_ent *t = osb_xmalloc(cap * sizeof *t);
    _cleanup_closedir_ DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end, path[64], buf[512];
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t r = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (r <= 0)
            continue;
        buf[r] = '\0';
        char *p = strrchr(buf, ')'); /* comm may contain spaces and ')' */
        if (!p || strlen(p) < 4)
            continue;
        if (n == cap)
            t = osb_xrealloc(t, (cap *= 2) * sizeof *t);
        t[n++] = (struct proc_ent){(pid_t)pid, (pid_t)strtol(p + 4, NULL, 10)};
    }
    *out = t;
    return n;
}

/* Children from /proc/<pid>/task/<pid>/children (one read); NULL if the
 * kernel lacks CONFIG_PROC_CHILDREN. */
static pid_t *children_file(pid_t parent, size_t *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    size_t cap = 16;
    pid_t *kids = osb_xmalloc(cap * sizeof *kids);
    long pid;
    *n = 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        if (*n == cap)
            kids = osb_xrealloc(kids, (cap *= 2) * sizeof *kids);
        kids[(*n)++] = (pid_t)pid;
    }
    return kids;
}

static size_t children_of(pid_t parent, pid_t **out)
{
    size_t k = 0;
    if ((*out = children_file(parent, &k)))
        return k;
    struct proc_ent *t;
    size_t n = proc_table(&t);
    pid_t *kids = osb_xmalloc((n + 1) * sizeof *kids);
    for (size_t i = 0; i < n; i++)
        if (t[i].ppid == parent)
            kids[k++] = t[i].pid;
    free(t);
    *out = kids;
    return k;
}

static bool pid_in(pid_t p, const pid_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == p)
            return true;
    return false;
}

/* SIGKILL the descendants of `shell` except the subtrees of `old` children
 * (background jobs of earlier runs). The tree is collected first: a killed
 * parent's children would be reparented out of sight. */
static void kill_new_descendants(pid_t shell, const pid_t *old, size_t nold)
{
    size_t n = 0, cap = 16;
    pid_t *tree = osb_xmalloc(cap * sizeof *tree);
    tree[n++] = shell;
    for (size_t i = 0; i < n; i++) {
        pid_t *kids;
        size_t nk = children_of(tree[i], &kids);
        for (size_t k = 0; k < nk; k++) {
            if ((i == 0 && pid_in(kids[k], old, nold)) || pid_in(kids[k], tree, n))
                continue;
            if (n == cap)
                tree = osb_xrealloc(tree, (cap *= 2) * sizeof *tree);
            tree[n++] = kids[k];
        }
        free(kids);
    }
    for (size_t i = 1; i < n; i++)
        kill(tree[i], SIGKILL);
    free(tree);
}

/* ---- the shell ---- */

static void shell_handle_closed(uv_handle_t *h)
{
    struct shell *sh = h->data;
    if (--sh->handles > 0)
        return;
    osb_buf_free(&sh->ctlbuf);
    free(sh);
}

/* Close everything once the process is gone and no run needs the output. */
static void shell_release(struct shell *sh)
{
    if (sh->released || !sh->exited || sh->run)
        return;
    sh->released = true;
    if (sh->sess && sh->sess->sh == sh)
        sh->sess->sh = NULL;
    osb_cmd_out_free(sh->out);
    sh->out = NULL;
    uv_close((uv_handle_t *)&sh->in, shell_handle_closed);
    uv_close((uv_handle_t *)&sh->ctl, shell_handle_closed);
}

static void shell_kill(struct shell *sh)
{
    if (!sh->exited && sh->pid > 0)
        kill(-sh->pid, SIGKILL);
}

struct wreq {
    uv_write_t w;
    char *data;
};

static void on_written(uv_write_t *w, int status)
{
    struct wreq *wr = (struct wreq *)w;
    if (status < 0 && status != UV_ECANCELED)
        osb_debug("session shell stdin: %s", uv_strerror(status));
    free(wr->data);
    free(wr);
}

/* Queue text (taken over) on the shell's stdin. */
static void shell_write(struct shell *sh, char *text, size_t len)
{
    struct wreq *wr = osb_xmalloc(sizeof *wr);
    wr->data = text;
    uv_buf_t b = uv_buf_init(text, (unsigned)len);
    if (!sh->in_open || uv_write(&wr->w, (uv_stream_t *)&sh->in, &b, 1, on_written) < 0) {
        free(text);
        free(wr);
    }
}

static void run_end(struct run *r, bool by_marker, int code);

/* One "<marker> <rc> <cwd>" record from fd 3. */
static void on_marker(struct shell *sh, const char *rec)
{
    struct run *r = sh->run;
    if (!r || r->ending || strncmp(rec, r->marker, 32) != 0 || rec[32] != ' ')
        return; /* stale (a run that was given up on) or forged */
    char *end;
    long rc = strtol(rec + 33, &end, 10);
    if (*end == ' ' && end[1] == '/' && sh->sess) {
        free(sh->sess->cwd);
        sh->sess->cwd = osb_xstrdup(end + 1);
    }
    run_end(r, true, (int)rc);
}

static void ctl_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct shell *sh = h->data;
    *buf = uv_buf_init(sh->ctlread, sizeof sh->ctlread);
}

static void ctl_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    struct shell *sh = st->data;
    if (n < 0) {
        uv_read_stop(st);
        return; /* the shell is going away; its exit status follows */
    }
    if (osb_buf_add(&sh->ctlbuf, buf->base, (size_t)n) < 0)
        osb_buf_reset(&sh->ctlbuf); /* garbage without a terminator */
    char *nul;
    while ((nul = memchr(sh->ctlbuf.data, '\0', sh->ctlbuf.len))) {
        size_t used = (size_t)(nul - sh->ctlbuf.data) + 1;
        on_marker(sh, sh->ctlbuf.data);
        osb_buf_consume(&sh->ctlbuf, used);
    }
}

static void shell_exited(pid_t pid, int wstatus, void *ud)
{
    (void)pid;
    struct shell *sh = ud;
    sh->exited = true;
    sh->wstatus = wstatus;
    if (sh->sess && sh->sess->sh == sh)
        sh->sess->sh = NULL; /* the next run starts a new shell */
    osb_debug("session shell %d ended (status %d)", (int)sh->pid, wstatus);
    if (sh->run)
        run_end(sh->run, false, wstatus);
    shell_release(sh);
}

static int make_pipes(int fds[3][2], struct osb_err *err)
{
    for (int i = 0; i < 3; i++)
        fds[i][0] = fds[i][1] = -1;
    for (int i = 0; i < 3; i++)
        if (pipe2(fds[i], O_CLOEXEC) < 0)
            return osb_err_sys(err, "pipe");
    return 0;
}

static void close_pipes(int fds[3][2])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            if (fds[i][j] >= 0)
                close(fds[i][j]);
}

/* fds: [0] stdin (we write [1]), [1] output (we read [0]), [2] control
 * (the child's stderr at first; the init script moves it to fd 3). */
static pid_t shell_spawn(struct osb_execd *x, const char *cwd, int fds[3][2], struct osb_err *err)
{
    bool bash = strcmp(osb_cmd_shell(), "bash") == 0;
    const char *argv[] = {osb_cmd_shell(), bash ? "--noprofile" : NULL, "--norc", NULL};
    char **env = osb_execd_env_build(x, NULL);
    struct stat st;
    struct osb_spawn sp = {
        .argv = argv,
        .envp = (const char *const *)env,
        .cwd = cwd && stat(cwd, &st) == 0 && S_ISDIR(st.st_mode) ? cwd : NULL,
        .stdin_fd = fds[0][0],
        .stdout_fd = fds[1][1],
        .stderr_fd = fds[2][1],
        .ctty_fd = -1,
    };
    pid_t pid = osb_execd_spawn(x, &sp, err);
    osb_execd_env_free(env);
    return pid;
}

static void shell_open_handles(struct shell *sh, int fds[3][2])
{
    uv_loop_t *loop = sh->x->loop;
    uv_pipe_init(loop, &sh->in, 0);
    uv_pipe_init(loop, &sh->ctl, 0);
    sh->in.data = sh->ctl.data = sh;
    sh->handles = 2;
    sh->in_open = uv_pipe_open(&sh->in, fds[0][1]) == 0;
    sh->ctl_open = uv_pipe_open(&sh->ctl, fds[2][0]) == 0;
    if (!sh->in_open)
        close(fds[0][1]);
    if (!sh->ctl_open)
        close(fds[2][0]);
    else
        uv_read_start((uv_stream_t *)&sh->ctl, ctl_alloc, ctl_read);
    fds[0][1] = fds[2][0] = -1;
    struct osb_err err = {0};
    sh->out = osb_cmd_out_new(loop);
    if (osb_cmd_out_add(sh->out, fds[1][0], "stdout", &err) < 0)
        osb_warn("session shell %d: %s", (int)sh->pid, err.msg);
    fds[1][0] = -1;
}

/* fd 3 becomes the control pipe and stderr joins stdout; aliases work in a
 * non-interactive shell only with expand_aliases. */
static const char shell_init[] = "exec 3>&2 2>&1\n"
                                 "shopt -s expand_aliases 2>/dev/null\n";

static struct shell *shell_start(struct sess *s, struct osb_err *err)
{
    int fds[3][2];
    if (make_pipes(fds, err) < 0) {
        close_pipes(fds);
        return NULL;
    }
    pid_t pid = shell_spawn(s->m->x, s->cwd, fds, err);
    for (int i = 0; i < 3; i++) { /* the child's ends */
        close(fds[i][i == 0 ? 0 : 1]);
        fds[i][i == 0 ? 0 : 1] = -1;
    }
    if (pid < 0) {
        close_pipes(fds);
        return NULL;
    }
    struct shell *sh = osb_xcalloc(1, sizeof *sh);
    sh->x = s->m->x;
    sh->sess = s;
    sh->pid = pid;
    osb_buf_init(&sh->ctlbuf, CTL_MAX);
    osb_execd_watch_child(sh->x, pid, shell_exited, sh);
    shell_open_handles(sh, fds);
    shell_write(sh, osb_xstrdup(shell_init), sizeof shell_init - 1);
    s->sh = sh;
    return sh;
}

/* ---- runs ---- */

static void run_handle_closed(uv_handle_t *h)
{
    struct run *r = h->data;
    if (--r->handles == 0)
        free(r);
}

static void run_free(struct run *r)
{
    struct sess *s = r->sess;
    struct shell *sh = r->sh;
    if (r->script_path)
        unlink(r->script_path);
    free(r->script_path);
    free(r->kids0);
    s->run = NULL;
    sh->run = NULL;
    uv_timer_stop(&r->timeout);
    uv_timer_stop(&r->grace);
    uv_close((uv_handle_t *)&r->timeout, run_handle_closed);
    uv_close((uv_handle_t *)&r->grace, run_handle_closed);
    shell_release(sh);
    if (s->deleted) {
        if (sh->sess == s)
            sh->sess = NULL;
        sess_free(s);
    }
}

static void send_result(struct run *r)
{
    if (r->timed_out) {
        char dur[32];
        osb_cmd_duration_text(r->timeout_ms, dur, sizeof dur);
        char *msg = osb_xasprintf("{\"code\":\"RUNTIME_ERROR\",\"message\":\"error running in "
                                  "session. timeout after %s\"}\n\n",
                                  dur);
        osb_sse_send_raw(r->sse, msg, strlen(msg));
        free(msg);
        return;
    }
    int code = r->by_marker ? r->rc : osb_cmd_exit_code(r->wstatus);
    if (code == 0) {
        struct osb_execd_event ev = {.type = "execution_complete",
                                     .execution_time = osb_mono_ms() - r->start_mono};
        osb_sse_send(r->sse, &ev);
        return;
    }
    char evalue[16], tb[128];
    snprintf(evalue, sizeof evalue, "%d", code);
    if (code < 0)
        osb_cmd_exit_text(r->wstatus, tb, sizeof tb); /* "signal: killed" */
    else
        snprintf(tb, sizeof tb, "command exited with code %d", code);
    json_t *trace = json_pack("[s]", tb);
    struct osb_execd_event ev = {
        .type = "error", .ename = "CommandExecError", .evalue = evalue, .traceback = trace};
    osb_sse_send(r->sse, &ev);
    json_decref(trace);
}

/* All output of the run is on the socket. */
static void run_done(void *ud)
{
    struct run *r = ud;
    if (r->sh->out)
        osb_cmd_out_set_sse(r->sh->out, NULL);
    if (r->sse)
        send_result(r);
    if (r->sse) { /* run_gone clears it if the client vanished meanwhile */
        struct osb_sse *sse = r->sse;
        r->sse = NULL;
        osb_sse_close(sse);
    }
    run_free(r);
}

/* The run is over: by its marker (code = exit code) or because the shell
 * exited (code = wait status). */
static void run_end(struct run *r, bool by_marker, int code)
{
    if (r->ending)
        return;
    r->ending = true;
    r->by_marker = by_marker;
    if (by_marker)
        r->rc = code;
    else
        r->wstatus = code;
    uv_timer_stop(&r->timeout);
    uv_timer_stop(&r->grace);
    if (!r->sh->out) {
        run_done(r);
        return;
    }
    osb_cmd_out_finish(r->sh->out, by_marker ? 0 : OSB_CMD_EOF_WAIT_MS, run_done, r);
}

static void on_grace(uv_timer_t *t)
{
    struct run *r = t->data;
    osb_warn("session %s: shell did not recover; killing it", r->sess->id);
    shell_kill(r->sh); /* shell_exited ends the run */
}

/* Timeout or a vanished client: kill what the run started and give the
 * shell a moment to print its marker. */
static void run_abort(struct run *r)
{
    if (r->ending || r->sh->exited)
        return;
    kill_new_descendants(r->sh->pid, r->kids0, r->nkids0);
    if (!uv_is_active((uv_handle_t *)&r->grace))
        uv_timer_start(&r->grace, on_grace, RECOVER_GRACE_MS, 0);
}

static void on_timeout(uv_timer_t *t)
{
    struct run *r = t->data;
    r->timed_out = true;
    osb_info("session %s: run timed out", r->sess->id);
    run_abort(r);
}

static void run_gone(void *ud)
{
    struct run *r = ud;
    r->sse = NULL;
    r->gone = true;
    if (r->sh->out)
        osb_cmd_out_set_sse(r->sh->out, NULL);
    run_abort(r);
}

/* Single-quote s for the shell: ' becomes '\''. -1 when b is full. */
static int add_quoted(struct osb_buf *b, const char *s)
{
    bool full = osb_buf_add(b, "'", 1) < 0;
    for (const char *q; (q = strchr(s, '\'')); s = q + 1)
        full |= osb_buf_add(b, s, (size_t)(q - s)) < 0 || osb_buf_add(b, "'\\''", 4) < 0;
    full |= osb_buf_adds(b, s) < 0 || osb_buf_add(b, "'", 1) < 0;
    return full ? -1 : 0;
}

/* Long commands are read from a file by `eval "$(< file)"`. */
static int script_file(struct run *r, const char *command, struct osb_err *err)
{
    const char *dir = osb_cmd_tmpdir(r->sess->m->x, err);
    if (!dir)
        return -1;
    r->script_path = osb_xasprintf("%s/session-%s.sh", dir, r->marker);
    _cleanup_close_ int fd = open(r->script_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(command);
    if (fd < 0 || OSB_RETRY(write(fd, command, len)) != (ssize_t)len)
        return osb_err_sys(err, "write %s", r->script_path);
    return 0;
}

/* The text sent to the shell for one run (see session.h). The shell's own
 * commands are called through `\builtin` (`\command` in a POSIX sh) so
 * that user functions and aliases named cd/eval/printf cannot hijack them. */
static int build_wrapper(struct run *r, const char *command, const char *cwd, struct osb_buf *b,
                         struct osb_err *err)
{
    bool bash = strcmp(osb_cmd_shell(), "bash") == 0;
    const char *bi = bash ? "\\builtin" : "\\command";
    bool full = osb_buf_adds(b, "{ ") < 0;
    if (cwd)
        full |= osb_buf_addf(b, "%s cd -- ", bi) < 0 || add_quoted(b, cwd) < 0 ||
                osb_buf_adds(b, " && ") < 0;
    if (strlen(command) > INLINE_COMMAND_MAX) {
        if (script_file(r, command, err) < 0)
            return -1;
        /* bash reads `$(< f)` without a cat process; POSIX sh needs cat. */
        full |= osb_buf_addf(b, "%s eval \"$(%s ", bi, bash ? "<" : "cat") < 0 ||
                add_quoted(b, r->script_path) < 0 || osb_buf_adds(b, ")\"") < 0;
    } else {
        full |= osb_buf_addf(b, "%s eval ", bi) < 0 || add_quoted(b, command) < 0;
    }
    full |=
        osb_buf_addf(b, "\n} 3>&- </dev/null\n%s printf '%%s %%d %%s\\0' %s \"$?\" \"$PWD\" >&3\n",
                     bi, r->marker) < 0;
    if (full)
        return osb_err_set(err, OSB_E_TOOBIG, "the command does not fit the shell's input");
    return 0;
}

struct run_req {
    const char *command;
    const char *cwd;
    int64_t timeout;
};

static int run_start(struct osb_http_req *req, struct sess *s, const struct run_req *q,
                     const char *cwd, struct osb_err *err)
{
    struct shell *sh = s->sh ? s->sh : shell_start(s, err);
    if (!sh)
        return osb_err_wrap(err, "failed to start bash session");
    struct run *r = osb_xcalloc(1, sizeof *r);
    r->sess = s; /* a long command's script file needs it */
    osb_random_hex(r->marker, 16);
    struct osb_buf b;
    osb_buf_init(&b, OSB_MAX_JSON_BODY * 2);
    if (build_wrapper(r, q->command, cwd, &b, err) < 0) {
        osb_buf_free(&b);
        free(r->script_path);
        free(r);
        return -1;
    }
    r->sess = s;
    r->sh = sh;
    s->run = r;
    sh->run = r;
    r->start_mono = osb_mono_ms();
    r->timeout_ms = q->timeout > 0 ? q->timeout : DEFAULT_TIMEOUT_MS;
    r->nkids0 = children_of(sh->pid, &r->kids0);
    uv_timer_init(s->m->x->loop, &r->timeout);
    uv_timer_init(s->m->x->loop, &r->grace);
    r->timeout.data = r->grace.data = r;
    r->handles = 2;
    uv_timer_start(&r->timeout, on_timeout, (uint64_t)r->timeout_ms, 0);

    struct osb_sse *sse = osb_sse_open(s->m->x->loop, req, run_gone, r);
    if (!r->gone) /* the client may vanish while the headers go out */
        r->sse = sse;
    osb_cmd_out_set_sse(sh->out, r->sse);
    struct osb_execd_event ev = {.type = "init", .text = s->id};
    osb_sse_send(r->sse, &ev);
    size_t len;
    char *text = osb_buf_steal(&b, &len);
    shell_write(sh, text, len);
    return 0;
}

/* ---- handlers ---- */

static int parse_run(struct osb_http_req *req, json_t **j, struct run_req *q, struct osb_err *err)
{
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    if (osb_json_parse_object(body, len, false, j, err) < 0)
        return osb_err_wrap(err, "error parsing request");
    if (osb_json_str(*j, "command", true, &q->command, err) < 0 ||
        osb_json_name(*j, "cwd", false, &q->cwd, err) < 0 ||
        osb_json_int(*j, "timeout", false, &q->timeout, err) < 0)
        return osb_err_wrap(err, "invalid request");
    if (!*q->command)
        return osb_err_set(err, OSB_E_INVALID,
                           "invalid request. field 'command' must not be empty");
    if (q->timeout < 0)
        return osb_err_set(err, OSB_E_INVALID,
                           "invalid request. field 'timeout' must not be negative");
    return 0;
}

/* The run's cwd, expanded and checked (NULL: stay where the shell is). */
static int run_cwd(const struct osb_execd *x, const struct run_req *q, char **out,
                   struct osb_err *err)
{
    *out = NULL;
    if (!q->cwd || !*q->cwd)
        return 0;
    char **env = osb_execd_env_build(x, NULL);
    int r = osb_cmd_expand_path(q->cwd, env, out, err);
    osb_execd_env_free(env);
    if (r == 0)
        r = osb_cmd_check_dir(*out, q->cwd, err);
    if (r < 0)
        osb_err_wrap(err, "invalid request");
    return r;
}

static void h_run(struct osb_http_req *req, void *ud)
{
    struct osb_execd_sessions *m = ud;
    struct osb_err err = {0};
    json_t *j = NULL;
    struct run_req q = {0};
    _cleanup_free_ char *cwd = NULL;
    struct sess *s = NULL;
    if (parse_run(req, &j, &q, &err) < 0)
        goto fail;
    s = sess_find(m, osb_http_req_param(req, "id"));
    /* Upstream answers a missing or busy session with a 500. */
    if (!s) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                               "error running in session. context not found");
    } else if (s->run) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                               "error running in session. session is busy: a command is still "
                               "running in it");
    } else if (run_cwd(m->x, &q, &cwd, &err) < 0) {
        goto fail;
    } else if (run_start(req, s, &q, cwd, &err) < 0) {
        osb_err_wrap(&err, "error running in session");
        goto fail;
    }
    json_decref(j);
    return;
fail:
    osb_execd_respond_err(req, &err);
    json_decref(j);
}

/* mkdir -p with the default mode; the result must be a directory. */
static int mkdir_p(const char *path, struct osb_err *err)
{
    if (osb_mkdir_p(path, 0777, err) < 0)
        return -1;
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "%s is not a directory", path);
    return 0;
}

static int session_cwd(const struct osb_execd *x, json_t *j, char **out, struct osb_err *err)
{
    const char *cwd = NULL;
    *out = NULL;
    if (osb_json_name(j, "cwd", false, &cwd, err) < 0)
        return -1;
    if (!cwd || !*cwd)
        return 0;
    char **env = osb_execd_env_build(x, NULL);
    int r = osb_cmd_expand_path(cwd, env, out, err);
    osb_execd_env_free(env);
    if (r == 0)
        r = mkdir_p(*out, err);
    return r;
}

static void h_create(struct osb_http_req *req, void *ud)
{
    struct osb_execd_sessions *m = ud;
    struct osb_err err = {0};
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    json_t *j = NULL;
    char *cwd = NULL;
    if (osb_json_parse_object(body, len, true, &j, &err) < 0 ||
        osb_json_name(j, "cwd", false, &(const char *){NULL}, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "error parsing request. %s",
                               err.msg);
        json_decref(j);
        return;
    }
    int r = m->count >= OSB_MAX_SESSIONS
                ? osb_err_set(&err, OSB_E_TOOBIG, "too many sessions (%d)", OSB_MAX_SESSIONS)
                : session_cwd(m->x, j, &cwd, &err);
    json_decref(j);
    struct sess *s = NULL;
    if (r == 0) {
        s = osb_xcalloc(1, sizeof *s);
        s->m = m;
        osb_random_uuid4(s->id);
        s->cwd = cwd;
        if (!shell_start(s, &err)) {
            osb_err_wrap(&err, "failed to start bash session");
            sess_free(s);
            s = NULL;
        }
    }
    if (!s) {
        if (r < 0)
            free(cwd);
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error creating session. %s", err.msg);
        return;
    }
    s->next = m->head;
    if (s->next)
        s->next->prev = s;
    m->head = s;
    m->count++;
    osb_info("session %s: created (shell %d)", s->id, (int)s->sh->pid);
    osb_http_respond_json(req, 200, json_pack("{ss}", "session_id", s->id));
}

int osb_execd_session_close(struct osb_execd *x, const char *id)
{
    struct sess *s = id ? sess_find(x->sessions, id) : NULL;
    if (!s)
        return -1;
    sess_unlink(s);
    s->deleted = true;
    if (s->sh) {
        shell_kill(s->sh);
        if (!s->run)
            s->sh->sess = NULL;
    }
    if (!s->run)
        sess_free(s);
    osb_info("session %s: closed", id);
    return 0;
}

static void h_delete(struct osb_http_req *req, void *ud)
{
    struct osb_execd_sessions *m = ud;
    const char *id = osb_http_req_param(req, "id");
    char copy[64];
    snprintf(copy, sizeof copy, "%s", id ? id : "");
    if (osb_execd_session_close(m->x, id) < 0) {
        osb_http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "session %s not found", copy);
        return;
    }
    osb_http_respond_empty(req, 200);
}

void osb_execd_session_routes(struct osb_execd *x)
{
    struct osb_execd_sessions *m = osb_xcalloc(1, sizeof *m);
    m->x = x;
    x->sessions = m;
    const struct osb_http_route routes[] = {
        {"POST", "/session", h_create, 0, m},
        {"POST", "/session/:id/run", h_run, 0, m},
        {"DELETE", "/session/:id", h_delete, 0, m},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
