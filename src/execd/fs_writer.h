/* Ordered asynchronous file writes for streamed uploads. Data handed in on
 * the loop is copied, batched (256 KiB) and written by one libuv pool job
 * at a time, in order, so a disk that throttles writers (dirty-page
 * balancing can sleep a write(2) for seconds) never stalls the loop. The
 * owner watches pending() to pause its input and gets on_progress after
 * every completed job. */
#ifndef OSB_EXECD_FS_WRITER_H
#define OSB_EXECD_FS_WRITER_H
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct osb_fs_writer;

/* on_progress runs on the loop after each job (never from inside the
 * calls below). */
struct osb_fs_writer *osb_fs_writer_new(uv_loop_t *loop, void (*on_progress)(void *ud), void *ud);
/* Queue len bytes for fd (copied). The fd stays the caller's until
 * osb_fs_writer_close. */
void osb_fs_writer_write(struct osb_fs_writer *w, int fd, const void *data, size_t len);
/* Write what is queued for fd, then close it: the fd now belongs to the
 * writer. */
void osb_fs_writer_close(struct osb_fs_writer *w, int fd);
/* Bytes accepted but not yet written. */
size_t osb_fs_writer_pending(const struct osb_fs_writer *w);
/* Nothing queued or running. */
bool osb_fs_writer_idle(const struct osb_fs_writer *w);
/* errno of the first failed write, 0 if none. After a failure the rest of
 * the queue is dropped (its fds still get closed). */
int osb_fs_writer_error(const struct osb_fs_writer *w);
/* Release; a running job finishes first (then the rest is dropped and the
 * fds handed over are closed). on_progress is not called again. NULL ok. */
void osb_fs_writer_free(struct osb_fs_writer *w);
#endif
