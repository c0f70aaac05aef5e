#include "execd/pty.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "execd/cmd_util.h"
#include "execd/execd.h"
#include "execd/spawn.h"

/* Keeps idle connections alive through proxies (upstream pings every 30 s). */
#define PING_MS 30000
/* Keystrokes and pastes waiting for the shell to read them. */
#define STDIN_QUEUE_MAX (8 * 1024 * 1024)
#define WS_TEXT 1
#define WS_BINARY 2
#define WS_PING 9

/* ---- replay ring ---- */

void osb_pty_ring_init(struct osb_pty_ring *r, size_t cap)
{
    *r = (struct osb_pty_ring){.cap = cap};
}

void osb_pty_ring_free(struct osb_pty_ring *r)
{
    free(r->data);
    r->data = NULL;
    r->len = r->head = r->alloc = 0;
}

void osb_pty_ring_add(struct osb_pty_ring *r, const char *data, size_t n)
{
    r->total += n;
    if (n > r->cap) {
        data += n - r->cap;
        n = r->cap;
    }
    /* Grow until the ring is full: idle sessions stay small. */
    size_t need = r->len + n < r->cap ? r->len + n : r->cap;
    if (need > r->alloc) {
        size_t a = r->alloc ? r->alloc : 4096;
        while (a < need)
            a *= 2;
        r->alloc = a < r->cap ? a : r->cap;
        r->data = osb_xrealloc(r->data, r->alloc);
    }
    while (n) {
        size_t tail = (r->head + r->len) % r->cap;
        size_t k = n < r->cap - tail ? n : r->cap - tail;
        memcpy(r->data + tail, data, k);
        data += k;
        n -= k;
        r->len += k;
        if (r->len > r->cap) {
            r->head = (r->head + (r->len - r->cap)) % r->cap;
            r->len = r->cap;
        }
    }
}

size_t osb_pty_ring_since(const struct osb_pty_ring *r, uint64_t since, uint64_t *start, char **out)
{
    uint64_t oldest = r->total - r->len;
    *out = NULL;
    *start = since < oldest ? oldest : since;
    if (*start >= r->total)
        return 0;
    size_t n = (size_t)(r->total - *start), pos = (size_t)(*start - oldest);
    char *b = osb_xmalloc(n);
    for (size_t done = 0; done < n;) {
        size_t at = (r->head + pos + done) % r->cap;
        size_t k = n - done < r->cap - at ? n - done : r->cap - at;
        memcpy(b + done, r->data + at, k);
        done += k;
    }
    *out = b;
    return n;
}

/* ---- sessions ---- */

struct pty_sess;

/* One watched fd: output (stdout/stderr) or the stdin writer. Freed in its
 * close callback, so the session may go away before it. */
struct pio {
    uv_poll_t h;
    int fd;
    int tag; /* OSB_PTY_STDOUT / OSB_PTY_STDERR for outputs */
    struct pty_sess *s;
};

struct client {
    struct pty_sess *s; /* NULL once detached (taken over, session gone) */
    struct osb_ws *ws;
    uv_timer_t ping;
};

/* The module's state (x->ptys). */
struct osb_execd_ptys {
    struct osb_execd *x;
    struct pty_sess *head;
    size_t count;
};

struct pty_sess {
    struct osb_execd_ptys *m;
    struct pty_sess *next;
    char id[37];
    char *cwd, *command;
    bool started, exited, pipe_mode, paused;
    pid_t pid;
    int exit_code;
    int master; /* pty mode: the master side, for resize and tcgetpgrp */
    struct pio *out, *err, *in;
    struct osb_buf in_q;
    struct osb_pty_ring ring;
    struct client *client;
};

