#include "execd/fs_upload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/xalloc.h"
#include "execd/errmap.h"
#include "execd/execd.h"
#include "execd/fs_atomic.h"
#include "execd/fs_job.h"
#include "execd/fs_path.h"
#include "execd/fs_perm.h"
#include "execd/fs_tree.h"
#include "execd/fs_writer.h"
#include "http/multipart.h"

/* An answer decided before the end of the body, sent once it has ended
 * (answering early would make clients that are still sending see a reset
 * instead of the error). */
struct verdict {
    int status; /* 0: none yet */
    const char *code;
    char msg[512];
};

struct pair {
    bool has_meta;
    struct verdict meta_err; /* bad metadata, reported after the count checks */
    char *target;            /* absolute */
    struct osb_fs_perm perm;
    struct osb_fs_tmp tmp; /* the file data */
    bool orphan;           /* data arrived before its metadata: tmp is in
                                the temp directory, not beside the target */
};

enum part_kind { PART_SKIP, PART_META, PART_FILE };

/* Bytes waiting for the disk before the request is paused. */
#define WRITE_HIGH_WATER (4 * 1024 * 1024)

struct upload {
    uv_loop_t *loop;
    struct osb_http_req *req;
    struct osb_multipart *mp;
    struct osb_fs_writer *w; /* file data goes to disk on the thread pool */
    bool paused, body_done;
    struct pair *pairs;
    size_t npairs, nmeta, nfile;
    enum part_kind kind;
    size_t cur; /* pair of the current part */
    struct osb_buf meta;
    struct verdict fail; /* first failure of the whole request */
};

