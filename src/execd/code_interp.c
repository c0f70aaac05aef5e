#include "execd/code_interp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "execd/code_drivers.h"
#include "execd/execd.h"
#include "execd/fs_tree.h"
#include "execd/spawn.h"

/* Program output is read in chunks of this size (and events stay below it). */
#define READ_CHUNK (32 * 1024)
/* The tail of stderr kept to explain an interpreter that dies at startup. */
#define STARTUP_STDERR_MAX 2048
/* A reply line carries a repr() of the result; bound what a driver can make
 * execd buffer. */
#define CTL_LINE_MAX (64 * 1024 * 1024)
/* How long a partial line may wait for the rest of it. */
#define HOLD_MS 3
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct stream {
    uv_poll_t poll;
    int fd;
    int id;                 /* 1 stdout, 2 stderr */
    bool open;              /* not at EOF */
    unsigned char carry[4]; /* an incomplete UTF-8 sequence from the last read */
    size_t ncarry;
    struct osb_buf hold; /* clean text not yet delivered (see deliver) */
    uv_timer_t timer;
    struct osb_interp *ip;
};

struct osb_interp {
    struct osb_execd *x;
    enum osb_code_lang lang;
    pid_t pid;
    struct osb_interp_cbs cbs;
    void *ud;
    struct stream out, err;
    uv_poll_t ctl_poll;
    int ctl_fd;
    bool ctl_open;
    struct osb_buf ctl_in, ctl_out;
    uv_timer_t ready_timer;
    struct osb_buf startup_err;
    bool ready, dead, closing, paused;
    unsigned sigints; /* SIGINTs sent so far (the driver tells stale ones apart) */
    bool pid_reaped;
    int handles;
    char *workdir; /* the driver's private directory (go), removed at the end */
};

struct lang_info {
    const char *name;
    const char *env_override;
    const char *candidates[3];
    /* Run the program of this name next to the one found (java beside jshell). */
    const char *sibling;
    int ready_timeout_ms;
};

/* A driver that has not said "ready" by then is stuck (Node starts in
 * ~0.1 s, a JVM with jshell in ~1.5 s; allow for a loaded machine). */
static const struct lang_info langs[] = {
    [OSB_CODE_PYTHON] = {"python", "EXECD_PYTHON_BIN", {"python3", "python", NULL}, NULL, 30000},
    [OSB_CODE_JAVASCRIPT] = {"javascript", "EXECD_NODE_BIN", {"node", "nodejs", NULL}, NULL, 30000},
    [OSB_CODE_BASH] = {"bash", "EXECD_BASH_BIN", {"bash", NULL, NULL}, NULL, 30000},
    [OSB_CODE_JAVA] = {"java", "EXECD_JAVA_BIN", {"jshell", NULL, NULL}, "java", 120000},
    [OSB_CODE_TYPESCRIPT] = {"typescript", "EXECD_NODE_BIN", {"node", "nodejs", NULL}, NULL, 30000},
    /* The first go context builds the driver (seconds; a toolchain without
     * a prebuilt standard library compiles that first). */
    [OSB_CODE_GO] = {"go", "EXECD_GO_BIN", {"go", NULL, NULL}, NULL, 300000},
};

/* Where a `typescript` module is looked for after $NODE_PATH: the global
 * directories of Debian's nodejs (node-typescript installs into
 * /usr/share/nodejs) and of npm -g. */
static const char *const ts_dirs[] = {
    "/usr/local/lib/nodejs",
    "/usr/local/share/nodejs",
    "/usr/lib/x86_64-linux-gnu/nodejs",
    "/usr/lib/aarch64-linux-gnu/nodejs",
    "/usr/share/nodejs",
    "/usr/lib/nodejs",
    "/usr/local/lib/node_modules",
    "/usr/lib/node_modules",
};

int osb_code_lang_parse(const char *name)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(langs); i++)
        if (name && strcmp(name, langs[i].name) == 0)
            return (int)i;
    return -1;
}