static struct pty_sess *sess_find(struct osb_execd_ptys *m, const char *id)
{
    for (struct pty_sess *s = m->head; s; s = s->next)
        if (id && strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static void pio_closed(uv_handle_t *h)
{
    struct pio *p = h->data;
    close(p->fd);
    free(p);
}

static void pio_close(struct pio **pp)
{
    struct pio *p = *pp;
    if (!p)
        return;
    *pp = NULL;
    p->s = NULL;
    uv_close((uv_handle_t *)&p->h, pio_closed);
}

static struct pio *pio_new(struct pty_sess *s, int fd, int tag)
{
    struct pio *p = osb_xcalloc(1, sizeof *p);
    p->fd = fd;
    p->tag = tag;
    p->s = s;
    uv_poll_init(s->m->x->loop, &p->h, fd);
    p->h.data = p;
    return p;
}

/* ---- client frames ---- */

static void send_json(struct client *c, json_t *j)
{
    size_t n;
    char *s = osb_json_dump(j, &n);
    osb_ws_send(c->ws, WS_TEXT, s, n);
    free(s);
    json_decref(j);
}

static void send_error(struct client *c, const char *code, const char *msg)
{
    send_json(c, json_pack("{s:s,s:s,s:s}", "type", "error", "error", msg, "code", code));
}

static void send_exit(struct client *c, int code)
{
    send_json(c, json_pack("{s:s,s:i}", "type", "exit", "exit_code", code));
    osb_ws_close(c->ws, 1000, "process exited");
}

/* ---- output ---- */

static void out_watch(struct pty_sess *s);

static void on_output(uv_poll_t *h, int status, int events);

/* One read into the replay ring and to the client: 1 data, 0 nothing now,
 * -1 EOF (or EIO: a pty whose slave side is closed everywhere). */
static int out_read(struct pty_sess *s, struct pio *p)
{
    char buf[1 + OSB_PTY_FRAME_MAX];
    ssize_t n = read(p->fd, buf + 1, OSB_PTY_FRAME_MAX);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (n <= 0)
        return -1;
    osb_pty_ring_add(&s->ring, buf + 1, (size_t)n);
    if (s->client) {
        buf[0] = (char)p->tag;
        osb_ws_send(s->client->ws, WS_BINARY, buf, (size_t)n + 1);
        if (osb_ws_queued(s->client->ws) > OSB_WRITE_HIGH_WATER && !s->paused) {
            s->paused = true;
            out_watch(s);
        }
    }
    return 1;
}

static void on_output(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct pio *p = h->data;
    struct pty_sess *s = p->s;
    if (!s)
        return;
    if (status >= 0 && out_read(s, p) >= 0)
        return;
    if (p == s->out)
        s->master = -1; /* the pio owns the fd and closes it */
    pio_close(p == s->out ? &s->out : &s->err);
}

static void out_watch(struct pty_sess *s)
{
    struct pio *ps[2] = {s->out, s->err};
    for (int i = 0; i < 2; i++) {
        if (!ps[i])
            continue;
        if (s->paused)
            uv_poll_stop(&ps[i]->h);
        else
            uv_poll_start(&ps[i]->h, UV_READABLE, on_output);
    }
}

/* Take everything readable now (the process is gone; its last words),
 * bounded in case a background job keeps writing. */
static void out_drain(struct pty_sess *s)
{
    struct pio *ps[2] = {s->out, s->err};
    for (int i = 0; i < 2; i++) {
        int budget = (int)(OSB_PTY_REPLAY_BYTES / OSB_PTY_FRAME_MAX) + 1;
        while (ps[i] && budget-- > 0 && out_read(s, ps[i]) > 0)
            ;
    }
}

/* ---- stdin ---- */

static void in_flush(struct pty_sess *s);

static void on_stdin_writable(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct pio *p = h->data;
    if (!p->s)
        return;
    if (status < 0) {
        osb_buf_reset(&p->s->in_q);
        uv_poll_stop(h);
        return;
    }
    in_flush(p->s);
}

static void in_flush(struct pty_sess *s)
{
    while (s->in && s->in_q.len) {
        ssize_t n = write(s->in->fd, s->in_q.data, s->in_q.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            osb_buf_reset(&s->in_q);
            if (s->client)
                send_error(s->client, "STDIN_WRITE_FAILED", strerror(errno));
            break;
        }
        osb_buf_consume(&s->in_q, (size_t)n);
    }
    if (!s->in)
        return;
    if (s->in_q.len)
        uv_poll_start(&s->in->h, UV_WRITABLE, on_stdin_writable);
    else
        uv_poll_stop(&s->in->h);
}

static void write_stdin(struct client *c, const char *data, size_t n)
{
    struct pty_sess *s = c->s;
    if (!s->in) {
        send_error(c, "SESSION_GONE", "the process has exited");
        return;
    }
    if (osb_buf_add(&s->in_q, data, n) < 0) {
        send_error(c, "STDIN_WRITE_FAILED", "stdin buffer full: the process is not reading");
        return;
    }
    in_flush(s);
}

/* ---- process ---- */

static void client_detach(struct client *c, int code, const char *reason);

static void on_exit_cb(pid_t pid, int wstatus, void *ud)
{
    (void)pid;
    struct pty_sess *s = ud;
    s->exited = true;
    s->exit_code = osb_cmd_exit_code(wstatus);
    out_drain(s);
    pio_close(&s->out);
    pio_close(&s->err);
    pio_close(&s->in);
    osb_buf_free(&s->in_q);
    s->master = -1;
    if (s->client) {
        struct client *c = s->client;
        send_exit(c, s->exit_code);
        client_detach(c, 0, NULL);
    }
}

static char **shell_env(const struct osb_execd *x)
{
    char **env = osb_execd_env_build(x, NULL);
    for (char **e = env; *e; e++)
        if (strncmp(*e, "TERM=", 5) == 0)
            return env;
    /* A terminal needs a TERM for line editing; xterm is what clients emulate. */
    osb_execd_env_free(env);
    json_t *extra = json_pack("{s:s}", "TERM", "xterm-256color");
    env = osb_execd_env_build(x, extra);
    json_decref(extra);
    return env;
}

static pid_t spawn_shell(struct pty_sess *s, int fds[3], bool pty, struct osb_err *err)
{
    const char *sh = osb_cmd_shell();
    const char *argv[6];
    int i = 0;
    argv[i++] = sh;
    if (strcmp(sh, "bash") == 0) {
        argv[i++] = "--norc";
        argv[i++] = "--noprofile";
    }
    if (s->command) {
        argv[i++] = "-c";
        argv[i++] = s->command;
    }
    argv[i] = NULL;
    char **env = shell_env(s->m->x);
    struct osb_spawn sp = {.argv = argv,
                           .envp = (const char *const *)env,
                           .cwd = s->cwd,
                           .stdin_fd = fds[0],
                           .stdout_fd = fds[1],
                           .stderr_fd = fds[2],
                           .new_session = pty,
                           .ctty_fd = pty ? fds[0] : -1};
    pid_t pid = osb_execd_spawn(s->m->x, &sp, err);
    osb_execd_env_free(env);
    return pid;
}

static int start_pty(struct pty_sess *s, struct osb_err *err)
{
    int master, slave;
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
        return osb_err_sys(err, "openpty");
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(slave, F_SETFD, FD_CLOEXEC);
    int w = fcntl(master, F_DUPFD_CLOEXEC, 3);
    int fds[3] = {slave, slave, slave};
    pid_t pid = w < 0 ? osb_err_sys(err, "dup") : spawn_shell(s, fds, true, err);
    close(slave);
    if (pid < 0) {
        close(master);
        if (w >= 0)
            close(w);
        return -1;
    }
    s->pid = pid;
    s->master = master;
    s->out = pio_new(s, master, OSB_PTY_STDOUT);
    s->in = pio_new(s, w, 0);
    return 0;
}

static int start_pipes(struct pty_sess *s, struct osb_err *err)
{
    int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    for (int i = 0; i < 3; i++) {
        if (pipe2(p[i], O_CLOEXEC) < 0) {
            osb_err_sys(err, "pipe");
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 2; j++)
                    if (p[k][j] >= 0)
                        close(p[k][j]);
            return -1;
        }
    }
    int fds[3] = {p[0][0], p[1][1], p[2][1]};
    pid_t pid = spawn_shell(s, fds, false, err);
    close(p[0][0]);
    close(p[1][1]);
    close(p[2][1]);
    if (pid < 0) {
        close(p[0][1]);
        close(p[1][0]);
        close(p[2][0]);
        return -1;
    }
    s->pid = pid;
    s->master = -1;
    s->in = pio_new(s, p[0][1], 0);
    s->out = pio_new(s, p[1][0], OSB_PTY_STDOUT);
    s->err = pio_new(s, p[2][0], OSB_PTY_STDERR);
    return 0;
}

static int sess_start(struct pty_sess *s, bool pipe_mode, struct osb_err *err)
{
    s->pipe_mode = pipe_mode;
    if ((pipe_mode ? start_pipes(s, err) : start_pty(s, err)) < 0)
        return osb_err_wrap(err, "start shell");
    s->started = true;
    osb_buf_init(&s->in_q, STDIN_QUEUE_MAX);
    osb_execd_watch_child(s->m->x, s->pid, on_exit_cb, s);
    out_watch(s);
    return 0;
}

/* ---- client messages ---- */

static int signal_number(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"SIGINT", SIGINT},
                {"SIGTERM", SIGTERM},
                {"SIGKILL", SIGKILL},
                {"SIGQUIT", SIGQUIT},
                {"SIGHUP", SIGHUP}};
    for (size_t i = 0; name && i < OSB_ARRAY_LEN(sigs); i++)
        if (strcmp(name, sigs[i].name) == 0 || strcmp(name, sigs[i].name + 3) == 0)
            return sigs[i].sig;
    return -1;
}

