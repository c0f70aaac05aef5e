/* Files and directories through execd (protocol.md 3.2, 3.6-3.8): small
 * JSON calls, multipart uploads (from memory or streamed from a
 * descriptor) and downloads (into memory or streamed to a descriptor). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

static bool empty(const char *s)
{
    return !s || !*s;
}

/* "<base>?path=a&path=b" (name = "path") */
static char *paths_query(const char *base, const char *const *paths, size_t n,
                         struct osbc_error *err)
{
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, base);
    for (size_t i = 0; i < n; i++) {
        osbcl_sb_adds(&p, i ? "&path=" : "?path=");
        osbcl_sb_esc(&p, paths[i]);
    }
    return osbcl_sb_done(&p, err);
}

static int check_paths(const char *id, const char *const *paths, size_t n, const char *what,
                       struct osbc_error *err)
{
    if (empty(id) || !paths || !n)
        return osbcl_fail(err, OSBC_E_ARG, "%s: a sandbox id and at least one path", what);
    for (size_t i = 0; i < n; i++)
        if (empty(paths[i]))
            return osbcl_fail(err, OSBC_E_ARG, "%s: an empty path", what);
    return 0;
}

int osbcl_mode_wire(int mode)
{
    int dec = 0;
    for (int scale = 1; mode > 0; mode >>= 3, scale *= 10)
        dec += (mode & 7) * scale;
    return dec;
}

