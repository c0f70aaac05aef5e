/* /session: persistent bash sessions (protocol.md 3.2-3.4), but unlike
 * upstream (a fresh bash per run that only carries exported variables and
 * the cwd over) each session is ONE long-lived `bash --noprofile --norc`, so
 * functions, aliases, shell options and unexported variables survive
 * between runs.
 *
 * Protocol with the shell: its stdin is a pipe execd writes commands to;
 * stdout and stderr are one pipe (user output, streamed as `stdout` events);
 * fd 3 is a private control pipe. Each run is sent as
 *     { cd -- '<cwd>' && eval '<command>'; } 3>&- </dev/null
 *     printf '<marker> %d %s\n' "$?" "$PWD" >&3
 * with the command single-quoted (no injection), fd 3 closed and stdin
 * /dev/null for the user command (it can neither read our protocol nor
 * write the marker), and a fresh random marker per run.
 *
 * Choices: a run's `cwd` is cd'ed into and stays (like upstream, where the
 * run's final directory persists). `exit` (or a fatal `set -e` failure) ends
 * the shell: the run reports that exit code and the session gets a new shell
 * on its next run (state is lost). On timeout or client disconnect the run's
 * processes (new descendants of the shell) are killed; if the shell itself
 * does not come back within a short grace (a builtin loop, a trap), the
 * whole shell is killed and restarted on the next run. */
#ifndef OSB_EXECD_SESSION_H
#define OSB_EXECD_SESSION_H
#include "execd/execd.h"

/* Close the session `id` (DELETE /command?id= on a session id). Returns 0,
 * or -1 if there is no such session. */
OSB_MUST_CHECK int osb_execd_session_close(struct osb_execd *x, const char *id);
#endif