/* On a terminal a signal goes where Ctrl-C would: the foreground process
 * group (a running command, else the shell); with pipes, the shell's group. */
static void send_signal(struct pty_sess *s, int sig)
{
    if (s->exited)
        return;
    pid_t fg = s->master >= 0 ? tcgetpgrp(s->master) : -1;
    if (fg <= 0 || kill(-fg, sig) < 0)
        kill(-s->pid, sig);
}

/* A client's text frame, parsed once (through the one JSON parser:
 * duplicate keys and over-deep nesting are refused like any bad frame). */
struct pty_frame {
    enum { FRAME_STDIN, FRAME_RESIZE, FRAME_SIGNAL, FRAME_PING } type;
    const char *data; /* stdin; borrowed from j */
    size_t len;
    unsigned short cols, rows;
    int sig;
    json_t *j; /* owns the strings above */
};

static int frame_stdin(struct pty_frame *f, struct osb_err *err)
{
    if (osb_json_str(f->j, "data", true, &f->data, err) < 0)
        return osb_err_set(err, OSB_E_INVALID, "stdin needs a string \"data\"");
    f->len = json_string_length(json_object_get(f->j, "data"));
    return 0;
}

static int frame_resize(struct pty_frame *f, struct osb_err *err)
{
    int64_t cols, rows;
    if (osb_json_int(f->j, "cols", true, &cols, err) < 0 ||
        osb_json_int(f->j, "rows", true, &rows, err) < 0 || cols < 1 || rows < 1 || cols > 65535 ||
        rows > 65535)
        return osb_err_set(err, OSB_E_INVALID, "resize needs integer cols and rows in 1..65535");
    f->cols = (unsigned short)cols;
    f->rows = (unsigned short)rows;
    return 0;
}