json_t *osbcl_perm_json(const struct osbc_file_attrs *a, int def_mode)
{
    int mode = a && a->mode >= 0 ? a->mode : def_mode;
    json_t *j = json_object();
    if (!j)
        return NULL;
    int bad = 0;
    if (mode >= 0)
        bad |= json_object_set_new(j, "mode", json_integer(osbcl_mode_wire(mode)));
    if (a && !empty(a->owner))
        bad |= json_object_set_new(j, "owner", json_string(a->owner));
    if (a && !empty(a->group))
        bad |= json_object_set_new(j, "group", json_string(a->group));
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int check_attrs(const struct osbc_file_attrs *a, struct osbc_error *err)
{
    if (a && (a->mode > 07777 || a->mode < -1))
        return osbcl_fail(err, OSBC_E_ARG, "mode %s%o: want permission bits (0..07777)",
                          a->mode < 0 ? "-0" : "0", a->mode < 0 ? -a->mode : a->mode);
    return 0;
}

/* ------------------------------------------------------------ upload */

struct upload {
    struct osbcl_upload_frame f; /* multipart framing around the file's bytes */
    size_t head_off, tail_off;
    const char *data; /* from memory ... */
    size_t data_len, data_off;
    int fd; /* ... or from a descriptor (-1 for memory) */
    bool fd_done;
    long long done, total; /* total: a regular file's size, or -1 */
    osbc_progress_cb progress;
    void *ud;
};

static size_t take(char *buf, size_t cap, const char *src, size_t len, size_t *off)
{
    size_t n = len - *off < cap ? len - *off : cap;
    memcpy(buf, src + *off, n);
    *off += n;
    return n;
}

static ssize_t upload_read(void *ud, void *buf, size_t cap, struct osbc_error *err)
{
    struct upload *u = ud;
    if (u->head_off < u->f.head_len)
        return (ssize_t)take(buf, cap, u->f.head, u->f.head_len, &u->head_off);
    if (u->fd < 0 && u->data_off < u->data_len)
        return (ssize_t)take(buf, cap, u->data, u->data_len, &u->data_off);
    while (u->fd >= 0 && !u->fd_done) {
        /* A regular file sends the size announced, even if it grows meanwhile. */
        size_t want = cap;
        if (u->total >= 0 && (long long)want > u->total - u->done)
            want = (size_t)(u->total - u->done);
        ssize_t n = want ? read(u->fd, buf, want) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return osbcl_fail_sys(err, OSBC_E_IO, "reading the file to upload"), -1;
        if (n == 0) {
            u->fd_done = true;
            break;
        }
        u->done += n;
        if (u->progress && u->progress(u->ud, u->done, u->total))
            return osbcl_fail(err, OSBC_E_CANCELLED, "upload stopped by the caller"), -1;
        return n;
    }
    return (ssize_t)take(buf, cap, u->f.tail, u->f.tail_len, &u->tail_off);
}

int osbcl_upload_frame(struct osbcl_upload_frame *f, const char *boundary, const char *path,
                       const struct osbc_file_attrs *attrs)
{
    memset(f, 0, sizeof *f);
    json_t *meta = osbcl_perm_json(attrs, -1);
    if (meta && json_object_set_new(meta, "path", json_string(path)) < 0)
        json_decref(meta), meta = NULL;
    char *mtext = meta ? osbcl_json_dump(meta) : NULL;
    json_decref(meta);
    if (!mtext)
        return OSBC_E_ARG; /* jansson refuses strings that are not UTF-8 */
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : "file";
    struct osbcl_sb h = {0}, t = {0};
    osbcl_sb_addf(&h,
                  "--%s\r\nContent-Disposition: form-data; name=\"metadata\"; "
                  "filename=\"metadata\"\r\nContent-Type: application/json\r\n\r\n%s\r\n",
                  boundary, mtext);
    free(mtext);
    osbcl_sb_addf(&h, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"",
                  boundary);
    /* Only a hint (execd writes to metadata.path): keep the header intact. */
    for (const char *p = base; *p; p++)
        osbcl_sb_add(&h, strchr("\"\r\n\\", *p) ? "_" : p, 1);
    osbcl_sb_adds(&h, "\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    osbcl_sb_addf(&t, "\r\n--%s--\r\n", boundary);
    f->head_len = h.len;
    f->tail_len = t.len;
    f->head = osbcl_sb_done(&h, NULL);
    f->tail = osbcl_sb_done(&t, NULL);
    if (!f->head || !f->tail) {
        osbcl_upload_frame_free(f);
        return OSBC_E_NOMEM;
    }
    return 0;
}

void osbcl_upload_frame_free(struct osbcl_upload_frame *f)
{
    free(f->head);
    free(f->tail);
    memset(f, 0, sizeof *f);
}

static int upload(osbc_client *c, const char *id, const char *path, struct upload *u,
                  const struct osbc_file_attrs *attrs, struct osbc_error *err)
{
    if (empty(id) || empty(path))
        return osbcl_fail(err, OSBC_E_ARG, "upload: a sandbox id and a path");
    int rc = check_attrs(attrs, err);
    if (rc < 0)
        return rc;
    unsigned char rnd[12];
    char boundary[40] = "osb-";
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return osbcl_fail_sys(err, OSBC_E_IO, "getrandom");
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(boundary + 4 + 2 * i, 3, "%02x", rnd[i]);
    rc = osbcl_upload_frame(&u->f, boundary, path, attrs);
    if (rc == OSBC_E_ARG)
        return osbcl_fail(err, rc, "upload: cannot encode the path or names (not UTF-8?)");
    if (rc < 0)
        return osbcl_fail(err, rc, "out of memory");
    char ctype[80];
    snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%s", boundary);
    long long size = u->fd < 0 ? (long long)u->data_len : u->total;
    struct osbcl_req rq = {.method = "POST",
                           .path = "/files/upload",
                           .content_type = ctype,
                           .body_read = upload_read,
                           .body_ud = u,
                           .body_size =
                               size < 0 ? -1 : (long long)(u->f.head_len + u->f.tail_len) + size};
    struct osbcl_resp rs = {0};
    rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300))
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "POST /files/upload");
    if (rs.status)
        osbcl_resp_free(&rs);
    osbcl_upload_frame_free(&u->f);
    return rc;
}

