/* execd: the in-sandbox daemon. Each feature module registers its routes
 * with the shared HTTP server; all run on one libuv loop. struct osb_execd
 * is the one context: main() owns the instance, every module reaches the
 * loop and its own state through it (no module keeps state of its own). */
#ifndef OSB_EXECD_H
#define OSB_EXECD_H
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <uv.h>

#include "common/err.h"
#include "http/http.h"

struct osb_execd_watch;
/* Each feature module's state, private to its .c file. */
struct osb_execd_commands;
struct osb_execd_sessions;
struct osb_execd_code;
struct osb_execd_ptys;
struct osb_execd_metrics;
struct osb_execd_desktop;

struct osb_execd {
    uv_loop_t *loop;
    struct osb_http_server *http;
    const char *access_token; /* NULL: no auth */
    pid_t entrypoint_pid;     /* 0 if none */
    /* children.c: pids registered with osb_execd_watch_child */
    struct osb_execd_watch *watches;
    uv_signal_t sigchld;
    /* pool.c: the thread pool, started on first need */
    uv_work_t pool_work;
    bool pool_prepared, pool_started;
    /* envhide.c: a variable execd set for itself, kept from children */
    const char *hidden_env;
    /* spawn.c */
    struct rlimit orig_nofile; /* given back to children when raised */
    bool nofile_raised;
    bool has_default_user; /* the image's USER (--user) */
    double cpu_limit;      /* --cpus: the runtime's CPU limit; 0: none given */
    uint64_t mem_limit;    /* --memory: the runtime's memory limit in bytes; 0: none */
    uid_t default_uid;
    gid_t default_gid;
    char *child_stack; /* clone()'s stack, allocated on first spawn */
    /* cmd_util.c: the private temporary directory, NULL until first use */
    char *tmpdir;
    /* Feature modules, set up by their *_routes function. */
    struct osb_execd_commands *commands;
    struct osb_execd_sessions *sessions;
    struct osb_execd_code *code;
    struct osb_execd_ptys *ptys;
    struct osb_execd_metrics *metrics;
    struct osb_execd_desktop *desktop;
};

/* Route registration, one per feature module (see main.c). */
void osb_execd_command_routes(struct osb_execd *x);   /* command.c: /command* */
void osb_execd_session_routes(struct osb_execd *x);   /* session.c: /session* */
void osb_execd_code_routes(struct osb_execd *x);      /* code.c: /code* */
void osb_execd_files_routes(struct osb_execd *x);     /* files.c: /files*, /directories* */
void osb_execd_metrics_routes(struct osb_execd *x);   /* metrics.c: /metrics* */
void osb_execd_pty_routes(struct osb_execd *x);       /* pty.c: /pty* */
void osb_execd_desktop_routes(struct osb_execd *x);   /* desktop.c: /desktop* */
void osb_execd_interrupt_routes(struct osb_execd *x); /* interrupt.c: DELETE /command, /code */
/* Error statuses as execd-api.yaml lists them per route (errmap.c). */
void osb_execd_status_map(struct osb_execd *x);

/* Child reaping is owned by main.c (execd may be PID 1 and must reap
 * orphans). Modules that spawn processes register their pids here and are
 * told the wait status; they must not call waitpid themselves. */
typedef void (*osb_execd_exit_cb)(pid_t pid, int wstatus, void *ud);
void osb_execd_watch_child(struct osb_execd *x, pid_t pid, osb_execd_exit_cb cb, void *ud);
void osb_execd_unwatch_child(struct osb_execd *x, pid_t pid);
/* Start reaping (SIGCHLD on x->loop; children.c). */
void osb_execd_reaper_start(struct osb_execd *x);
#endif