static int frame_signal(struct pty_frame *f, struct osb_err *err)
{
    const char *name = NULL;
    if (osb_json_str(f->j, "signal", false, &name, err) < 0 || (f->sig = signal_number(name)) < 0)
        return osb_err_set(err, OSB_E_INVALID,
                           "signal must be one of SIGINT, SIGTERM, SIGKILL, SIGQUIT, SIGHUP");
    return 0;
}

/* 0 with f->j to release, or -1 with err (f->j released). */
static int frame_parse(const uint8_t *data, size_t len, struct pty_frame *f, struct osb_err *err)
{
    *f = (struct pty_frame){0};
    const char *type = NULL;
    struct osb_err perr = {0};
    if (osb_json_parse_object((const char *)data, len, false, &f->j, &perr) < 0 ||
        osb_json_str(f->j, "type", true, &type, &perr) < 0) {
        json_decref(f->j);
        return osb_err_set(err, OSB_E_INVALID,
                           "text frames must be JSON objects with a string \"type\" (%s)",
                           perr.msg);
    }
    int r;
    if (strcmp(type, "stdin") == 0)
        f->type = FRAME_STDIN, r = frame_stdin(f, err);
    else if (strcmp(type, "resize") == 0)
        f->type = FRAME_RESIZE, r = frame_resize(f, err);
    else if (strcmp(type, "signal") == 0)
        f->type = FRAME_SIGNAL, r = frame_signal(f, err);
    else if (strcmp(type, "ping") == 0)
        f->type = FRAME_PING, r = 0;
    else
        r = osb_err_set(err, OSB_E_INVALID, "unknown frame type");
    if (r < 0)
        json_decref(f->j);
    return r;
}

static void do_resize(struct client *c, const struct pty_frame *f)
{
    struct pty_sess *s = c->s;
    struct winsize ws = {.ws_row = f->rows, .ws_col = f->cols};
    if (s->master >= 0 && ioctl(s->master, TIOCSWINSZ, &ws) < 0)
        send_error(c, "RUNTIME_ERROR", strerror(errno));
}

static void on_text(struct client *c, const uint8_t *data, size_t len)
{
    struct pty_frame f;
    struct osb_err err = {0};
    if (frame_parse(data, len, &f, &err) < 0) {
        send_error(c, "INVALID_FRAME", err.msg);
        return;
    }
    switch (f.type) {
    case FRAME_STDIN: write_stdin(c, f.data, f.len); break;
    case FRAME_RESIZE: do_resize(c, &f); break;
    case FRAME_SIGNAL: send_signal(c->s, f.sig); break;
    case FRAME_PING: send_json(c, json_pack("{s:s}", "type", "pong")); break;
    }
    json_decref(f.j);
}

