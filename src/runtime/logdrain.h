/* A sandbox's output pipe drained into its bounded log file, on the
 * server's loop.
 *
 * The sandbox holds only the pipe's write end, so it can neither grow the
 * host file faster than the server writes it nor fallocate, seek or
 * truncate it. One read of at most OSB_LOGDRAIN_CHUNK per readable event
 * (a level-triggered uv_poll), so each loop iteration takes one chunk from
 * every sandbox with output and a flooding one cannot crowd out the others.
 * Chunks are appended on the loop (page-cache writes); a trim (the file
 * would pass max) runs on the thread pool with the pipe not polled
 * meanwhile, so the sandbox waits (its pipe fills), not the loop.
 *
 * Bound: the file never exceeds max bytes. Before a chunk that would pass
 * max is written, the file is cut to about its last keep bytes (keep + one
 * block at most): fallocate(FALLOC_FL_COLLAPSE_RANGE) where the filesystem
 * has it, a copy of the tail otherwise. Needs chunk + keep + block <= max. */
#ifndef OSB_RT_LOGDRAIN_H
#define OSB_RT_LOGDRAIN_H
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"

#define OSB_LOGDRAIN_CHUNK (64u << 10)

struct osb_logdrain;

/* Takes pipe_fd (the read end) in every case; path is created if missing
 * (never through a symlink). */
int osb_logdrain_open(uv_loop_t *loop, int pipe_fd, const char *path, uint64_t max, uint64_t keep,
                      struct osb_logdrain **out, struct osb_err *err) OSB_MUST_CHECK;
/* Stops draining (what is still in the pipe stays there) and frees d; cb
 * runs once nothing of d is left on the loop. */
typedef void (*osb_logdrain_closed_cb)(void *ud);
void osb_logdrain_close(struct osb_logdrain *d, osb_logdrain_closed_cb cb, void *ud);
/* Appends what the pipe holds right now (at most its capacity), on the
 * loop: a sandbox that is being stopped keeps its last output. No-op while
 * a trim runs. */
void osb_logdrain_flush(struct osb_logdrain *d);
/* Appends text, the runtime's own words about the sandbox, after what the
 * pipe holds now (flushed first). No-op while a trim runs. */
void osb_logdrain_note(struct osb_logdrain *d, const char *text);
/* Whether every writer has closed the pipe and all of it is in the file. */
bool osb_logdrain_done(const struct osb_logdrain *d);
#endif