int osbc_file_write(osbc_client *c, const char *id, const char *path, const void *data, size_t len,
                    const struct osbc_file_attrs *attrs, struct osbc_error *err)
{
    if (!data && len)
        return osbcl_fail(err, OSBC_E_ARG, "file write: no data");
    struct upload u = {.data = data ? data : "", .data_len = len, .fd = -1};
    return upload(c, id, path, &u, attrs, err);
}

int osbc_file_upload(osbc_client *c, const char *id, const char *path, int fd,
                     const struct osbc_file_attrs *attrs, osbc_progress_cb progress, void *ud,
                     struct osbc_error *err)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return osbcl_fail(err, OSBC_E_ARG, "file upload: a bad descriptor");
    if (S_ISDIR(st.st_mode))
        return osbcl_fail(err, OSBC_E_ARG, "file upload: the descriptor is a directory");
    long long total = -1;
    if (S_ISREG(st.st_mode)) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        total = at >= 0 && at <= st.st_size ? (long long)(st.st_size - at) : -1;
    }
    struct upload u = {.fd = fd, .total = total, .progress = progress, .ud = ud};
    return upload(c, id, path, &u, attrs, err);
}

/* ------------------------------------------------------------ download */

struct download {
    int fd;
    long long done, total;
    osbc_progress_cb progress;
    void *ud;
    const struct osbcl_resp *rs; /* its head is there when the body starts */
    bool started;
    int error; /* errno of a failed write, or -1: stopped by progress */
};

/* The size a response announces, or -1. */
static long long announced(const struct osbcl_resp *rs)
{
    const char *v = rs->headers ? osbcl_resp_header(rs, "content-length") : NULL;
    char *end;
    long long n = v ? strtoll(v, &end, 10) : -1;
    return v && end != v && !*end && n >= 0 ? n : -1;
}

static int download_data(void *ud, const char *data, size_t len)
{
    struct download *d = ud;
    if (!d->started) {
        d->started = true;
        d->total = announced(d->rs);
    }
    while (len) {
        ssize_t n = write(d->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            d->error = n < 0 ? errno : EIO;
            return 1;
        }
        data += n;
        len -= (size_t)n;
        d->done += n;
    }
    if (d->progress && d->progress(d->ud, d->done, d->total)) {
        d->error = -1;
        return 1;
    }
    return 0;
}

int osbc_file_download(osbc_client *c, const char *id, const char *path, int fd,
                       osbc_progress_cb progress, void *ud, struct osbc_error *err)
{
    if (empty(id) || empty(path) || fd < 0)
        return osbcl_fail(err, OSBC_E_ARG, "file download: a sandbox id, a path and a descriptor");
    const char *one[] = {path};
    char *p = paths_query("/files/download", one, 1, err);
    if (!p)
        return OSBC_E_NOMEM;
    struct osbcl_resp rs = {0};
    struct download d = {.fd = fd, .progress = progress, .ud = ud, .total = -1, .rs = &rs};
    struct osbcl_req rq = {.method = "GET", .path = p, .on_data = download_data, .data_ud = &d};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (d.error > 0)
        rc = (errno = d.error, osbcl_fail_sys(err, OSBC_E_IO, "writing the download"));
    else if (d.error < 0)
        rc = osbcl_fail(err, OSBC_E_CANCELLED, "download stopped by the caller");
    else if (rc == 0 && (rs.status < 200 || rs.status >= 300))
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "GET /files/download");
    else if (rc == 0 && progress && !d.started) /* an empty file: one report still */
        progress(ud, 0, 0);
    if (rs.status)
        osbcl_resp_free(&rs);
    free(p);
    return rc;
}