const char *osb_code_lang_name(enum osb_code_lang lang)
{
    return langs[lang].name;
}

/* ---- finding the interpreter ---- */

static const char *env_get(char **env, const char *key)
{
    size_t n = strlen(key);
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, key, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* First `name` in the colon-separated `path`, malloc'd; NULL if none. */
static char *search_path(const char *path, const char *name)
{
    const char *p = path;
    while (*p) {
        const char *end = strchrnul(p, ':');
        char *cand = osb_xasprintf("%.*s/%s", (int)(end - p), end == p ? "." : p, name);
        if (executable(cand))
            return cand;
        free(cand);
        p = *end ? end + 1 : end;
    }
    return NULL;
}

static int find_override(const struct lang_info *li, const char *over, char **out,
                         struct osb_err *err)
{
    if (!executable(over))
        return osb_err_set(err, OSB_E_INVALID, "%s: %s=%s is not an executable file", li->name,
                           li->env_override, over);
    *out = osb_xstrdup(over);
    return 0;
}

/* The `sibling` program in the directory of the real file behind `found`
 * (/usr/bin/jshell is a chain of symlinks into the JDK). */
static int find_sibling(const struct lang_info *li, const char *found, char **out,
                        struct osb_err *err)
{
    _cleanup_free_ char *real = realpath(found, NULL);
    if (!real)
        return osb_err_sys(err, "%s: %s", li->name, found);
    char *slash = strrchr(real, '/');
    *slash = '\0';
    char *cand = osb_xasprintf("%s/%s", real, li->sibling);
    if (!executable(cand)) {
        osb_err_set(err, OSB_E_INVALID, "%s: %s not found next to %s (%s)", li->name, li->sibling,
                    found, cand);
        free(cand);
        return -1;
    }
    *out = cand;
    return 0;
}

static int find_bin(const struct lang_info *li, char **env, char **out, struct osb_err *err)
{
    const char *over = env_get(env, li->env_override);
    if (over && *over)
        return find_override(li, over, out, err);
    const char *path = env_get(env, "PATH");
    if (!path || !*path)
        path = DEFAULT_PATH;
    for (size_t i = 0; li->candidates[i]; i++) {
        _cleanup_free_ char *found = search_path(path, li->candidates[i]);
        if (found && !li->sibling) {
            *out = osb_steal_ptr(&found);
            return 0;
        }
        if (found)
            return find_sibling(li, found, out, err);
    }
    return osb_err_set(err, OSB_E_INVALID, "%s: %s%s%s not found in PATH (%s)", li->name,
                       li->candidates[0], li->candidates[1] ? " or " : "",
                       li->candidates[1] ? li->candidates[1] : "", path);
}

static bool ts_module_at(const char *dir, char **out)
{
    char *cand = osb_xasprintf("%s/typescript/lib/typescript.js", dir);
    if (access(cand, R_OK) == 0) {
        *out = cand;
        return true;
    }
    free(cand);
    return false;
}

/* The typescript compiler module (its lib/typescript.js), as require()
 * would find it from a global install. */
static int find_ts_module(char **env, char **out, struct osb_err *err)
{
    const char *over = env_get(env, "EXECD_TYPESCRIPT_MODULE");
    if (over && *over) {
        if (access(over, R_OK) == 0) {
            *out = osb_xstrdup(over);
            return 0;
        }
        return osb_err_set(err, OSB_E_INVALID,
                           "typescript: EXECD_TYPESCRIPT_MODULE=%s is not a readable file", over);
    }
    const char *np = env_get(env, "NODE_PATH");
    for (const char *p = np ? np : ""; *p;) {
        const char *end = strchrnul(p, ':');
        _cleanup_free_ char *dir = osb_xstrndup(p, (size_t)(end - p));
        if (*dir && ts_module_at(dir, out))
            return 0;
        p = *end ? end + 1 : end;
    }
    for (size_t i = 0; i < OSB_ARRAY_LEN(ts_dirs); i++)
        if (ts_module_at(ts_dirs[i], out))
            return 0;
    return osb_err_set(err, OSB_E_INVALID,
                       "typescript: node module 'typescript' not found (NODE_PATH=%s, "
                       "/usr/share/nodejs, /usr/lib/node_modules, ...; install node-typescript "
                       "or set EXECD_TYPESCRIPT_MODULE)",
                       np ? np : "");
}

static int find_in_env(enum osb_code_lang lang, char **env, struct osb_interp_prog *out,
                       struct osb_err *err)
{
    *out = (struct osb_interp_prog){0};
    if (find_bin(&langs[lang], env, &out->bin, err) < 0)
        return -1;
    if (lang == OSB_CODE_TYPESCRIPT && find_ts_module(env, &out->module, err) < 0) {
        osb_interp_prog_free(out);
        return -1;
    }
    return 0;
}

int osb_interp_find(const struct osb_execd *x, enum osb_code_lang lang, struct osb_interp_prog *out,
                    struct osb_err *err)
{
    char **env = osb_execd_env_build(x, NULL);
    int r = find_in_env(lang, env, out, err);
    osb_execd_env_free(env);
    return r;
}

void osb_interp_prog_free(struct osb_interp_prog *p)
{
    free(p->bin);
    free(p->module);
    *p = (struct osb_interp_prog){0};
}

/* ---- output ---- */

/* Length of the UTF-8 sequence at s (n bytes available): > 0 valid, 0
 * invalid, -1 cut short by the end of the data. */
static int utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], min;
    int len;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000;
    } else {
        return 0;
    }
    unsigned cp = c & (0x7fu >> len);
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return -1;
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Valid UTF-8 of data into out (U+FFFD for bad bytes). Unless `final`, an
 * incomplete sequence at the end goes back into the stream's carry. */
