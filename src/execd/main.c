/* execd: the in-sandbox daemon, usually PID 1 of the sandbox.
 *
 *   execd [--port N] [--unix PATH | --listen-fd N] [--access-token T] [-- ENTRYPOINT...]
 *
 * PID 1 duties: start the entrypoint as a child, reap every zombie (orphans
 * are re-parented to us), forward SIGTERM/SIGINT to the entrypoint, and keep
 * serving after it exits. With no entrypoint running, SIGTERM/SIGINT stop
 * execd. With --report-fd (the sandbox runtime), the entrypoint is the
 * sandbox's main process, as a container's: when it exits or cannot be
 * executed, execd writes one line (common/endreport.h) on its report pipe
 * and the runtime ends the sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/endreport.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/random.h"
#include "common/version.h"
#include "common/xalloc.h"
#include "execd/claim.h"
#include "execd/execd.h"
#include "execd/idle.h"
#include "execd/pool.h"
#include "execd/spawn.h"
#include "execd/cmd_util.h"
#include "execd/users.h"

#define DEFAULT_PORT 44772
#define TOKEN_HEADER "X-EXECD-ACCESS-TOKEN"

/* The write end of the report pipe, or -1 (no --report-fd). */
struct pid1 {
    struct osb_execd *x;
    int report_fd;
    bool keep_running; /* a claimed pool member's keep-alive entrypoint: no report */
};

/* The runtime holds a copy of the read end (taken from our fd table with
 * pidfd_getfd), reads the line and stops the sandbox, execd with it: so
 * execd stays until then rather than exit and take the read end with it
 * before the runtime had a chance to take its copy. */
static void report_end(struct pid1 *p, enum osb_end_kind kind, int value)
{
    if (p->report_fd < 0 || p->keep_running)
        return;
    char line[OSB_ENDREPORT_MAX];
    struct osb_endreport r = {kind, value};
    int n = osb_endreport_format(&r, line, sizeof line);
    if (n < 0 || OSB_RETRY(write(p->report_fd, line, (size_t)n)) != n)
        osb_err_log("report the entrypoint's end to the runtime: %s", strerror(errno));
    else
        osb_info("reported the entrypoint's end to the runtime; the sandbox ends");
    close(p->report_fd);
    p->report_fd = -1;
}

static void on_entrypoint_exit(pid_t pid, int status, void *ud)
{
    (void)pid;
    struct pid1 *p = ud;
    p->x->entrypoint_pid = 0;
    if (WIFEXITED(status)) {
        osb_info("entrypoint exited with status %d", WEXITSTATUS(status));
        report_end(ud, OSB_END_EXITED, WEXITSTATUS(status));
    } else {
        osb_info("entrypoint killed by signal %d", WTERMSIG(status));
        report_end(ud, OSB_END_SIGNALED, WTERMSIG(status));
    }
}

static void on_term(uv_signal_t *h, int sig)
{
    struct osb_execd *x = h->data;
    if (x->entrypoint_pid > 0) {
        osb_info("forwarding signal %d to the entrypoint (pid %d)", sig, x->entrypoint_pid);
        kill(x->entrypoint_pid, sig);
        return;
    }
    osb_info("signal %d: shutting down", sig);
    uv_stop(h->loop);
}

static bool check_token(struct osb_http_req *req, void *ud)
{
    const char *want = ud;
    const char *got = osb_http_req_header(req, TOKEN_HEADER);
    if (got && osb_secret_eq(got, want))
        return true;
    /* Upstream's body is {"error": ...}; code and message make it the
     * {code,message} shape every other error has. */
    static const char body[] =
        "{\"code\":\"UNAUTHORIZED\",\"message\":\"invalid or missing header "
        "X-EXECD-ACCESS-TOKEN\",\"error\":\"Unauthorized: invalid or missing header "
        "X-EXECD-ACCESS-TOKEN\"}";
    osb_http_respond(req, 401, "application/json; charset=utf-8", body, sizeof body - 1);
    return false;
}

static void h_ping(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond_empty(req, 200);
}

/* Chromium's DevTools HTTP and WebSocket routes (/json..., /devtools/...). */
static bool devtools_path(const char *rest)
{
    return rest && (strcmp(rest, "json") == 0 || strncmp(rest, "json/", 5) == 0 ||
                    strncmp(rest, "devtools/", 9) == 0);
}