static int read_file(osbc_client *c, const char *id, const char *path, const char *range,
                     char **data, size_t *len, struct osbc_error *err)
{
    if (empty(id) || empty(path) || !data)
        return osbcl_fail(err, OSBC_E_ARG, "file read: a sandbox id and a path");
    *data = NULL;
    const char *one[] = {path};
    char *p = paths_query("/files/download", one, 1, err);
    if (!p)
        return OSBC_E_NOMEM;
    const char *hdrs[] = {range, NULL};
    struct osbcl_req rq = {.method = "GET", .path = p, .headers = range ? hdrs : NULL};
    struct osbcl_resp rs = {0};
    int rc = osbcl_sbx_http(c, id, OSBCL_EXECD_PORT, &rq, &rs, err);
    if (rc == 0 && (rs.status < 200 || rs.status >= 300))
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "GET /files/download");
    if (rc == 0) {
        *data = rs.body;
        if (len)
            *len = rs.len;
        rs.body = NULL;
    }
    if (rs.status)
        osbcl_resp_free(&rs);
    free(p);
    return rc;
}

int osbc_file_read(osbc_client *c, const char *id, const char *path, char **data, size_t *len,
                   struct osbc_error *err)
{
    return read_file(c, id, path, NULL, data, len, err);
}

int osbc_file_read_range(osbc_client *c, const char *id, const char *path, long long offset,
                         long long length, char **data, size_t *len, struct osbc_error *err)
{
    if (offset < 0 || length == 0 || (length > 0 && length - 1 > LLONG_MAX - offset))
        return osbcl_fail(err, OSBC_E_ARG, "file read: offset >= 0 and a non-zero length");
    char range[80];
    if (length < 0)
        snprintf(range, sizeof range, "Range: bytes=%lld-", offset);
    else
        snprintf(range, sizeof range, "Range: bytes=%lld-%lld", offset, offset + length - 1);
    return read_file(c, id, path, range, data, len, err);
}

/* ------------------------------------------------------------ the JSON calls */

static int execd_json(osbc_client *c, const char *id, const char *method, const char *path,
                      json_t *body, char **out, struct osbc_error *err)
{
    char *text = NULL;
    if (body && !(text = osbcl_json_dump(body))) {
        json_decref(body);
        return osbcl_fail(err, OSBC_E_ARG, "cannot encode the request (not UTF-8?)");
    }
    json_decref(body);
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, method, path, text, out, err);
    free(text);
    return rc;
}

/* A call naming paths in its query (?path=a&path=b): checked, then sent. */
static int paths_call(osbc_client *c, const char *id, const char *method, const char *base,
                      const char *const *paths, size_t n, char **out, const char *what,
                      struct osbc_error *err)
{
    int rc = check_paths(id, paths, n, what, err);
    char *p = rc ? NULL : paths_query(base, paths, n, err);
    if (!p)
        return rc ? rc : OSBC_E_NOMEM;
    rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, method, p, NULL, out, err);
    free(p);
    return rc;
}

int osbc_file_info(osbc_client *c, const char *id, const char *const *paths, size_t n, char **json,
                   struct osbc_error *err)
{
    return paths_call(c, id, "GET", "/files/info", paths, n, json, "file info", err);
}

int osbc_file_remove(osbc_client *c, const char *id, const char *const *paths, size_t n,
                     struct osbc_error *err)
{
    return paths_call(c, id, "DELETE", "/files", paths, n, NULL, "file remove", err);
}

int osbc_dir_remove(osbc_client *c, const char *id, const char *const *paths, size_t n,
                    struct osbc_error *err)
{
    return paths_call(c, id, "DELETE", "/directories", paths, n, NULL, "directory remove", err);
}

int osbc_file_move(osbc_client *c, const char *id, const char *src, const char *dest,
                   struct osbc_error *err)
{
    if (empty(id) || empty(src) || empty(dest))
        return osbcl_fail(err, OSBC_E_ARG, "file move: a sandbox id, a source and a destination");
    json_t *b = json_pack("[{s:s,s:s}]", "src", src, "dest", dest);
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "file move: cannot encode the paths");
    return execd_json(c, id, "POST", "/files/mv", b, NULL, err);
}

