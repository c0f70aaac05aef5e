/* `tail -f /dev/null`, the SDKs' default entrypoint, kept without its cost.
 *
 * tail cannot watch /dev/null with inotify, so it wakes every second to
 * read it again: thousands of idle sandboxes spend a CPU doing that. A
 * spawn of exactly that command line (with a tail the PATH lookup finds)
 * execs execd itself under the same argv instead, and execd, started so,
 * names itself `tail` and sleeps until a signal ends it: the same process
 * to `ps` and `kill`, no output, never exits on its own, no wake-ups. */
#ifndef OSB_EXECD_IDLE_H
#define OSB_EXECD_IDLE_H
#include <stdbool.h>

/* Is argv (NULL-terminated) `tail -f /dev/null` (tail by any path)? */
bool osb_execd_idle_argv(const char *const *argv);
/* What to exec instead of tail: execd's own binary. */
#define OSB_EXECD_IDLE_EXE "/proc/self/exe"
/* execd started under that argv: sleep until a signal ends the process. */
__attribute__((noreturn)) void osb_execd_idle_run(void);
#endif
