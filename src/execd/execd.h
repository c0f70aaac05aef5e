/* execd: the in-sandbox daemon. Each feature module registers its routes
 * with the shared HTTP server; all run on one libuv loop. */
#ifndef OSB_EXECD_H
#define OSB_EXECD_H
#include <sys/types.h>
#include <uv.h>

#include "http/http.h"

struct osb_execd {
    uv_loop_t *loop;
    struct osb_http_server *http;
    const char *access_token; /* NULL: no auth */
    pid_t entrypoint_pid;     /* 0 if none */
};

/* Route registration, one per feature module (see main.c). */
void osb_execd_command_routes(struct osb_execd *x);  /* command.c: /command* */
void osb_execd_session_routes(struct osb_execd *x);  /* session.c: /session* */
void osb_execd_code_routes(struct osb_execd *x);     /* code.c: /code* */
void osb_execd_files_routes(struct osb_execd *x);    /* files.c: /files*, /directories* */
void osb_execd_metrics_routes(struct osb_execd *x);  /* metrics.c: /metrics* */
void osb_execd_pty_routes(struct osb_execd *x);      /* pty.c: /pty* */
/* Error statuses as execd-api.yaml lists them per route (errmap.c). */
void osb_execd_status_map(struct osb_execd *x);

/* DELETE /command?id= and DELETE /code?id= (upstream's shared Interrupt):
 * a command (SIGTERM, then SIGKILL after 3 s), a session (closed) or a code
 * context (SIGINT to the run in progress). Answers the request. */
void osb_execd_interrupt(struct osb_http_req *req);
/* Interrupt the code context `id`; -1 if there is none (code.c). */
int osb_execd_code_interrupt(const char *id);

/* Child reaping is owned by main.c (execd may be PID 1 and must reap
 * orphans). Modules that spawn processes register their pids here and are
 * told the wait status; they must not call waitpid themselves. */
typedef void (*osb_execd_exit_cb)(pid_t pid, int wstatus, void *ud);
void osb_execd_watch_child(pid_t pid, osb_execd_exit_cb cb, void *ud);
void osb_execd_unwatch_child(pid_t pid);
/* Start reaping (SIGCHLD on the loop; children.c). */
void osb_execd_reaper_start(uv_loop_t *loop);
#endif