static void verdict_set(struct verdict *v, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verdict_set(struct verdict *v, int status, const char *code, const char *fmt, ...)
{
    if (v->status)
        return;
    v->status = status;
    v->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

static void upload_free(void *ud)
{
    struct upload *u = ud;
    /* A descriptor still being written belongs to the writer from here on:
     * closing it ourselves could hit a reused number under a running write. */
    if (u->kind == PART_FILE && u->pairs[u->cur].tmp.fd >= 0)
        osb_fs_writer_close(u->w, osb_steal_fd(&u->pairs[u->cur].tmp.fd));
    osb_fs_writer_free(u->w);
    for (size_t i = 0; i < u->npairs; i++) {
        osb_fs_tmp_discard(&u->pairs[i].tmp);
        free(u->pairs[i].target);
    }
    free(u->pairs);
    osb_multipart_free(u->mp);
    osb_buf_free(&u->meta);
    free(u);
}

/* The pair with index i, creating empty ones up to it. */
static struct pair *pair_at(struct upload *u, size_t i)
{
    if (i >= u->npairs) {
        u->pairs = osb_xrealloc(u->pairs, (i + 1) * sizeof *u->pairs);
        for (size_t k = u->npairs; k <= i; k++)
            u->pairs[k] =
                (struct pair){.perm = {.uid = (uid_t)-1, .gid = (gid_t)-1}, .tmp = {.fd = -1}};
        u->npairs = i + 1;
    }
    return &u->pairs[i];
}

/* ---- metadata ---- */

/* Absolute target; an existing symlink is followed, so the upload replaces
 * the file it points to (the reference opens the path for writing). */
static char *resolve_target(const char *path)
{
    char *abs = osb_fs_path_abs(path);
    struct stat st;
    char *real;
    if (lstat(abs, &st) == 0 && S_ISLNK(st.st_mode) && (real = realpath(abs, NULL))) {
        free(abs);
        return real;
    }
    return abs;
}

static void parse_meta(struct pair *pr, const char *data, size_t len)
{
    struct osb_err err = {0};
    json_t *j = NULL;
    const char *path = NULL;
    if (osb_json_parse_object(data, len, false, &j, &err) < 0 ||
        osb_json_name(j, "path", false, &path, &err) < 0) {
        verdict_set(&pr->meta_err, 400, "INVALID_FILE_METADATA", "invalid metadata format. %s",
                    err.msg);
    } else if (!path || !*path) {
        verdict_set(&pr->meta_err, 400, "INVALID_FILE_METADATA", "metadata path is empty");
    } else if (osb_fs_perm_parse(j, path, &pr->perm, &err) < 0) {
        struct osb_execd_errinfo e = osb_execd_err_info(&err);
        if (e.status == 400)
            verdict_set(&pr->meta_err, 400, "INVALID_FILE_METADATA", "invalid metadata format. %s",
                        err.msg);
        else
            verdict_set(&pr->meta_err, e.status, e.code, "%s", err.msg);
    } else {
        pr->target = resolve_target(path);
    }
    json_decref(j);
}

/* ---- file data ---- */

static const char *temp_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t == '/' ? t : "/tmp";
}

/* mkdir -p the target's parent (new directories get the metadata's owner,
 * as the reference) and open a temp file beside the target. */
static int open_beside(struct pair *pr, struct osb_err *err)
{
    _cleanup_free_ char *dir = osb_fs_path_dir(pr->target);
    bool created;
    if (osb_fs_tree_mkdirs(dir, &pr->perm, &created, err) < 0)
        return osb_err_wrap(err, "error creating target directory %s", dir);
    /* 0777 less the umask: Go's os.OpenFile(..., os.ModePerm). Orphans
     * are created the same way, as they become the file by rename. */
    return osb_fs_tmp_create(pr->target, 0777, &pr->tmp, err);
}

static int begin_file(struct upload *u, struct pair *pr)
{
    struct osb_err err = {0};
    if (pr->has_meta && !pr->target)
        return 0; /* bad metadata: the data is not kept */
    int rc = pr->has_meta ? open_beside(pr, &err)
                          : osb_fs_tmp_create_in(temp_dir(), 0777, &pr->tmp, &err);
    if (rc < 0) {
        verdict_set(&u->fail, 500, "RUNTIME_ERROR", "%s", err.msg);
        return -1;
    }
    pr->orphan = !pr->has_meta;
    u->kind = PART_FILE;
    return 0;
}

/* ---- multipart callbacks ---- */

static int on_part_begin(void *ud, const struct osb_multipart_part *p)
{
    struct upload *u = ud;
    u->kind = PART_SKIP;
    /* Go's multipart form files only: parts without a file name are form
     * values, which the reference never reads. */
    if (!p->filename || !*p->filename)
        return 0;
    bool meta = !strcmp(p->name, "metadata"), file = !strcmp(p->name, "file");
    if (!meta && !file)
        return 0;
    size_t i = meta ? u->nmeta++ : u->nfile++;
    if (i >= OSB_MAX_UPLOAD_FILES) {
        verdict_set(&u->fail, 400, "INVALID_FILE", "more than %d files in one upload",
                    OSB_MAX_UPLOAD_FILES);
        return -1;
    }
    u->cur = i;
    struct pair *pr = pair_at(u, i);
    if (file)
        return begin_file(u, pr);
    pr->has_meta = true;
    osb_buf_reset(&u->meta);
    u->kind = PART_META;
    return 0;
}

static int on_part_data(void *ud, const char *data, size_t len)
{
    struct upload *u = ud;
    if (u->kind == PART_SKIP)
        return 0;
    struct pair *pr = &u->pairs[u->cur];
    if (u->kind == PART_META && osb_buf_add(&u->meta, data, len) < 0) {
        verdict_set(&pr->meta_err, 400, "INVALID_FILE_METADATA", "metadata part exceeds %d bytes",
                    OSB_MAX_PART_METADATA);
        u->kind = PART_SKIP;
    } else if (u->kind == PART_FILE) {
        osb_fs_writer_write(u->w, pr->tmp.fd, data, len);
    }
    return 0;
}

/* Metadata is parsed now; a file part's descriptor goes to the writer to
 * be closed after its data (reopened at commit), so a request with many
 * files does not pile up descriptors. */
static int on_part_end(void *ud)
{
    struct upload *u = ud;
    struct pair *pr = u->kind == PART_SKIP ? NULL : &u->pairs[u->cur];
    if (u->kind == PART_META && !pr->meta_err.status)
        parse_meta(pr, u->meta.data, u->meta.len);
    if (u->kind == PART_FILE)
        osb_fs_writer_close(u->w, osb_steal_fd(&pr->tmp.fd));
    u->kind = PART_SKIP;
    return 0;
}

/* ---- commit (thread pool) ---- */

/* Bring an orphan's data next to its target: rename when on the same
 * filesystem, copy otherwise. */
static int adopt_orphan(struct pair *pr, struct osb_err *err)
{
    struct osb_fs_tmp far = pr->tmp;
    pr->tmp = (struct osb_fs_tmp){.fd = -1};
    int rc = open_beside(pr, err);
    if (rc == 0 && rename(far.path, pr->tmp.path) == 0) {
        /* The descriptor is of the empty file the rename replaced. */
        close(osb_steal_fd(&pr->tmp.fd));
    } else if (rc == 0) {
        _cleanup_close_ int in = open(far.path, O_RDONLY | O_CLOEXEC);
        char buf[65536];
        ssize_t n = in < 0 ? -1 : 0;
        while (in >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (osb_fs_write_all(pr->tmp.fd, buf, (size_t)n) < 0)
                break;
        if (n != 0)
            rc = osb_err_sys(err, "move uploaded data to %s", pr->tmp.path);
    }
    osb_fs_tmp_discard(&far);
    return rc;
}

/* Mode and owner: the metadata's, else those of the file being replaced,
 * else the new file's defaults. */
static void commit_attrs(const struct pair *pr, struct osb_fs_tmp_attrs *a)
{
    struct stat st;
    *a = (struct osb_fs_tmp_attrs){.uid = (uid_t)-1, .gid = (gid_t)-1};
    if (stat(pr->target, &st) == 0 && S_ISREG(st.st_mode)) {
        *a = (struct osb_fs_tmp_attrs){.set_mode = true,
                                       .mode = st.st_mode & 07777,
                                       .uid = st.st_uid,
                                       .gid = st.st_gid,
                                       .owner_optional = true};
    }
    if (pr->perm.has_mode)
        a->set_mode = true, a->mode = pr->perm.mode;
    if (pr->perm.uid != (uid_t)-1 || pr->perm.gid != (gid_t)-1) {
        a->uid = pr->perm.uid;
        a->gid = pr->perm.gid;
        a->owner_optional = false;
    }
}

static int commit_one(struct pair *pr, struct osb_err *err)
{
    if (pr->orphan && adopt_orphan(pr, err) < 0)
        return -1;
    if (pr->tmp.fd < 0 && (pr->tmp.fd = open(pr->tmp.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return osb_err_sys(err, "reopen %s", pr->tmp.path);
    struct osb_fs_tmp_attrs a;
    commit_attrs(pr, &a);
    return osb_fs_tmp_commit(&pr->tmp, pr->target, &a, err);
}

static int run_commit(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct upload *u = ud;
    (void)job;
    for (size_t i = 0; i < u->npairs; i++)
        if (commit_one(&u->pairs[i], err) < 0)
            return osb_err_wrap(err, "error writing file %s", u->pairs[i].target);
    return 0;
}

/* ---- request ---- */

/* The checks of the reference, in its order, once the form is complete. */
static const struct verdict *form_verdict(struct upload *u, struct verdict *v)
{
    if (u->fail.status)
        return &u->fail;
    if (u->nmeta == 0)
        verdict_set(v, 400, "INVALID_FILE_METADATA", "metadata file is missing");
    else if (u->nfile == 0)
        verdict_set(v, 400, "INVALID_FILE_CONTENT", "file is missing");
    else if (u->nmeta != u->nfile)
        verdict_set(v, 400, "INVALID_FILE", "metadata and file count mismatch: %zu vs %zu",
                    u->nmeta, u->nfile);
    for (size_t i = 0; !v->status && i < u->npairs; i++)
        if (u->pairs[i].meta_err.status)
            *v = u->pairs[i].meta_err;
    return v->status ? v : NULL;
}

/* The body is over and the disk has caught up: answer, or commit. */
static void finish(struct upload *u)
{
    struct osb_http_req *req = u->req;
    struct verdict v = {0};
    osb_http_req_on_close(req, NULL, NULL);
    int werr = osb_fs_writer_error(u->w);
    if (werr)
        verdict_set(&u->fail, 500, "RUNTIME_ERROR", "error writing file: %s", strerror(werr));
    const struct verdict *bad = form_verdict(u, &v);
    if (bad) {
        /* Temp files go before the answer: a client that looks right after
         * it must find none. */
        v = *bad;
        upload_free(u);
        osb_http_respond_error(req, v.status, v.code, "%s", v.msg);
        return;
    }
    osb_fs_job_run(u->loop, req, run_commit, u, upload_free);
}

/* After each write job: stop early on a write error, resume the paused
 * body once the queue has drained to half, or finish. Resuming may run the
 * whole rest of the request (even free u), so it comes last. */
static void on_written(void *ud)
{
    struct upload *u = ud;
    if (osb_fs_writer_error(u->w) && !u->fail.status)
        verdict_set(&u->fail, 500, "RUNTIME_ERROR", "error writing file: %s",
                    strerror(osb_fs_writer_error(u->w)));
    if (u->body_done) {
        if (u->fail.status || osb_fs_writer_idle(u->w))
            finish(u);
        return;
    }
    if (u->paused && osb_fs_writer_pending(u->w) < WRITE_HIGH_WATER / 2) {
        u->paused = false;
        osb_http_req_resume(u->req);
    }
}

static void on_body(struct osb_http_req *req, const char *data, size_t len, void *ud)
{
    struct upload *u = ud;
    struct osb_err err = {0};
    if (u->fail.status || !u->mp)
        return; /* the rest of the body is read and dropped */
    if (osb_multipart_feed(u->mp, data, len, &err) < 0)
        verdict_set(&u->fail, 400, "INVALID_FILE", "invalid multipart form: %s", err.msg);
    if (!u->paused && osb_fs_writer_pending(u->w) >= WRITE_HIGH_WATER) {
        u->paused = true;
        osb_http_req_pause(req);
    }
}

static void on_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    upload_free(ud);
}

static void on_end(struct osb_http_req *req, void *ud)
{
    struct upload *u = ud;
    struct osb_err err = {0};
    (void)req;
    u->body_done = true;
    if (!u->fail.status && u->mp && osb_multipart_finish(u->mp, &err) < 0)
        verdict_set(&u->fail, 400, "INVALID_FILE", "invalid multipart form: %s", err.msg);
    /* A failed upload is answered at once; a good one once its data is on
     * disk (on_written calls finish). */
    if (u->fail.status || osb_fs_writer_idle(u->w))
        finish(u);
}

void osb_fs_upload(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    struct upload *u = osb_xcalloc(1, sizeof *u);
    u->req = req;
    u->loop = x->loop;
    u->w = osb_fs_writer_new(x->loop, on_written, u);
    osb_buf_init(&u->meta, OSB_MAX_PART_METADATA);
    static const struct osb_multipart_cbs cbs = {on_part_begin, on_part_data, on_part_end};
    const char *ctype = osb_http_req_header(req, "Content-Type");
    struct osb_err err = {0};
    if (!ctype)
        verdict_set(&u->fail, 400, "INVALID_FILE", "multipart form is empty: no Content-Type");
    else if (!(u->mp = osb_multipart_new(ctype, &cbs, u, &err)))
        verdict_set(&u->fail, 400, "INVALID_FILE", "multipart form is empty: %s", err.msg);
    osb_http_req_on_close(req, on_gone, u);
    osb_http_req_on_body(req, on_body, on_end, u);
}
