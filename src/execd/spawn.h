/* Process creation for execd modules. libuv's uv_spawn reaps its own
 * children, which would race with execd's PID 1 reaper (waitpid(-1)), so
 * every module spawns through here and learns exit statuses from
 * osb_execd_watch_child (execd.h). */
#ifndef OSB_EXECD_SPAWN_H
#define OSB_EXECD_SPAWN_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "execd/execd.h"

struct osb_spawn {
    const char *const *argv; /* argv[0] is searched in PATH if it has no '/' */
    const char *const *envp; /* NULL: inherit execd's environment */
    const char *cwd;         /* NULL: inherit */
    bool set_ids;            /* switch to uid/gid (+ supplementary groups of uid) */
    uint32_t uid, gid;
    int stdin_fd, stdout_fd, stderr_fd; /* -1: /dev/null */
    bool new_session;                   /* setsid() (needed for a controlling tty) */
    int ctty_fd; /* >= 0: make this the controlling terminal (with new_session) */
    /* Otherwise the child gets its own process group (pgid == pid), so
     * kill(-pid, sig) reaches everything it started. */
};

/* Fork and exec. The parent gets the pid; exec failures are reported as
 * errors (through a CLOEXEC pipe), not as a child exiting 127. The caller
 * must register the pid with osb_execd_watch_child right away (the exit
 * cannot be missed: reaping happens on the loop, after this returns). */
OSB_MUST_CHECK pid_t osb_execd_spawn(struct osb_execd *x, const struct osb_spawn *sp,
                                     struct osb_err *err);

/* The user of spawns that do not set_ids themselves (the image's USER, as
 * `docker exec` uses it); unset, they run as execd (root). */
void osb_execd_spawn_default_user(struct osb_execd *x, uid_t uid, gid_t gid);

/* Raise execd's open-files soft limit to the hard limit (every command
 * holds pipes, every stream a socket), as Go's runtime does; children get
 * the original limit back. */
void osb_execd_raise_nofile(struct osb_execd *x);

/* Merge the environment: execd's own (less the variable hidden with
 * osb_execd_env_hide, envhide.h), then /opt/opensandbox/.env
 * (KEY=VALUE lines), then `extra` (a JSON object of strings, may be NULL).
 * Returns a NULL-terminated array; free with osb_execd_env_free. */
struct json_t;
char **osb_execd_env_build(const struct osb_execd *x, struct json_t *extra);
void osb_execd_env_free(char **env);
#endif
