#include "execd/fs_download.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/limits.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/execd.h"
#include "execd/fs_lines.h"
#include "execd/fs_path.h"
#include "execd/fs_range.h"

#define DL_CHUNK (256 * 1024)

struct dl {
    uv_loop_t *loop;
    struct osb_http_req *req; /* NULL once the client is gone */
    uv_fs_t fs;
    int fd;
    char *buf;
    int64_t pos;
    int64_t remaining; /* bytes still to send; -1: until EOF */
    bool busy;         /* a read is in flight or a write is under way: on_gone
                          must leave d alone */
    bool waiting;      /* the socket queue is full: wait for on_drain */
    bool line_mode;
    struct osb_fs_lines lines;
    struct osb_buf out; /* line-mode output of one chunk */
};

/* What the request asks for, validated before the file is touched. */
struct dl_query {
    const char *path;
    bool line_mode;
    int64_t offset, limit;
};

static void dl_free(struct dl *d)
{
    if (d->fd >= 0)
        close(d->fd);
    free(d->buf);
    osb_buf_free(&d->out);
    free(d);
}

static void on_gone(struct osb_http_req *req, void *ud)
{
    struct dl *d = ud;
    (void)req;
    d->req = NULL;
    if (!d->busy)
        dl_free(d);
}

/* End the response and free everything; req is not touched afterwards. */
static void finish(struct dl *d)
{
    struct osb_http_req *req = d->req;
    osb_http_req_on_close(req, NULL, NULL);
    osb_http_req_on_drain(req, NULL, NULL);
    d->req = NULL;
    /* A cut body must not look complete. */
    bool cut = d->line_mode && d->lines.failed;
    dl_free(d);
    if (cut)
        osb_http_abort(req);
    else
        osb_http_end(req);
}

static void on_read(uv_fs_t *fs);

/* Issue the next read unless one is in flight or the socket is full. */
static void pump(struct dl *d)
{
    if (d->busy || d->waiting)
        return;
    if (d->remaining == 0) {
        finish(d);
        return;
    }
    size_t want = DL_CHUNK;
    if (d->remaining > 0 && d->remaining < (int64_t)want)
        want = (size_t)d->remaining;
    uv_buf_t b = uv_buf_init(d->buf, (unsigned)want);
    d->fs.data = d;
    d->busy = true;
    if (uv_fs_read(d->loop, &d->fs, d->fd, &b, 1, d->pos, on_read) < 0) {
        d->busy = false;
        finish(d);
    }
}

/* Pass a chunk on; returns false when the response is complete. */
static bool deliver(struct dl *d, size_t n)
{
    size_t queued;
    bool done = false;
    if (d->line_mode) {
        done = osb_fs_lines_feed(&d->lines, d->buf, n, &d->out);
        queued = osb_http_write(d->req, d->out.data, d->out.len);
        osb_buf_reset(&d->out);
    } else {
        queued = osb_http_write(d->req, d->buf, n);
        if (d->remaining > 0)
            d->remaining -= (int64_t)n;
    }
    d->pos += (int64_t)n;
    if (queued >= OSB_WRITE_HIGH_WATER)
        d->waiting = true;
    return !done;
}

static void on_read(uv_fs_t *fs)
{
    struct dl *d = fs->data;
    ssize_t n = fs->result;
    uv_fs_req_cleanup(fs);
    /* d->busy is still set: a write that closes the connection cannot free
     * d under us. */
    if (d->req && n == 0 && d->line_mode) {
        osb_fs_lines_finish(&d->lines, &d->out);
        osb_http_write(d->req, d->out.data, d->out.len);
    }
    /* An error or an early EOF (the file shrank) cuts the body short; the
     * client sees fewer bytes than Content-Length. */
    bool more = d->req && n > 0 && deliver(d, (size_t)n);
    d->busy = false;
    if (!d->req)
        dl_free(d);
    else if (!more)
        finish(d);
    else
        pump(d);
}

static void on_drain(struct osb_http_req *req, void *ud)
{
    struct dl *d = ud;
    (void)req;
    d->waiting = false;
    pump(d);
}

/* Start the response (status, ctype, len: -1 chunked) and stream
 * [pos, pos+len) or, in line mode, the selected lines. */
static void start_stream(uv_loop_t *loop, struct osb_http_req *req, int fd, int status,
                         const char *ctype, int64_t pos, int64_t len, const struct dl_query *q)
{
    struct dl *d = osb_xcalloc(1, sizeof *d);
    d->loop = loop;
    d->req = req;
    d->fd = fd;
    d->buf = osb_xmalloc(DL_CHUNK);
    d->pos = pos;
    d->remaining = len;
    osb_buf_init(&d->out, SIZE_MAX);
    if (q->line_mode) {
        d->line_mode = true;
        osb_fs_lines_init(&d->lines, q->offset, q->limit);
    }
    bool head = !strcmp(osb_http_req_method(req), "HEAD");
    d->busy = true;
    osb_http_req_on_close(req, on_gone, d);
    osb_http_req_on_drain(req, on_drain, d);
    osb_http_start(req, status, ctype, len);
    d->busy = false;
    if (!d->req)
        dl_free(d);
    else if (head || len == 0)
        finish(d);
    else
        pump(d);
}

/* ---- request validation ---- */

/* Go's strconv.Atoi. */
static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return false;
    *out = v;
    return true;
}