static void on_message(struct osb_ws *ws, int opcode, const uint8_t *data, size_t len, void *ud)
{
    (void)ws;
    struct client *c = ud;
    if (!c->s)
        return;
    if (opcode == WS_TEXT) {
        on_text(c, data, len);
        return;
    }
    if (len < 1 || data[0] != OSB_PTY_STDIN) {
        send_error(c, "INVALID_FRAME", "binary frames must start with 0x00 (stdin)");
        return;
    }
    write_stdin(c, (const char *)data + 1, len - 1);
}

static void client_free(uv_handle_t *h)
{
    free(h->data);
}

static void on_ws_close(struct osb_ws *ws, int code, void *ud)
{
    (void)ws;
    (void)code;
    struct client *c = ud;
    if (c->s)
        client_detach(c, 0, NULL);
    uv_timer_stop(&c->ping);
    uv_close((uv_handle_t *)&c->ping, client_free);
}

static void on_ws_drain(struct osb_ws *ws, void *ud)
{
    (void)ws;
    struct client *c = ud;
    if (c->s && c->s->paused) {
        c->s->paused = false;
        out_watch(c->s);
    }
}

static void on_ping(uv_timer_t *t)
{
    struct client *c = t->data;
    osb_ws_send(c->ws, WS_PING, "", 0);
}

/* The session forgets its client (which may still be closing). With a code
 * the connection is closed too. Output reading resumes without backpressure:
 * nobody to wait for, the replay ring takes it. */
static void client_detach(struct client *c, int code, const char *reason)
{
    struct pty_sess *s = c->s;
    c->s = NULL;
    if (s && s->client == c)
        s->client = NULL;
    if (code)
        osb_ws_close(c->ws, code, reason);
    if (s && s->paused) {
        s->paused = false;
        out_watch(s);
    }
}

/* ---- handlers ---- */

static void sess_free(struct pty_sess *s)
{
    for (struct pty_sess **p = &s->m->head; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            s->m->count--;
            break;
        }
    }
    if (s->client) {
        send_error(s->client, "SESSION_GONE", "the session was deleted");
        client_detach(s->client, 1000, "session deleted");
    }
    if (s->started && !s->exited) {
        kill(-s->pid, SIGKILL);
        osb_execd_unwatch_child(s->m->x, s->pid);
    }
    pio_close(&s->out);
    pio_close(&s->err);
    pio_close(&s->in);
    osb_buf_free(&s->in_q);
    osb_pty_ring_free(&s->ring);
    free(s->cwd);
    free(s->command);
    free(s);
}

/* POST /pty {"cwd"?, "command"?} -> 201 {"session_id"} */
static void h_create(struct osb_http_req *req, void *ud)
{
    struct osb_execd_ptys *m = ud;
    size_t len;
    const char *body = osb_http_req_body(req, &len);
    json_t *j = NULL;
    const char *cwd = NULL, *command = NULL;
    struct osb_err err = {0};
    struct stat st;
    if (osb_json_parse_object(body, len, true, &j, &err) < 0 ||
        osb_json_name(j, "cwd", false, &cwd, &err) < 0 ||
        osb_json_str(j, "command", false, &command, &err) < 0) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", err.msg);
    } else if (cwd && *cwd && (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode))) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "cwd '%s' is not a directory",
                               cwd);
    } else if (m->count >= OSB_MAX_PTY_SESSIONS) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                               "too many pty sessions (%d); delete some first",
                               OSB_MAX_PTY_SESSIONS);
    } else {
        struct pty_sess *s = osb_xcalloc(1, sizeof *s);
        s->m = m;
        osb_random_uuid4(s->id);
        s->cwd = cwd && *cwd ? osb_xstrdup(cwd) : NULL;
        s->command = command && *command ? osb_xstrdup(command) : NULL;
        s->master = -1;
        osb_pty_ring_init(&s->ring, OSB_PTY_REPLAY_BYTES);
        s->next = m->head;
        m->head = s;
        m->count++;
        osb_http_respond_json(req, 201, json_pack("{s:s}", "session_id", s->id));
    }
    json_decref(j);
}

