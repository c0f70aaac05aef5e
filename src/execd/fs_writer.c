#include "execd/fs_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

#include "common/buf.h"
#include "common/xalloc.h"
#include "execd/fs_atomic.h"

#define BATCH (256 * 1024)

struct op {
    struct op *next;
    int fd;
    char *data;
    size_t len;
    bool close; /* close fd after writing */
    int err;    /* set by the pool thread */
};

struct osb_fs_writer {
    uv_loop_t *loop;
    void (*on_progress)(void *ud);
    void *ud;
    struct op *head, *tail; /* waiting */
    struct op *running;
    uv_work_t work;
    int cur_fd; /* fd whose bytes are accumulating in cur */
    struct osb_buf cur;
    size_t pending;
    int err;
    bool dying;
};

static void run_op(uv_work_t *wk)
{
    struct osb_fs_writer *w = wk->data;
    struct op *op = w->running;
    if (op->len && osb_fs_write_all(op->fd, op->data, op->len) < 0)
        op->err = errno ? errno : EIO;
    if (op->close && close(op->fd) < 0 && !op->err && errno != EINTR)
        op->err = errno;
}

static void op_drop(struct op *op)
{
    if (op->close)
        close(op->fd);
    free(op->data);
    free(op);
}

/* Drop every waiting op (after an error, or when dying). */
static void drop_queue(struct osb_fs_writer *w)
{
    while (w->head) {
        struct op *op = w->head;
        w->head = op->next;
        w->pending -= op->len;
        op_drop(op);
    }
    w->tail = NULL;
}

static void after_op(uv_work_t *wk, int status);

static void kick(struct osb_fs_writer *w)
{
    if (w->running || !w->head)
        return;
    struct op *op = w->head;
    w->head = op->next;
    if (!w->head)
        w->tail = NULL;
    w->running = op;
    w->work.data = w;
    if (uv_queue_work(w->loop, &w->work, run_op, after_op) < 0) {
        /* As a failed write: the rest of the queue is dropped. */
        w->running = NULL;
        w->err = EAGAIN;
        w->pending -= op->len;
        op_drop(op);
        drop_queue(w);
    }
}

static void enqueue(struct osb_fs_writer *w, struct op *op)
{
    if (w->err) {
        w->pending -= op->len;
        op_drop(op);
        return;
    }
    if (w->tail)
        w->tail->next = op;
    else
        w->head = op;
    w->tail = op;
    kick(w);
}

/* Turn the accumulated bytes into an op (close: with fd's close). */
static void flush_cur(struct osb_fs_writer *w, bool close_fd)
{
    if (w->cur_fd < 0 && !close_fd)
        return;
    struct op *op = osb_xcalloc(1, sizeof *op);
    op->fd = w->cur_fd;
    op->data = osb_buf_steal(&w->cur, &op->len);
    op->close = close_fd;
    w->cur_fd = -1;
    enqueue(w, op);
}

static void writer_free_now(struct osb_fs_writer *w)
{
    drop_queue(w);
    if (w->cur_fd >= 0)
        w->pending -= w->cur.len;
    osb_buf_free(&w->cur);
    free(w);
}

static void after_op(uv_work_t *wk, int status)
{
    struct osb_fs_writer *w = wk->data;
    struct op *op = w->running;
    (void)status;
    w->running = NULL;
    w->pending -= op->len;
    if (op->err && !w->err) {
        w->err = op->err;
        drop_queue(w);
    }
    free(op->data);
    free(op);
    if (w->dying) {
        writer_free_now(w);
        return;
    }
    kick(w);
    w->on_progress(w->ud);
}

struct osb_fs_writer *osb_fs_writer_new(uv_loop_t *loop, void (*on_progress)(void *ud), void *ud)
{
    struct osb_fs_writer *w = osb_xcalloc(1, sizeof *w);
    w->loop = loop;
    w->on_progress = on_progress;
    w->ud = ud;
    w->cur_fd = -1;
    osb_buf_init(&w->cur, SIZE_MAX);
    return w;
}

void osb_fs_writer_write(struct osb_fs_writer *w, int fd, const void *data, size_t len)
{
    if (w->err || len == 0)
        return;
    if (w->cur_fd != fd)
        flush_cur(w, false);
    w->cur_fd = fd;
    if (osb_buf_add(&w->cur, data, len) < 0) {
        /* As a failed write: the owner sees it in osb_fs_writer_error. */
        w->err = EFBIG;
        drop_queue(w);
        return;
    }
    w->pending += len;
    if (w->cur.len >= BATCH)
        flush_cur(w, false);
}

void osb_fs_writer_close(struct osb_fs_writer *w, int fd)
{
    if (w->cur_fd != fd)
        flush_cur(w, false);
    w->cur_fd = fd;
    flush_cur(w, true);
}

size_t osb_fs_writer_pending(const struct osb_fs_writer *w)
{
    return w->pending;
}

bool osb_fs_writer_idle(const struct osb_fs_writer *w)
{
    return !w->running && !w->head && w->cur_fd < 0;
}

int osb_fs_writer_error(const struct osb_fs_writer *w)
{
    return w->err;
}

void osb_fs_writer_free(struct osb_fs_writer *w)
{
    if (!w)
        return;
    if (w->running)
        w->dying = true;
    else
        writer_free_now(w);
}