/* /proxy/{port}/{rest} -> http://127.0.0.1:{port}/{rest}?{query} */
static void h_proxy(struct osb_http_req *req, void *ud)
{
    (void)ud;
    const char *p = osb_http_req_param(req, "port"), *rest = osb_http_req_param(req, "rest");
    char *end;
    long port = strtol(p, &end, 10);
    if (*end || port < 1 || port > 65535) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "invalid proxy port '%s'", p);
        return;
    }
    const char *t = osb_http_req_target(req), *q = strchr(t, '?');
    char *target = osb_xasprintf("/%s%s", rest ? rest : "", q ? q : "");
    /* The app behind the port must never see execd's token. A browser's
     * DevTools server refuses any Host but localhost or an IP literal
     * (DNS-rebinding protection), and builds its socket URLs from it: those
     * routes get the address execd dials, which the lifecycle server's
     * proxy knows to rewrite. Other apps keep the client's Host, as
     * upstream's execd does (X-Forwarded-Host carries it either way). */
    static const char *const drop[] = {TOKEN_HEADER, NULL};
    static const char *const drop_host[] = {TOKEN_HEADER, "Host", NULL};
    bool devtools = devtools_path(rest);
    char host[32];
    snprintf(host, sizeof host, "127.0.0.1:%ld", port);
    const char *extra[] = {"Host", host, NULL};
    struct osb_http_upstream up = {
        .host = "127.0.0.1", .port = (int)port, .drop_headers = devtools ? drop_host : drop};
    osb_http_proxy(req, &up, target, devtools ? extra : NULL);
    free(target);
}

static const struct osb_http_route core_routes[] = {
    {"GET", "/ping", h_ping, OSB_ROUTE_PUBLIC | OSB_ROUTE_NO_BODY, NULL},
    {NULL, "/proxy/:port/*rest", h_proxy, OSB_ROUTE_STREAM_BODY, NULL},
    {NULL, "/proxy/:port", h_proxy, OSB_ROUTE_STREAM_BODY, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: execd [--port N] [--unix PATH] [--access-token TOKEN] [-- ENTRYPOINT...]\n"
               "  --port N            TCP port on 0.0.0.0 (default 44772; 0 disables TCP)\n"
               "  --listen HOST       TCP address (default 0.0.0.0)\n"
               "  --unix PATH         also listen on a unix socket\n"
               "  --listen-fd N       also listen on fd N, a bound unix socket (instead of\n"
               "                      --unix; the sandbox runtime passes the server's one)\n"
               "  --access-token T    require header X-EXECD-ACCESS-TOKEN (or env "
               "EXECD_ACCESS_TOKEN)\n"
               "  --ready-fd N        write a byte to fd N once listening, then close it\n"
               "  --workdir DIR       working directory of the entrypoint and default of every\n"
               "                      command (created if missing, as Docker's WORKDIR)\n"
               "  --user USER[:GROUP] default user of the entrypoint and commands (names from\n"
               "                      the image's /etc/passwd and /etc/group, or numbers)\n"
               "  --keep-fd N         keep fd N open for the runtime, out of children's reach\n"
               "                      (repeatable)\n"
               "  --report-fd N       put the read end of a new pipe at fd N (must be free) and\n"
               "                      write one line there when the entrypoint ends (see\n"
               "                      docs/execd.md)\n"
               "  --report-to-fd N    write that line on fd N instead, an open write end whose\n"
               "                      reader is the runtime (gVisor: a host FIFO as stdin); fd N\n"
               "                      becomes /dev/null, so no child inherits it\n"
               "  --cpus N            the CPU limit the runtime enforces (e.g. 0.5), for\n"
               "                      /metrics when no cgroup in the sandbox shows it (gVisor)\n"
               "  --memory BYTES      the same for the memory limit\n"
               "  --version           print the version and exit\n");
}

#define MAX_KEEP_FDS 4

struct opts {
    int port, ready_fd, listen_fd, n_keep, report_fd, report_to_fd;
    const char *host, *unix_path, *token, *workdir, *user;
    double cpus;        /* --cpus; 0: none given */
    uint64_t mem_bytes; /* --memory; 0: none given */
    char **entry;
};