static int utf8_clean(struct stream *s, const unsigned char *data, size_t n, bool final,
                      struct osb_buf *out)
{
    size_t i = 0;
    while (i < n) {
        int len = utf8_seq(data + i, n - i);
        if (len < 0 && !final) {
            s->ncarry = n - i;
            memcpy(s->carry, data + i, s->ncarry);
            return 0;
        }
        if (len <= 0) {
            if (osb_buf_add(out, "\xef\xbf\xbd", 3) < 0)
                return -1;
            i++;
            continue;
        }
        if (osb_buf_add(out, data + i, (size_t)len) < 0)
            return -1;
        i += (size_t)len;
    }
    return 0;
}

static void on_hold_timer(uv_timer_t *t);

/* Hand the held text to the owner: now when `force`, at a line end or once
 * a chunk's worth is held, else within HOLD_MS. print("hi") writes "hi"
 * and "\n" separately; holding a moment makes that one event, as a Jupyter
 * kernel would send it, while a partial line still streams right away. */
static void deliver(struct stream *s, bool force)
{
    struct osb_interp *ip = s->ip;
    struct osb_buf *h = &s->hold;
    if (!h->len)
        return;
    if (!force && h->data[h->len - 1] != '\n' && h->len < READ_CHUNK) {
        if (!uv_is_active((uv_handle_t *)&s->timer))
            uv_timer_start(&s->timer, on_hold_timer, HOLD_MS, 0);
        return;
    }
    uv_timer_stop(&s->timer);
    size_t len;
    char *data = osb_buf_steal(h, &len);
    if (ip->cbs.on_output)
        ip->cbs.on_output(ip, s->id, data, len, ip->ud);
    free(data);
}

static void on_hold_timer(uv_timer_t *t)
{
    deliver(t->data, true);
}

