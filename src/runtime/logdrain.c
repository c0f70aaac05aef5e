/* A sandbox's output pipe into its bounded log (logdrain.h). */
#include "runtime/logdrain.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/xalloc.h"

struct osb_logdrain {
    uv_poll_t poll;
    uv_work_t work;
    int pipe_fd;
    int file_fd; /* open only while a chunk is written (see file_begin) */
    char *path;
    uint64_t size, max, keep;
    size_t pending; /* bytes of buf the trim job writes after trimming */
    bool working, eof, closing, warned;
    osb_logdrain_closed_cb cb;
    void *ud;
    char *held; /* the chunk a trim job writes (pending bytes), else NULL */
};

/* One read buffer for every drain: they all run on the loop thread, and a
 * chunk is written before the next read. Per drain it would be 64 KiB of
 * the server's memory for each idle sandbox. A chunk waiting for a trim
 * moves to a buffer of its own (held). */
static char chunk[OSB_LOGDRAIN_CHUNK];

/* Cuts the file to about its last keep bytes; returns the new size. The
 * collapse keeps block alignment, so up to one block more stays. No
 * O_APPEND on the file: pwrite at an offset must mean that offset. */
static uint64_t trim_file(int fd, uint64_t size, uint64_t keep)
{
    if (size <= keep)
        return size;
    struct statfs sf;
    uint64_t bs = fstatfs(fd, &sf) == 0 && sf.f_bsize > 0 ? (uint64_t)sf.f_bsize : 4096;
    uint64_t drop = (size - keep) / bs * bs;
    if (drop > 0 && fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, (off_t)drop) == 0)
        return size - drop;
    char *tail = osb_xmalloc(keep);
    ssize_t n = pread(fd, tail, keep, (off_t)(size - keep));
    uint64_t r = size;
    if (n >= 0 && pwrite(fd, tail, (size_t)n, 0) == n && ftruncate(fd, n) == 0)
        r = (uint64_t)n;
    free(tail);
    return r;
}

/* Appends at d->size; a chunk that does not fit under max, or that the
 * disk refuses, is dropped (the bound and the sandbox's progress matter
 * more than completeness). */