/* An inherited fd (>= 3) made close-on-exec: no child may inherit it. */
static int fd_arg(const char *arg, const char *opt)
{
    char *end;
    long fd = strtol(arg, &end, 10);
    if (*end || fd < 3 || fd > 1 << 20 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) {
        fprintf(stderr, "execd: invalid %s '%s'\n", opt, arg);
        return -1;
    }
    return (int)fd;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"port", required_argument, NULL, 'p'},
        {"unix", required_argument, NULL, 'u'},
        {"listen", required_argument, NULL, 'l'},
        {"access-token", required_argument, NULL, 't'},
        {"ready-fd", required_argument, NULL, 'r'},
        {"workdir", required_argument, NULL, 'w'},
        {"user", required_argument, NULL, 'U'},
        {"keep-fd", required_argument, NULL, 'k'},
        {"listen-fd", required_argument, NULL, 'L'},
        {"report-fd", required_argument, NULL, 'R'},
        {"report-to-fd", required_argument, NULL, 'T'},
        {"cpus", required_argument, NULL, 'C'},
        {"memory", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *o = (struct opts){.port = DEFAULT_PORT,
                       .host = "0.0.0.0",
                       .ready_fd = -1,
                       .listen_fd = -1,
                       .report_fd = -1,
                       .report_to_fd = -1,
                       .token = getenv("EXECD_ACCESS_TOKEN")};
    int ch;
    char *end;
    while ((ch = getopt_long(argc, argv, "+p:u:l:t:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            o->port = (int)strtol(optarg, &end, 10);
            if (*end || o->port < 0 || o->port > 65535) {
                fprintf(stderr, "execd: invalid --port '%s'\n", optarg);
                return -1;
            }
            break;
        case 'u': o->unix_path = optarg; break;
        case 'l': o->host = optarg; break;
        case 't': o->token = optarg; break;
        case 'r':
            o->ready_fd = (int)strtol(optarg, &end, 10);
            if (*end || o->ready_fd < 0) {
                fprintf(stderr, "execd: invalid --ready-fd '%s'\n", optarg);
                return -1;
            }
            /* No child may inherit it. */
            fcntl(o->ready_fd, F_SETFD, FD_CLOEXEC);
            break;
        case 'w': o->workdir = optarg; break;
        case 'U': o->user = optarg; break;
        case 'k':
            if (fd_arg(optarg, "--keep-fd") < 0 || ++o->n_keep > MAX_KEEP_FDS)
                return -1;
            break;
        case 'L':
            if ((o->listen_fd = fd_arg(optarg, "--listen-fd")) < 0)
                return -1;
            break;
        case 'R':
            o->report_fd = (int)strtol(optarg, &end, 10);
            /* A slot already in use would be clobbered: refuse it. */
            if (*end || o->report_fd < 3 || fcntl(o->report_fd, F_GETFD) >= 0) {
                fprintf(stderr, "execd: invalid --report-fd '%s' (a free fd >= 3)\n", optarg);
                return -1;
            }
            break;
        case 'T':
            o->report_to_fd = (int)strtol(optarg, &end, 10);
            if (*end || o->report_to_fd < 0 || fcntl(o->report_to_fd, F_GETFD) < 0) {
                fprintf(stderr, "execd: invalid --report-to-fd '%s' (an open fd)\n", optarg);
                return -1;
            }
            break;
        case 'C':
            o->cpus = strtod(optarg, &end);
            if (*end || end == optarg || !(o->cpus > 0 && o->cpus <= 1024)) {
                fprintf(stderr, "execd: invalid --cpus '%s' (a number of CPUs, 0 to 1024)\n",
                        optarg);
                return -1;
            }
            break;
        case 'M':
            errno = 0;
            o->mem_bytes = strtoull(optarg, &end, 10);
            if (*end || end == optarg || errno || !o->mem_bytes || *optarg == '-') {
                fprintf(stderr, "execd: invalid --memory '%s' (bytes)\n", optarg);
                return -1;
            }
            break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("execd %s\n", osb_version()); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (o->token && !*o->token)
        o->token = NULL;
    /* The token guards the sandbox from outside; processes inside it must
     * not inherit it. getenv's pointer dies with unsetenv: keep a copy. */
    if (o->token)
        o->token = osb_xstrdup(o->token);
    /* unsetenv only unlinks the string: its bytes stay in the environment
     * block /proc/1/environ shows (gVisor lets root inside read it). */
    char *v = getenv("EXECD_ACCESS_TOKEN");
    if (v)
        memset(v, 0, strlen(v));
    unsetenv("EXECD_ACCESS_TOKEN");
    o->entry = optind < argc ? argv + optind : NULL;
    return 0;
}

static void start_entrypoint(char **argv, struct pid1 *p)
{
    struct osb_spawn sp = {.argv = (const char *const *)argv,
                           .stdin_fd = 0,
                           .stdout_fd = 1,
                           .stderr_fd = 2,
                           .ctty_fd = -1};
    struct osb_err err = {0};
    pid_t pid = osb_execd_spawn(p->x, &sp, &err);
    if (pid < 0) {
        osb_err_log("entrypoint: %s", err.msg);
        report_end(p, OSB_END_EXEC_FAILED, err.sys_errno > 0 ? err.sys_errno : EIO);
        return;
    }
    p->x->entrypoint_pid = pid;
    osb_execd_watch_child(p->x, pid, on_entrypoint_exit, p);
}

/* A claimed pool member's entrypoint (execd/claim.h). */
static void start_claimed(char **argv, bool keep_running, void *ud)
{
    struct pid1 *p = ud;
    p->keep_running = keep_running;
    osb_info("claimed: starting the entrypoint %s", argv[0]);
    start_entrypoint(argv, p);
}

/* The report pipe: its read end at fd n for the runtime (close-on-exec,
 * and execd non-dumpable so no process in the sandbox reaches it through
 * /proc/1/fd); execd keeps the write end. */
static int open_report(int n, struct pid1 *p)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0 || dup3(fds[0], n, O_CLOEXEC) < 0) {
        osb_err_log("report pipe at fd %d: %s", n, strerror(errno));
        return -1;
    }
    close(fds[0]);
    p->report_fd = fds[1];
    prctl(PR_SET_DUMPABLE, 0);
    return 0;
}

/* The runtime's write end at fd n: moved out of every child's reach
 * (close-on-exec, n itself /dev/null); execd is made non-dumpable as with
 * open_report. A second copy stays open for execd's life: a FIFO's
 * content lives only while someone holds it, and the line must outlast a
 * moment with no reader (the server restarting). */
static int take_report(int n, struct pid1 *p)
{
    int fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
    int hold = fd < 0 ? -1 : fcntl(n, F_DUPFD_CLOEXEC, 3);
    int null = hold < 0 ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(null, n) < 0) {
        osb_err_log("report fd %d: %s", n, strerror(errno));
        return -1;
    }
    close(null);
    p->report_fd = fd;
    prctl(PR_SET_DUMPABLE, 0);
    return 0;
}