/* Clean a read (after the carried bytes of the last one) into the hold. */
static void emit(struct stream *s, const unsigned char *data, size_t n, bool final)
{
    struct osb_interp *ip = s->ip;
    unsigned char buf[READ_CHUNK + sizeof s->carry];
    size_t len = s->ncarry;
    memcpy(buf, s->carry, len);
    if (n)
        memcpy(buf + len, data, n);
    len += n;
    s->ncarry = 0;
    if (ip->ready) {
        if (utf8_clean(s, buf, len, final, &s->hold) < 0)
            osb_warn("code: interpreter %d: output dropped (buffer full)", (int)ip->pid);
        deliver(s, final);
        return;
    }
    if (s->id != 2)
        return;
    /* Bounded below its limit by the consume after each read. */
    if (utf8_clean(s, buf, len, true, &ip->startup_err) < 0)
        osb_buf_reset(&ip->startup_err);
    if (ip->startup_err.len > STARTUP_STDERR_MAX)
        osb_buf_consume(&ip->startup_err, ip->startup_err.len - STARTUP_STDERR_MAX);
}

static void stream_eof(struct stream *s)
{
    if (!s->open)
        return;
    s->open = false;
    uv_poll_stop(&s->poll);
    emit(s, NULL, 0, true);
}

/* Read what is there now (one chunk, or everything when `all`). */
static void stream_read(struct stream *s, bool all)
{
    unsigned char buf[READ_CHUNK];
    while (s->open && !s->ip->closing) {
        ssize_t n = read(s->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            stream_eof(s);
            return;
        }
        emit(s, buf, (size_t)n, false);
        if (!all)
            return;
    }
}

static void on_stream(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct stream *s = h->data;
    if (status < 0) {
        stream_eof(s);
        return;
    }
    stream_read(s, false);
}

static void stream_watch(struct osb_interp *ip)
{
    struct stream *ss[2] = {&ip->out, &ip->err};
    for (int i = 0; i < 2; i++) {
        if (!ss[i]->open || ip->closing || ip->dead)
            continue;
        if (ip->paused)
            uv_poll_stop(&ss[i]->poll);
        else
            uv_poll_start(&ss[i]->poll, UV_READABLE, on_stream);
    }
}

/* All output written before a reply is in the pipes when the reply arrives:
 * take it now so it is delivered first. A character cut in half at the end
 * of a run is not held for the next one. */
static void drain_output(struct osb_interp *ip)
{
    struct stream *ss[2] = {&ip->out, &ip->err};
    for (int i = 0; i < 2 && !ip->closing; i++) {
        stream_read(ss[i], true);
        if (!ip->closing)
            emit(ss[i], NULL, 0, true);
    }
}

/* ---- control socket ---- */

static void ctl_update(struct osb_interp *ip);

/* The interpreter cannot be used: report why once, through on_ready. The
 * message ends with the tail of what it printed on stderr. */
static void fail_startup(struct osb_interp *ip, const char *why)
{
    struct osb_buf *se = &ip->startup_err;
    while (se->len && strchr("\r\n ", se->data[se->len - 1]))
        se->data[--se->len] = '\0';
    struct osb_err err = {0};
    osb_err_set(&err, OSB_E_INTERNAL, "%s interpreter %s%s%s", langs[ip->lang].name, why,
                se->len ? ": " : "", se->len ? se->data : "");
    ip->dead = true;
    uv_timer_stop(&ip->ready_timer);
    ip->cbs.on_ready(ip, &err, ip->ud);
}

static void handle_reply(struct osb_interp *ip, const char *line, size_t len)
{
    json_t *j = json_loadb(line, len, 0, NULL);
    if (!json_is_object(j)) {
        osb_warn("code: %s driver (pid %d) sent a bad control line", langs[ip->lang].name,
                 (int)ip->pid);
        json_decref(j);
        return;
    }
    if (json_is_true(json_object_get(j, "ready")) && !ip->ready) {
        const char *wd = json_string_value(json_object_get(j, "workdir"));
        if (wd && wd[0] == '/' && !ip->workdir)
            ip->workdir = osb_xstrdup(wd);
        ip->ready = true;
        uv_timer_stop(&ip->ready_timer);
        ip->cbs.on_ready(ip, NULL, ip->ud);
    } else if (json_is_true(json_object_get(j, "done")) && ip->ready) {
        drain_output(ip);
        if (!ip->closing)
            ip->cbs.on_done(ip, j, ip->ud);
    }
    json_decref(j);
}