static void append(struct osb_logdrain *d, const char *data, size_t n)
{
    if (d->size + n > d->max)
        return;
    size_t off = 0;
    while (off < n) {
        ssize_t w = pwrite(d->file_fd, data + off, n - off, (off_t)(d->size + off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    d->size += off;
    if (off < n && !d->warned) {
        d->warned = true;
        osb_warn("sandbox log: dropped output: %s", strerror(errno));
    }
}

/* The log is opened for each chunk, not held: an idle sandbox then costs
 * the server one descriptor (its pipe), not two, and thousands fit under
 * one open files limit. Never through a symlink, never created again (a
 * sandbox being removed drops its last output). */
static bool file_begin(struct osb_logdrain *d)
{
    if (d->file_fd >= 0)
        return true;
    int fd = open(d->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        d->file_fd = fd;
        return true;
    }
    if (!d->warned && (fd >= 0 || errno != ENOENT)) {
        d->warned = true;
        osb_warn("sandbox log `%s`: dropped output: %s", d->path,
                 fd >= 0 ? "not a regular file" : strerror(errno));
    }
    if (fd >= 0)
        close(fd);
    return false;
}

static void file_end(struct osb_logdrain *d)
{
    if (d->file_fd >= 0)
        close(d->file_fd);
    d->file_fd = -1;
}

static void trim_work(uv_work_t *w)
{
    struct osb_logdrain *d = w->data;
    if (file_begin(d)) {
        d->size = trim_file(d->file_fd, d->size, d->keep);
        append(d, d->held, d->pending);
        file_end(d);
    }
    d->pending = 0;
    free(d->held);
    d->held = NULL;
}

static void on_poll(uv_poll_t *p, int status, int events);

static void finish_close(struct osb_logdrain *d);

static void trim_done(uv_work_t *w, int status)
{
    (void)status;
    struct osb_logdrain *d = w->data;
    d->working = false;
    if (d->closing)
        finish_close(d);
    else if (!d->eof)
        uv_poll_start(&d->poll, UV_READABLE, on_poll);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)events;
    struct osb_logdrain *d = p->data;
    ssize_t n = status < 0 ? 0 : read(d->pipe_fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        d->eof = true;
        uv_poll_stop(p);
        return;
    }
    if (d->size + (uint64_t)n <= d->max) {
        if (file_begin(d))
            append(d, chunk, (size_t)n);
        file_end(d);
        return;
    }
    uv_poll_stop(p);
    d->pending = (size_t)n;
    d->held = osb_xmalloc((size_t)n);
    memcpy(d->held, chunk, (size_t)n);
    d->working = true;
    uv_queue_work(p->loop, &d->work, trim_work, trim_done);
}

int osb_logdrain_open(uv_loop_t *loop, int pipe_fd, const char *path, uint64_t max, uint64_t keep,
                      struct osb_logdrain **out, struct osb_err *err)
{
    _cleanup_close_ int pfd = pipe_fd;
    if (keep + OSB_LOGDRAIN_CHUNK + (64u << 10) > max)
        return osb_err_set(err, OSB_E_INVALID, "log bound %llu too small for keep %llu",
                           (unsigned long long)max, (unsigned long long)keep);
    /* Read-write: the tail copy reads it back. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        osb_err_sys(err, "open log `%s`", path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int fl = fcntl(pfd, F_GETFL);
    if (fl < 0 || fcntl(pfd, F_SETFL, fl | O_NONBLOCK) < 0) {
        close(fd);
        return osb_err_sys(err, "log pipe");
    }
    struct osb_logdrain *d = osb_xcalloc(1, sizeof *d);
    d->pipe_fd = pfd;
    pfd = -1;
    close(fd);
    d->file_fd = -1;
    d->path = osb_xstrdup(path);
    d->size = (uint64_t)st.st_size;
    d->max = max;
    d->keep = keep;
    d->work.data = d;
    uv_poll_init(loop, &d->poll, d->pipe_fd);
    d->poll.data = d;
    uv_poll_start(&d->poll, UV_READABLE, on_poll);
    *out = d;
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    struct osb_logdrain *d = h->data;
    close(d->pipe_fd);
    file_end(d);
    free(d->path);
    osb_logdrain_closed_cb cb = d->cb;
    void *ud = d->ud;
    free(d->held);
    free(d);
    if (cb)
        cb(ud);
}

static void finish_close(struct osb_logdrain *d)
{
    uv_close((uv_handle_t *)&d->poll, on_closed);
}

void osb_logdrain_close(struct osb_logdrain *d, osb_logdrain_closed_cb cb, void *ud)
{
    d->closing = true;
    d->cb = cb;
    d->ud = ud;
    uv_poll_stop(&d->poll);
    if (!d->working)
        finish_close(d);
}

static void flush_open(struct osb_logdrain *d)
{
    /* Bounded by what the pipe holds, so a writer that keeps writing
     * cannot hold the loop here. */
    int cap = fcntl(d->pipe_fd, F_GETPIPE_SZ);
    uint64_t left = cap > 0 ? (uint64_t)cap : (1u << 20);
    while (left > 0) {
        ssize_t n = read(d->pipe_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        if (d->size + (uint64_t)n > d->max)
            d->size = trim_file(d->file_fd, d->size, d->keep);
        append(d, chunk, (size_t)n);
        left = (uint64_t)n >= left ? 0 : left - (uint64_t)n;
    }
}

void osb_logdrain_flush(struct osb_logdrain *d)
{
    if (d->working || d->eof || !file_begin(d))
        return;
    flush_open(d);
    file_end(d);
}

void osb_logdrain_note(struct osb_logdrain *d, const char *text)
{
    if (d->working || !file_begin(d))
        return;
    if (!d->eof)
        flush_open(d);
    size_t n = strlen(text);
    if (d->size + n > d->max)
        d->size = trim_file(d->file_fd, d->size, d->keep);
    append(d, text, n);
    file_end(d);
}

bool osb_logdrain_done(const struct osb_logdrain *d)
{
    return d->eof && !d->working;
}