static struct pty_sess *sess_or_404(struct osb_http_req *req, struct osb_execd_ptys *m)
{
    const char *id = osb_http_req_param(req, "id");
    struct pty_sess *s = sess_find(m, id);
    if (!s)
        osb_http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "pty session %s not found", id);
    return s;
}

/* GET /pty/{id} */
static void h_get(struct osb_http_req *req, void *ud)
{
    struct pty_sess *s = sess_or_404(req, ud);
    if (!s)
        return;
    osb_http_respond_json(req, 200,
                          json_pack("{s:s,s:b,s:I}", "session_id", s->id, "running",
                                    s->started && !s->exited, "output_offset",
                                    (json_int_t)s->ring.total));
}

/* DELETE /pty/{id} */
static void h_delete(struct osb_http_req *req, void *ud)
{
    struct pty_sess *s = sess_or_404(req, ud);
    if (!s)
        return;
    sess_free(s);
    osb_http_respond_empty(req, 200);
}

static bool query_flag(struct osb_http_req *req, const char *name, const char *on)
{
    const char *v = osb_http_req_query(req, name);
    return v && (strcmp(v, on) == 0 || strcmp(v, strcmp(on, "1") == 0 ? "true" : "false") == 0);
}

/* ?since=N as an offset; false when absent or unparsable (as upstream: no
 * replay then). */
static bool parse_since(struct osb_http_req *req, uint64_t *since)
{
    const char *v = osb_http_req_query(req, "since");
    char *end;
    if (!v || !*v || v[0] == '-')
        return false;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || errno)
        return false;
    *since = n;
    return true;
}

static void send_replay(struct client *c, uint64_t since)
{
    uint64_t start;
    char *data;
    size_t n = osb_pty_ring_since(&c->s->ring, since, &start, &data);
    if (!n)
        return;
    char *frame = osb_xmalloc(n + 9);
    frame[0] = OSB_PTY_REPLAY;
    for (int i = 0; i < 8; i++)
        frame[1 + i] = (char)(start >> (56 - 8 * i));
    memcpy(frame + 9, data, n);
    osb_ws_send(c->ws, WS_BINARY, frame, n + 9);
    free(frame);
    free(data);
}

/* GET /pty/{id}/ws[?pty=0][&since=N][&takeover=1] */
static void h_ws(struct osb_http_req *req, void *ud)
{
    struct pty_sess *s = sess_or_404(req, ud);
    if (!s)
        return;
    if (s->client && !query_flag(req, "takeover", "1")) {
        osb_http_respond_error(req, 409, "ALREADY_CONNECTED",
                               "pty session %s already has a client; reconnect with takeover=1",
                               s->id);
        return;
    }
    uint64_t since = 0;
    bool replay = parse_since(req, &since);
    struct osb_err err = {0};
    bool start_failed = !s->started && sess_start(s, query_flag(req, "pty", "0"), &err) < 0;
    /* The request is gone after the upgrade: read everything before. */
    static const struct osb_ws_cbs cbs = {
        .on_message = on_message, .on_close = on_ws_close, .on_drain = on_ws_drain};
    struct client *c = osb_xcalloc(1, sizeof *c);
    struct osb_ws *ws = osb_http_ws_accept(req, &cbs, c);
    if (!ws) {
        free(c);
        return;
    }
    c->ws = ws;
    uv_timer_init(s->m->x->loop, &c->ping);
    c->ping.data = c;
    uv_timer_start(&c->ping, on_ping, PING_MS, PING_MS);
    if (start_failed) {
        send_error(c, "START_FAILED", err.msg);
        osb_ws_close(ws, 1011, "start failed");
        return;
    }
    if (s->client)
        client_detach(s->client, 4001, "TAKEN_OVER");
    c->s = s;
    s->client = c;
    if (replay)
        send_replay(c, since);
    send_json(c, json_pack("{s:s,s:s,s:s}", "type", "connected", "session_id", s->id, "mode",
                           s->pipe_mode ? "pipe" : "pty"));
    if (s->exited) {
        send_exit(c, s->exit_code);
        client_detach(c, 0, NULL);
    }
}

void osb_execd_pty_routes(struct osb_execd *x)
{
    struct osb_execd_ptys *m = osb_xcalloc(1, sizeof *m);
    m->x = x;
    x->ptys = m;
    const struct osb_http_route routes[] = {
        {"POST", "/pty", h_create, 0, m},
        {"GET", "/pty/:id/ws", h_ws, 0, m},
        {"GET", "/pty/:id", h_get, 0, m},
        {"DELETE", "/pty/:id", h_delete, 0, m},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