/* Dispatch every complete line in ctl_in. */
static void ctl_lines(struct osb_interp *ip)
{
    size_t off = 0;
    char *nl;
    while (!ip->closing && off < ip->ctl_in.len &&
           (nl = memchr(ip->ctl_in.data + off, '\n', ip->ctl_in.len - off))) {
        size_t len = (size_t)(nl - (ip->ctl_in.data + off));
        handle_reply(ip, ip->ctl_in.data + off, len);
        off += len + 1;
    }
    if (!ip->closing)
        osb_buf_consume(&ip->ctl_in, off);
}

static void ctl_read(struct osb_interp *ip)
{
    char buf[READ_CHUNK];
    while (ip->ctl_open && !ip->closing) {
        ssize_t n = read(ip->ctl_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0 || osb_buf_add(&ip->ctl_in, buf, (size_t)n) < 0) {
            /* EOF, an error, or a runaway line: the process exit follows
             * (or is forced below) and reports the run's end. */
            if (n > 0)
                kill(-ip->pid, SIGKILL);
            ip->ctl_open = false;
            break;
        }
    }
    ctl_lines(ip);
}

static void ctl_write(struct osb_interp *ip)
{
    while (ip->ctl_out.len && ip->ctl_open) {
        ssize_t n = send(ip->ctl_fd, ip->ctl_out.data, ip->ctl_out.len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            osb_buf_reset(&ip->ctl_out);
            return;
        }
        osb_buf_consume(&ip->ctl_out, (size_t)n);
    }
}

static void on_ctl(uv_poll_t *h, int status, int events)
{
    struct osb_interp *ip = h->data;
    if (status < 0) {
        ip->ctl_open = false;
    } else {
        if (events & UV_WRITABLE)
            ctl_write(ip);
        if (events & UV_READABLE)
            ctl_read(ip);
    }
    if (!ip->closing)
        ctl_update(ip);
}

static void ctl_update(struct osb_interp *ip)
{
    int ev = 0;
    if (ip->ctl_open && !ip->dead)
        ev = UV_READABLE | (ip->ctl_out.len ? UV_WRITABLE : 0);
    if (ev)
        uv_poll_start(&ip->ctl_poll, ev, on_ctl);
    else
        uv_poll_stop(&ip->ctl_poll);
}

/* ---- process lifetime ---- */

static void describe_status(int wstatus, char *buf, size_t n)
{
    if (WIFSIGNALED(wstatus))
        snprintf(buf, n, "was killed by signal %d", WTERMSIG(wstatus));
    else
        snprintf(buf, n, "exited with status %d", WEXITSTATUS(wstatus));
}

static void on_child_exit(pid_t pid, int wstatus, void *ud)
{
    (void)pid;
    struct osb_interp *ip = ud;
    ip->pid_reaped = true;
    if (ip->dead)
        return;
    /* Replies and output still buffered are the run's last words. */
    ctl_read(ip);
    if (!ip->closing)
        drain_output(ip);
    if (ip->closing || ip->dead)
        return;
    if (!ip->ready) {
        char st[64], why[96];
        describe_status(wstatus, st, sizeof st);
        snprintf(why, sizeof why, "%s during startup", st);
        fail_startup(ip, why);
        return;
    }
    ip->dead = true;
    ctl_update(ip);
    ip->cbs.on_exit(ip, wstatus, ip->ud);
}

static void on_ready_timeout(uv_timer_t *t)
{
    struct osb_interp *ip = t->data;
    kill(-ip->pid, SIGKILL);
    char why[64];
    snprintf(why, sizeof why, "did not start within %d s", langs[ip->lang].ready_timeout_ms / 1000);
    fail_startup(ip, why);
}

