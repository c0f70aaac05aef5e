/* Streams a process's output pipes into an SSE stream as line events
 * ({"type":"stdout","text":<line>,"timestamp":ms}), as the bytes arrive.
 * Reads with libuv in 64 KiB chunks, splits lines (lines.h), encodes the
 * events directly (Go's encoding/json string escaping) and writes each
 * chunk's events with one write. Stops reading while the socket queue is
 * above OSB_WRITE_HIGH_WATER and resumes when it drains.
 *
 * Used by /command (stdout + stderr pipes, freed after each command) and by
 * /session (one long-lived merged pipe; between runs output is read and
 * dropped, so a chatty background job cannot block on a full pipe). */
#ifndef OSB_EXECD_CMD_OUT_H
#define OSB_EXECD_CMD_OUT_H
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "common/err.h"
#include "execd/events.h"

struct osb_cmd_out;

struct osb_cmd_out *osb_cmd_out_new(uv_loop_t *loop);
/* Read from fd (a pipe read end; ownership passes to the pump, even on
 * failure) and send each line as an event of `type` (a static string). */
OSB_MUST_CHECK int osb_cmd_out_add(struct osb_cmd_out *o, int fd, const char *type,
                                   struct osb_err *err);
/* Send events to `sse` from now on; NULL reads and drops the output. Any
 * partial line left from before is forgotten. */
void osb_cmd_out_set_sse(struct osb_cmd_out *o, struct osb_sse *sse);
/* The producer is done (the process exited, or a session run printed its
 * end marker). Waits up to eof_wait_ms for EOF on every pipe (a background
 * grandchild may hold a pipe open forever), then takes what is still
 * readable (bounded), flushes unterminated last lines, and calls done once
 * everything is queued on the socket. Reading continues afterwards (in
 * whatever sse mode is set). */
void osb_cmd_out_finish(struct osb_cmd_out *o, int eof_wait_ms, void (*done)(void *ud), void *ud);
/* Whether every pipe has reached EOF. */
bool osb_cmd_out_eof(const struct osb_cmd_out *o);
/* Close the pipes and free the pump (asynchronously); a pending finish is
 * dropped without calling done. NULL is a no-op. */
void osb_cmd_out_free(struct osb_cmd_out *o);

/* Append the compact JSON of a line event to buf (Go escaping: \u003c for
 * <>&, \ufffd for invalid UTF-8, an empty line as "\n"); exposed for tests.
 * Returns the bytes written; buf needs osb_cmd_out_event_max(len) bytes. */
size_t osb_cmd_out_event(char *buf, const char *type, const char *line, size_t len,
                         long long timestamp);
size_t osb_cmd_out_event_max(size_t len);
#endif