int osbc_file_chmod(osbc_client *c, const char *id, const char *path,
                    const struct osbc_file_attrs *attrs, struct osbc_error *err)
{
    if (empty(id) || empty(path) || !attrs)
        return osbcl_fail(err, OSBC_E_ARG, "chmod: a sandbox id, a path and attributes");
    int rc = check_attrs(attrs, err);
    if (rc < 0)
        return rc;
    json_t *pm = osbcl_perm_json(attrs, -1), *b = json_object();
    if (!pm || !b || json_object_set_new(b, path, pm) < 0) {
        json_decref(b);
        return osbcl_fail(err, OSBC_E_ARG, "chmod: cannot encode the request");
    }
    return execd_json(c, id, "POST", "/files/permissions", b, NULL, err);
}

int osbc_file_replace(osbc_client *c, const char *id, const char *path, const char *old_text,
                      const char *new_text, long *count, struct osbc_error *err)
{
    if (empty(id) || empty(path) || empty(old_text) || !new_text)
        return osbcl_fail(err, OSBC_E_ARG,
                          "replace: a sandbox id, a path, a non-empty old "
                          "text and a new text");
    json_t *b = json_pack("{s:{s:s,s:s}}", path, "old", old_text, "new", new_text);
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "replace: cannot encode the request (not UTF-8?)");
    char *out;
    int rc = execd_json(c, id, "POST", "/files/replace?verbose=true", b, &out, err);
    if (rc < 0)
        return rc;
    json_t *j = json_loads(out, 0, NULL);
    json_t *n = json_object_get(json_object_get(j, path), "replacedCount");
    if (count)
        *count = json_is_integer(n) ? (long)json_integer_value(n) : -1;
    json_decref(j);
    free(out);
    return 0;
}

int osbc_file_search(osbc_client *c, const char *id, const char *path, const char *pattern,
                     char **json, struct osbc_error *err)
{
    if (empty(id) || empty(path))
        return osbcl_fail(err, OSBC_E_ARG, "search: a sandbox id and a path");
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/files/search?path=");
    osbcl_sb_esc(&p, path);
    osbcl_sb_adds(&p, "&pattern=");
    osbcl_sb_esc(&p, empty(pattern) ? "**" : pattern);
    char *q = osbcl_sb_done(&p, err);
    if (!q)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", q, NULL, json, err);
    free(q);
    return rc;
}

int osbc_dir_create(osbc_client *c, const char *id, const char *const *paths, size_t n,
                    const struct osbc_file_attrs *attrs, struct osbc_error *err)
{
    int rc = check_paths(id, paths, n, "mkdir", err);
    if (rc == 0)
        rc = check_attrs(attrs, err);
    if (rc < 0)
        return rc;
    json_t *b = json_object();
    for (size_t i = 0; b && i < n; i++) {
        json_t *pm = osbcl_perm_json(attrs, 0755);
        if (!pm || json_object_set_new(b, paths[i], pm) < 0) {
            json_decref(b);
            b = NULL;
        }
    }
    if (!b)
        return osbcl_fail(err, OSBC_E_ARG, "mkdir: cannot encode the request");
    return execd_json(c, id, "POST", "/directories", b, NULL, err);
}

int osbc_dir_list(osbc_client *c, const char *id, const char *path, int depth, char **json,
                  struct osbc_error *err)
{
    if (empty(id) || empty(path) || depth < 0)
        return osbcl_fail(err, OSBC_E_ARG, "list: a sandbox id, a path and a depth >= 0");
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, "/directories/list?path=");
    osbcl_sb_esc(&p, path);
    osbcl_sb_addf(&p, "&depth=%d", depth ? depth : 1);
    char *q = osbcl_sb_done(&p, err);
    if (!q)
        return OSBC_E_NOMEM;
    int rc = osbcl_sbx(c, id, OSBCL_EXECD_PORT, "GET", q, NULL, json, err);
    free(q);
    return rc;
}