static bool parse_query(struct osb_http_req *req, struct dl_query *q)
{
    q->path = osb_http_req_query(req, "path");
    if (!q->path || !*q->path) {
        osb_http_respond_error(req, 400, "MISSING_QUERY", "missing query parameter 'path'");
        return false;
    }
    const char *off = osb_http_req_query(req, "offset"), *lim = osb_http_req_query(req, "limit");
    q->line_mode = (off && *off) || (lim && *lim);
    q->offset = 1;
    q->limit = INT64_MAX;
    if (!q->line_mode)
        return true;
    const char *msg = NULL;
    if (off && *off && (!parse_int(off, &q->offset) || q->offset < 1))
        msg = "offset must be a positive integer (1-based)";
    else if (lim && *lim && (!parse_int(lim, &q->limit) || q->limit < 1))
        msg = "limit must be a positive integer";
    else if (osb_http_req_header(req, "Range"))
        msg = "offset/limit cannot be combined with a Range header";
    if (msg)
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", msg);
    return msg == NULL;
}

/* Open a regular file without blocking on a FIFO; answers the error. */
static int open_file(struct osb_http_req *req, const char *abs, const char *path, struct stat *st)
{
    int fd = open(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            osb_http_respond_error(req, 404, "FILE_NOT_FOUND", "file not found: %s", path);
        else
            osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error opening file %s: %s", path,
                                   strerror(errno));
        return -1;
    }
    const char *bad = NULL;
    if (fstat(fd, st) < 0)
        bad = "cannot stat";
    else if (S_ISDIR(st->st_mode))
        bad = "path is a directory";
    else if (!S_ISREG(st->st_mode))
        bad = "not a regular file";
    if (bad) {
        close(fd);
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s: %s", bad, path);
        return -1;
    }
    fcntl(fd, F_SETFL, 0);
    return fd;
}

/* ---- full and ranged responses ---- */

/* Kernel files (/proc, /sys) report size 0 but have content: stream them
 * to EOF instead of answering an empty body. */
static bool size_unknown(int fd, const struct stat *st)
{
    struct statfs fs;
    return st->st_size == 0 && fstatfs(fd, &fs) == 0 &&
           (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC);
}

/* If-Modified-Since as Go's http.ServeContent reads it (ignored when
 * If-None-Match is present; whole seconds). */
static bool not_modified(struct osb_http_req *req, const struct stat *st)
{
    const char *ims = osb_http_req_header(req, "If-Modified-Since");
    time_t t;
    if (!ims || osb_http_req_header(req, "If-None-Match") || osb_fs_http_date_parse(ims, &t) < 0)
        return false;
    return st->st_mtim.tv_sec <= t;
}

static void add_file_headers(struct osb_http_req *req, const char *abs, const struct stat *st)
{
    _cleanup_free_ char *base = osb_fs_path_base(abs);
    _cleanup_free_ char *cd = osb_fs_content_disposition(base);
    char date[40];
    osb_time_http(st->st_mtim.tv_sec, date, sizeof date);
    osb_http_add_header(req, "Content-Disposition", cd);
    osb_http_add_header(req, "Accept-Ranges", "bytes");
    osb_http_add_header(req, "Last-Modified", date);
}

/* Pick status and byte span per protocol 3.7; false if answered here. */
static bool choose_span(struct osb_http_req *req, int fd, const struct stat *st, int *status,
                        int64_t *start, int64_t *len)
{
    const char *range = osb_http_req_header(req, "Range");
    int64_t size = st->st_size;
    enum osb_fs_range r = range ? osb_fs_range_parse(range, size, start, len) : OSB_FS_RANGE_NONE;
    if (r == OSB_FS_RANGE_INVALID) {
        osb_http_respond_error(req, 416, "UNKNOWN", "invalid range: %s", range);
        return false;
    }
    if (r == OSB_FS_RANGE_OK) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %lld-%lld/%lld", (long long)*start,
                 (long long)(*start + *len - 1), (long long)size);
        osb_http_add_header(req, "Content-Range", cr);
        *status = 206;
        return true;
    }
    if (not_modified(req, st)) {
        char date[40];
        osb_time_http(st->st_mtim.tv_sec, date, sizeof date);
        osb_http_add_header(req, "Last-Modified", date);
        osb_http_start(req, 304, NULL, -1);
        osb_http_end(req);
        return false;
    }
    if (r == OSB_FS_RANGE_NO_OVERLAP) {
        char cr[64];
        snprintf(cr, sizeof cr, "bytes */%lld", (long long)size);
        osb_http_add_header(req, "Content-Range", cr);
        osb_http_add_header(req, "X-Content-Type-Options", "nosniff");
        /* Upstream's ServeContent answers text here; {code,message} is what
         * every other execd error carries. */
        osb_http_respond_error(req, 416, "RANGE_NOT_SATISFIABLE",
                               "invalid range: failed to overlap");
        return false;
    }
    *status = 200;
    *start = 0;
    *len = range || !size_unknown(fd, st) ? size : -1;
    return true;
}

void osb_fs_download(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    struct dl_query q;
    if (!parse_query(req, &q))
        return;
    _cleanup_free_ char *abs = osb_fs_path_abs(q.path);
    struct stat st;
    int fd = open_file(req, abs, q.path, &st);
    if (fd < 0)
        return;
    if (q.line_mode) {
        start_stream(x->loop, req, fd, 200, "text/plain; charset=utf-8", 0, -1, &q);
        return;
    }
    int status;
    int64_t start, len;
    if (!choose_span(req, fd, &st, &status, &start, &len)) {
        close(fd);
        return;
    }
    add_file_headers(req, abs, &st);
    start_stream(x->loop, req, fd, status, "application/octet-stream", start, len, &q);
}
