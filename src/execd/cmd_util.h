/* Small helpers shared by the /command and /session modules: ids, Go-style
 * texts for exit statuses and durations, the shell to use, working-directory
 * expansion and checks, and execd's private temporary directory. */
#ifndef OSB_EXECD_CMD_UTIL_H
#define OSB_EXECD_CMD_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/random.h"
#include "execd/execd.h"


/* Go's os/exec ExitError text for a wait status: "exit status 3",
 * "signal: killed", "signal: segmentation fault (core dumped)". */
void osb_cmd_exit_text(int wstatus, char *buf, size_t n);
/* Exit code as Go's ProcessState.ExitCode(): the status, or -1 for a signal. */
int osb_cmd_exit_code(int wstatus);
/* Go's time.Duration String() of a millisecond count: "500ms", "1.5s", "1m0s". */
void osb_cmd_duration_text(int64_t ms, char *buf, size_t n);

/* "bash" when it is found in PATH, else "sh" (busybox images); decided once. */
const char *osb_cmd_shell(void);

/* Expand $NAME / ${NAME} from envp (NAME=VALUE entries) and a leading "~"
 * ($HOME). A reference to an undefined variable is an OSB_E_INVALID error
 * naming it. *out is allocated (caller frees). */
OSB_MUST_CHECK int osb_cmd_expand_path(const char *path, char *const *envp, char **out,
                                       struct osb_err *err);
/* The expanded cwd must be an existing directory (OSB_E_INVALID otherwise);
 * `shown` is the path as the client sent it, for the message. */
OSB_MUST_CHECK int osb_cmd_check_dir(const char *path, const char *shown, struct osb_err *err);

/* Primary group of uid from /etc/passwd; 0 when the user is unknown (what
 * Go's exec and Docker's --user do). */
gid_t osb_cmd_primary_gid(uid_t uid);

/* execd's private temporary directory ($TMPDIR or /tmp, then
 * ".osb-execd-<pid>", mode 0700), created on first use; NULL on failure. */
OSB_MUST_CHECK const char *osb_cmd_tmpdir(struct osb_execd *x, struct osb_err *err);
/* Remove it and the logs in it, when execd stops (main.c). */
void osb_cmd_tmpdir_remove(struct osb_execd *x);
#endif