/* "uid[:gid]" or "name[:group]" against the image's own files; the group
 * defaults to the user's primary one, as Docker's --user. */
static int resolve_user(const char *spec, uid_t *uid, gid_t *gid)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    char *grp = strchr(buf, ':');
    if (grp)
        *grp++ = '\0';
    char *end;
    unsigned long n = strtoul(buf, &end, 10);
    if (*buf && !*end)
        *uid = (uid_t)n;
    else if (osb_users_uid(buf, uid) < 0)
        return -1;
    if (!grp || !*grp) {
        *gid = osb_cmd_primary_gid(*uid);
        return 0;
    }
    n = strtoul(grp, &end, 10);
    if (!*end) {
        *gid = (gid_t)n;
        return 0;
    }
    return osb_users_gid(grp, gid);
}

/* The image's WORKDIR and USER (--workdir, --user). */
static int apply_image_defaults(struct osb_execd *x, const struct opts *o)
{
    struct osb_err err = {0};
    if (o->workdir) {
        if (osb_mkdir_p(o->workdir, 0755, &err) < 0 || chdir(o->workdir) < 0) {
            osb_err_log("workdir %s: %s", o->workdir, err.msg[0] ? err.msg : strerror(errno));
            return -1;
        }
        setenv("PWD", o->workdir, 1);
    }
    if (o->user) {
        uid_t uid;
        gid_t gid;
        if (resolve_user(o->user, &uid, &gid) < 0) {
            osb_err_log("user %s: no such user or group in the image's /etc/passwd or /etc/group",
                        o->user);
            return -1;
        }
        if (uid != 0 || gid != 0)
            osb_execd_spawn_default_user(x, uid, gid);
    }
    /* The runtime's fds (--keep-fd, --listen-fd) and execd's memory stay
     * out of reach of root in the sandbox: /proc/1/fd and ptrace need
     * dumpable. */
    if (o->n_keep > 0 || o->listen_fd >= 0)
        prctl(PR_SET_DUMPABLE, 0);
    return 0;
}