/* A driver's work dir is removed on the thread pool (rm -rf blocks). */
struct rm_job {
    uv_work_t work;
    char *path;
};

static void rm_run(uv_work_t *w)
{
    struct rm_job *j = w->data;
    struct osb_err err = {0};
    if (osb_fs_tree_remove(j->path, &err) < 0)
        osb_warn("code: removing %s: %s", j->path, err.msg);
}

static void rm_done(uv_work_t *w, int status)
{
    (void)status;
    struct rm_job *j = w->data;
    free(j->path);
    free(j);
}

static void remove_workdir(uv_loop_t *loop, char *path)
{
    struct rm_job *j = osb_xcalloc(1, sizeof *j);
    j->path = path;
    j->work.data = j;
    if (uv_queue_work(loop, &j->work, rm_run, rm_done) < 0)
        rm_done(&j->work, 0);
}

static void on_handle_closed(uv_handle_t *h)
{
    struct osb_interp *ip = h->data;
    if (--ip->handles > 0)
        return;
    if (ip->workdir)
        remove_workdir(ip->x->loop, ip->workdir);
    close(ip->out.fd);
    close(ip->err.fd);
    close(ip->ctl_fd);
    osb_buf_free(&ip->ctl_in);
    osb_buf_free(&ip->ctl_out);
    osb_buf_free(&ip->startup_err);
    osb_buf_free(&ip->out.hold);
    osb_buf_free(&ip->err.hold);
    free(ip);
}

void osb_interp_free(struct osb_interp *ip)
{
    if (!ip || ip->closing)
        return;
    ip->closing = true;
    /* The group outlives its leader while background jobs run in it, and
     * its id cannot be reused until the last member is gone. */
    kill(-ip->pid, SIGKILL);
    if (!ip->pid_reaped)
        osb_execd_unwatch_child(ip->x, ip->pid);
    ip->out.poll.data = ip->err.poll.data = ip;
    ip->out.timer.data = ip->err.timer.data = ip;
    uv_close((uv_handle_t *)&ip->out.poll, on_handle_closed);
    uv_close((uv_handle_t *)&ip->err.poll, on_handle_closed);
    uv_close((uv_handle_t *)&ip->out.timer, on_handle_closed);
    uv_close((uv_handle_t *)&ip->err.timer, on_handle_closed);
    uv_close((uv_handle_t *)&ip->ctl_poll, on_handle_closed);
    uv_close((uv_handle_t *)&ip->ready_timer, on_handle_closed);
}

/* ---- start ---- */

static void argv_for(enum osb_code_lang lang, const struct osb_interp_prog *prog, const char *fd,
                     const char *src, const char *argv[10])
{
    int i = 0;
    argv[i++] = prog->bin;
    switch (lang) {
    case OSB_CODE_GO: /* src: the cache key of the driver's source */
        argv[0] = "/bin/sh";
        argv[i++] = "-c";
        argv[i++] = osb_code_driver_go_sh;
        argv[i++] = "osb-go";
        argv[i++] = prog->bin;
        argv[i++] = src;
        argv[i++] = osb_code_driver_go;
        break;
    case OSB_CODE_PYTHON:
        argv[i++] = "-u";
        argv[i++] = "-c";
        argv[i++] = osb_code_driver_python;
        break;
    case OSB_CODE_JAVASCRIPT:
    case OSB_CODE_TYPESCRIPT:
        argv[i++] = "--expose-internals";
        argv[i++] = "-e";
        argv[i++] = osb_code_driver_javascript;
        break;
    case OSB_CODE_JAVA:
        /* Source level 11: any JDK from 11 on runs the driver. */
        argv[i++] = "-XX:+UseSerialGC";
        argv[i++] = "--source";
        argv[i++] = "11";
        argv[i++] = src;
        break;
    case OSB_CODE_BASH:
    default:
        argv[i++] = "--norc";
        argv[i++] = "--noprofile";
        argv[i++] = "-c";
        argv[i++] = osb_code_driver_bash;
        argv[i++] = "bash";
        break;
    }
    argv[i++] = fd;
    if (prog->module)
        argv[i++] = prog->module;
    argv[i] = NULL;
}

