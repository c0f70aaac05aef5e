/* /command: run shell commands in the foreground (output streamed as SSE
 * line events) or in the background (output merged into a log file read
 * through /command/{id}/logs), with status, interrupt and timeouts
 * (protocol.md 3.2-3.4). Routes: osb_execd_command_routes (execd.h).
 *
 * Every command runs as `bash -c <command>` (`sh -c` without bash) in its
 * own process group, so a timeout, an interrupt or a client that goes away
 * reaches everything it started. Records of finished commands are kept
 * (up to OSB_MAX_COMMAND_RECORDS) for status and logs. */
#ifndef OSB_EXECD_COMMAND_H
#define OSB_EXECD_COMMAND_H
#include "execd/execd.h"

/* Grace for EOF on the output pipes after the command exited: output written
 * before the exit is already in the pipe, so this only matters when a
 * backgrounded grandchild keeps the pipe open. */
#define OSB_CMD_EOF_WAIT_MS 50
/* DELETE /command: SIGTERM to the group, SIGKILL after this. */
#define OSB_CMD_INTERRUPT_GRACE_MS 3000

/* Interrupt the command `id` and answer req (once its group is gone);
 * -1 without answering if there is no such command. */
OSB_MUST_CHECK int osb_execd_command_interrupt(struct osb_execd *x, struct osb_http_req *req,
                                               const char *id);
#endif