static int listen_all(struct osb_execd *x, const struct opts *o)
{
    struct osb_err err = {0};
    if (o->port > 0 && osb_http_listen_tcp(x->http, o->host, o->port, &err) < 0) {
        osb_err_log("%s", err.msg);
        return -1;
    }
    if (o->unix_path && osb_http_listen_unix(x->http, o->unix_path, &err) < 0) {
        osb_err_log("%s", err.msg);
        return -1;
    }
    if (o->listen_fd >= 0 && osb_http_listen_unix_fd(x->http, o->listen_fd, &err) < 0) {
        osb_err_log("%s", err.msg);
        return -1;
    }
    if (o->port <= 0 && !o->unix_path && o->listen_fd < 0) {
        osb_err_log("nothing to listen on: --port 0 and no --unix or --listen-fd");
        return -1;
    }
    return 0;
}

static void add_routes(struct osb_execd *x, const char *token)
{
    x->http = osb_http_server_new(x->loop);
    osb_http_server_set_invalid_code(x->http, "INVALID_REQUEST_BODY");
    if (token)
        osb_http_server_set_auth(x->http, check_token, (void *)token);
    osb_http_server_add_routes(x->http, core_routes, OSB_ARRAY_LEN(core_routes));
    osb_execd_command_routes(x);
    osb_execd_session_routes(x);
    osb_execd_code_routes(x);
    osb_execd_interrupt_routes(x);
    osb_execd_files_routes(x);
    osb_execd_metrics_routes(x);
    osb_execd_pty_routes(x);
    osb_execd_desktop_routes(x);
    osb_execd_status_map(x);
}

int main(int argc, char **argv)
{
    if (osb_execd_idle_argv((const char *const *)argv))
        osb_execd_idle_run();
    struct opts o;
    osb_log_init("execd");
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    /* The one execd context; every module reaches its state through it.
     * Static: libuv's exit-time cleanup still walks the loop's handles (the
     * context holds some) after main returns. */
    static struct osb_execd execd;
    execd = (struct osb_execd){.loop = uv_default_loop(),
                               .access_token = o.token,
                               .cpu_limit = o.cpus,
                               .mem_limit = o.mem_bytes};
    osb_execd_raise_nofile(&execd);
    osb_execd_pool_prepare(&execd);
    add_routes(&execd, o.token);

    static uv_signal_t sigterm, sigint;
    osb_execd_reaper_start(&execd);
    uv_signal_init(execd.loop, &sigterm);
    uv_signal_init(execd.loop, &sigint);
    sigterm.data = sigint.data = &execd;
    uv_signal_start(&sigterm, on_term, SIGTERM);
    uv_signal_start(&sigint, on_term, SIGINT);

    struct pid1 p1 = {.x = &execd, .report_fd = -1};
    bool deferred = osb_execd_claim_deferred();
    if (deferred)
        osb_execd_claim_routes(&execd, o.entry, start_claimed, &p1);
    if (apply_image_defaults(&execd, &o) < 0 || listen_all(&execd, &o) < 0 ||
        (o.report_fd >= 0 && open_report(o.report_fd, &p1) < 0) ||
        (o.report_to_fd >= 0 && take_report(o.report_to_fd, &p1) < 0))
        return 1;
    if (o.ready_fd >= 0) {
        ssize_t w = write(o.ready_fd, "1", 1);
        (void)w;
        close(o.ready_fd);
    }
    if (o.entry && !deferred)
        start_entrypoint(o.entry, &p1);
    osb_info("listening on port %d%s%s%s (pid %d)", o.port, o.unix_path ? " and unix:" : "",
             o.unix_path ? o.unix_path : "", o.listen_fd >= 0 ? " and the runtime's socket" : "",
             getpid());
    uv_run(execd.loop, UV_RUN_DEFAULT);
    osb_cmd_tmpdir_remove(&execd);
    return 0;
}