/* The java driver's source in an inheritable memfd (the launcher wants a
 * file; this needs no writable directory and leaves nothing behind). */
static int java_source_fd(struct osb_err *err)
{
    int fd = memfd_create("osb-java-driver", 0);
    if (fd < 0)
        return osb_err_sys(err, "memfd for the java driver");
    const char *p = osb_code_driver_java;
    size_t left = strlen(p);
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            osb_err_sys(err, "write the java driver");
            close(fd);
            return -1;
        }
        p += n, left -= (size_t)n;
    }
    return fd;
}

struct fds {
    int out[2], err[2], ctl[2];
};

static void fds_close(struct fds *f)
{
    int *all[] = {f->out, f->err, f->ctl};
    for (size_t i = 0; i < OSB_ARRAY_LEN(all); i++)
        for (int k = 0; k < 2; k++)
            if (all[i][k] >= 0)
                close(all[i][k]);
}

static int fds_open(struct fds *f, struct osb_err *err)
{
    *f = (struct fds){{-1, -1}, {-1, -1}, {-1, -1}};
    if (pipe2(f->out, O_CLOEXEC) < 0 || pipe2(f->err, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f->ctl) < 0) {
        osb_err_sys(err, "code context pipes");
        fds_close(f);
        return -1;
    }
    return 0;
}

/* Fork the interpreter with the driver; the child's end of the control
 * socket is an inheritable duplicate that exists only across the fork (the
 * loop is single-threaded, so no other child can pick it up). java gets it
 * as its stdin instead. */
static pid_t spawn_interp(struct osb_execd *x, enum osb_code_lang lang,
                          const struct osb_interp_prog *prog, char **env, const char *cwd,
                          struct fds *f, struct osb_err *err)
{
    bool java = lang == OSB_CODE_JAVA;
    _cleanup_close_ int child_ctl = java ? -1 : fcntl(f->ctl[1], F_DUPFD, 3);
    if (!java && child_ctl < 0)
        return osb_err_sys(err, "dup control socket");
    _cleanup_close_ int src = java ? java_source_fd(err) : -1;
    if (java && src < 0)
        return -1;
    char fdstr[16], srcpath[32];
    snprintf(fdstr, sizeof fdstr, "%d", java ? 0 : child_ctl);
    if (lang == OSB_CODE_GO)
        osb_code_driver_go_key(srcpath);
    else
        snprintf(srcpath, sizeof srcpath, "/proc/self/fd/%d", src);
    const char *argv[10];
    argv_for(lang, prog, fdstr, srcpath, argv);
    struct osb_spawn sp = {.argv = argv,
                           .envp = (const char *const *)env,
                           .cwd = cwd,
                           .stdin_fd = java ? f->ctl[1] : -1,
                           .stdout_fd = f->out[1],
                           .stderr_fd = f->err[1],
                           .ctty_fd = -1};
    pid_t pid = osb_execd_spawn(x, &sp, err);
    if (pid < 0)
        osb_err_wrap(err, "start %s interpreter", langs[lang].name);
    return pid;
}

static void stream_init(struct osb_interp *ip, struct stream *s, int fd, int id)
{
    *s = (struct stream){.fd = fd, .id = id, .open = true, .ip = ip};
    uv_poll_init(ip->x->loop, &s->poll, fd);
    s->poll.data = s;
    uv_timer_init(ip->x->loop, &s->timer);
    s->timer.data = s;
    osb_buf_init(&s->hold, SIZE_MAX);
}

static struct osb_interp *interp_new(struct osb_execd *x, enum osb_code_lang lang, pid_t pid,
                                     struct fds *f, const struct osb_interp_cbs *cbs, void *ud)
{
    struct osb_interp *ip = osb_xcalloc(1, sizeof *ip);
    ip->x = x;
    ip->lang = lang;
    ip->pid = pid;
    ip->cbs = *cbs;
    ip->ud = ud;
    stream_init(ip, &ip->out, osb_steal_fd(&f->out[0]), 1);
    stream_init(ip, &ip->err, osb_steal_fd(&f->err[0]), 2);
    ip->ctl_fd = osb_steal_fd(&f->ctl[0]);
    ip->ctl_open = true;
    uv_poll_init(x->loop, &ip->ctl_poll, ip->ctl_fd);
    ip->ctl_poll.data = ip;
    uv_timer_init(x->loop, &ip->ready_timer);
    ip->ready_timer.data = ip;
    ip->handles = 6;
    osb_buf_init(&ip->ctl_in, CTL_LINE_MAX);
    osb_buf_init(&ip->ctl_out, SIZE_MAX);
    osb_buf_init(&ip->startup_err, 4 * STARTUP_STDERR_MAX + 4 * READ_CHUNK);
    return ip;
}

int osb_interp_start(struct osb_execd *x, enum osb_code_lang lang, const char *cwd,
                     const struct osb_interp_cbs *cbs, void *ud, struct osb_interp **out,
                     struct osb_err *err)
{
    char **env = osb_execd_env_build(x, NULL);
    struct osb_interp_prog prog = {0};
    struct fds f;
    pid_t pid = -1;
    if (find_in_env(lang, env, &prog, err) == 0 && fds_open(&f, err) == 0) {
        pid = spawn_interp(x, lang, &prog, env, cwd, &f, err);
        if (pid < 0)
            fds_close(&f);
    }
    osb_interp_prog_free(&prog);
    osb_execd_env_free(env);
    if (pid < 0)
        return -1;
    struct osb_interp *ip = interp_new(x, lang, pid, &f, cbs, ud);
    fds_close(&f); /* the child's ends */
    osb_execd_watch_child(x, pid, on_child_exit, ip);
    stream_watch(ip);
    ctl_update(ip);
    uv_timer_start(&ip->ready_timer, on_ready_timeout, langs[lang].ready_timeout_ms, 0);
    *out = ip;
    return 0;
}

/* ---- runs ---- */

int osb_interp_run(struct osb_interp *ip, const char *code, size_t len, struct osb_err *err)
{
    size_t before = ip->ctl_out.len;
    bool full;
    if (ip->lang == OSB_CODE_BASH) {
        /* bash reads up to a NUL, and a bash string cannot hold one. */
        full = osb_buf_add(&ip->ctl_out, code, strnlen(code, len)) < 0 ||
               osb_buf_add(&ip->ctl_out, "", 1) < 0;
    } else {
        json_t *req = json_object();
        json_object_set_new(req, "code", json_stringn_nocheck(code, len));
        json_object_set_new(req, "sigints", json_integer(ip->sigints));
        size_t n;
        char *s = osb_json_dump(req, &n);
        full = osb_buf_add(&ip->ctl_out, s, n) < 0 || osb_buf_add(&ip->ctl_out, "\n", 1) < 0;
        free(s);
        json_decref(req);
    }
    if (full) {
        ip->ctl_out.len = before; /* nothing of this run goes out */
        return osb_err_set(err, OSB_E_TOOBIG, "the code does not fit the interpreter's queue");
    }
    ctl_write(ip);
    ctl_update(ip);
    return 0;
}

void osb_interp_interrupt(struct osb_interp *ip)
{
    if (ip->dead)
        return;
    ip->sigints++;
    kill(-ip->pid, SIGINT);
}

void osb_interp_pause_output(struct osb_interp *ip, bool paused)
{
    if (ip->paused == paused)
        return;
    ip->paused = paused;
    stream_watch(ip);
}

pid_t osb_interp_pid(const struct osb_interp *ip)
{
    return ip->pid;
}

void osb_interp_set_owner(struct osb_interp *ip, const struct osb_interp_cbs *cbs, void *ud)
{
    ip->cbs = *cbs;
    ip->ud = ud;
}
