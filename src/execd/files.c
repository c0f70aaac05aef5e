/* execd file and directory API (protocol.md 3.2 /files*, /directories*,
 * 3.6-3.8). Handlers validate the request on the loop into a `batch`, then
 * the filesystem work runs on the thread pool (fs_job.h). Upload and
 * download stream and live in fs_upload.c / fs_download.c. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/ctl.h"
#include "common/json.h"
#include "common/xalloc.h"
#include "execd/errmap.h"
#include "execd/execd.h"
#include "execd/fs_download.h"
#include "execd/fs_glob.h"
#include "execd/fs_info.h"
#include "execd/fs_job.h"
#include "execd/fs_move.h"
#include "execd/fs_path.h"
#include "execd/fs_perm.h"
#include "execd/fs_replace.h"
#include "execd/fs_tree.h"
#include "execd/fs_upload.h"

/* One path-keyed operation. Strings point into batch.body or are owned
 * (path, dest are always owned copies). */
struct item {
    char *path; /* as the client wrote it */
    char *dest;
    struct osb_fs_perm perm;
    const char *old, *rep;
    size_t oldlen, replen;
};

struct batch {
    struct item *v;
    size_t n;
    json_t *body;
    bool verbose;
    struct osb_fs_glob *glob;
    int64_t depth;
};

static struct batch *batch_new(size_t n)
{
    struct batch *b = osb_xcalloc(1, sizeof *b);
    b->v = osb_xcalloc(n ? n : 1, sizeof *b->v);
    for (size_t i = 0; i < n; i++)
        b->v[i].perm = (struct osb_fs_perm){.uid = (uid_t)-1, .gid = (gid_t)-1};
    return b;
}

static void batch_free(void *ud)
{
    struct batch *b = ud;
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].path);
        free(b->v[i].dest);
    }
    free(b->v);
    json_decref(b->body);
    osb_fs_glob_free(b->glob);
    free(b);
}

/* Every value of a query parameter, copied (the job may outlive req). */
static struct batch *batch_from_query(struct osb_http_req *req, const char *name)
{
    const char *const *vals;
    size_t n = osb_http_req_query_all(req, name, &vals);
    struct batch *b = batch_new(n);
    for (size_t i = 0; i < n; i++)
        b->v[b->n++].path = osb_xstrdup(vals[i]);
    return b;
}

/* A required, non-empty query parameter; answers 400 MISSING_QUERY. */
static const char *need_query(struct osb_http_req *req, const char *name)
{
    const char *v = osb_http_req_query(req, name);
    if (v && *v)
        return v;
    osb_http_respond_error(req, 400, "MISSING_QUERY", "missing query parameter '%s'", name);
    return NULL;
}

static void bad_body(struct osb_http_req *req, const struct osb_err *err)
{
    osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "invalid request body: %s", err->msg);
}

/* Parse the buffered body as JSON of the given kind (JSON null is an empty
 * collection, as Go's decoder into a map/slice); answers 400 on failure. */
static json_t *body_json(struct osb_http_req *req, bool array)
{
    size_t len;
    const char *data = osb_http_req_body(req, &len);
    struct osb_err err = {0};
    json_t *j;
    if (osb_json_parse(data, len, false, &j, &err) < 0) {
        bad_body(req, &err);
        return NULL;
    }
    if (json_is_null(j)) {
        json_decref(j);
        return array ? json_array() : json_object();
    }
    if (array ? json_is_array(j) : json_is_object(j))
        return j;
    json_decref(j);
    osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                           "invalid request body: expected a JSON %s", array ? "array" : "object");
    return NULL;
}

/* ---- GET /files/info ---- */

static int run_info(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    struct osb_fs_names *names = osb_fs_names_new();
    json_t *out = json_object();
    int rc = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        _cleanup_free_ char *abs = osb_fs_path_abs(b->v[i].path);
        json_t *fi;
        rc = osb_fs_info_lstat(abs, names, &fi, err);
        if (rc == 0) {
            _cleanup_free_ char *key = osb_fs_utf8_sanitize(b->v[i].path);
            json_object_set_new(out, key, fi);
        }
    }
    osb_fs_job_result(job, out);
    osb_fs_names_free(names);
    return rc;
}

static void h_info(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    osb_fs_job_run(x->loop, req, run_info, batch_from_query(req, "path"), batch_free);
}

/* ---- DELETE /files ---- */

static int remove_file(const char *path, struct osb_err *err)
{
    _cleanup_free_ char *abs = osb_fs_path_abs(path);
    struct stat st;
    if (lstat(abs, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return osb_err_sys(err, "error removing file %s", path);
    }
    if (S_ISDIR(st.st_mode))
        return osb_err_set(err, OSB_E_INTERNAL, "error removing file %s: path is a directory",
                           path);
    if (unlink(abs) < 0 && errno != ENOENT)
        return osb_err_sys(err, "error removing file %s", path);
    return 0;
}

static int run_delete_files(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    (void)job;
    for (size_t i = 0; i < b->n; i++)
        if (remove_file(b->v[i].path, err) < 0)
            return -1;
    return 0;
}

static void h_delete_files(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    osb_fs_job_run(x->loop, req, run_delete_files, batch_from_query(req, "path"), batch_free);
}

/* ---- POST /files/mv ---- */

static int parse_mv_item(json_t *it, size_t i, struct item *out, struct osb_err *err)
{
    const char *src, *dest;
    if (!json_is_object(it))
        return osb_err_set(err, OSB_E_INVALID, "item %zu must be an object {src, dest}", i);
    if (osb_json_name(it, "src", true, &src, err) < 0 ||
        osb_json_name(it, "dest", true, &dest, err) < 0)
        return osb_err_wrap(err, "item %zu", i);
    if (!*src || !*dest)
        return osb_err_set(err, OSB_E_INVALID, "item %zu: src and dest must not be empty", i);
    out->path = osb_xstrdup(src);
    out->dest = osb_xstrdup(dest);
    return 0;
}

static int run_mv(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    (void)job;
    for (size_t i = 0; i < b->n; i++) {
        _cleanup_free_ char *src = osb_fs_path_abs(b->v[i].path);
        _cleanup_free_ char *dest = osb_fs_path_abs(b->v[i].dest);
        if (osb_fs_move(src, dest, err) < 0)
            return -1;
    }
    return 0;
}

static void h_mv(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    json_t *body = body_json(req, true);
    if (!body)
        return;
    struct batch *b = batch_new(json_array_size(body));
    b->body = body;
    struct osb_err err = {0};
    for (size_t i = 0; i < json_array_size(body); i++, b->n++) {
        if (parse_mv_item(json_array_get(body, i), i, &b->v[i], &err) < 0) {
            batch_free(b);
            bad_body(req, &err);
            return;
        }
    }
    osb_fs_job_run(x->loop, req, run_mv, b, batch_free);
}

/* ---- path-keyed bodies: permissions, directories, replace ---- */

/* {"<path>": Permission, ...}; unknown owners answer 500 as the reference. */
static struct batch *perm_batch(struct osb_http_req *req)
{
    json_t *body = body_json(req, false);
    if (!body)
        return NULL;
    struct batch *b = batch_new(json_object_size(body));
    b->body = body;
    const char *key;
    json_t *v;
    struct osb_err err = {0};
    json_object_foreach(body, key, v)
    {
        struct item *it = &b->v[b->n++];
        it->path = osb_xstrdup(key);
        if (osb_ctl_check("path", key, strlen(key), &err) < 0 ||
            osb_fs_perm_parse(v, key, &it->perm, &err) < 0) {
            batch_free(b);
            if (err.code == OSB_E_INVALID)
                bad_body(req, &err);
            else
                osb_execd_respond_err(req, &err);
            return NULL;
        }
    }
    return b;
}

static int run_permissions(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    (void)job;
    for (size_t i = 0; i < b->n; i++) {
        _cleanup_free_ char *abs = osb_fs_path_abs(b->v[i].path);
        if (osb_fs_perm_apply(abs, &b->v[i].perm, true, err) < 0)
            return -1; /* OSB_E_SYS: 500 even for a missing path, as the reference */
    }
    return 0;
}

static void h_permissions(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    struct batch *b = perm_batch(req);
    if (b)
        osb_fs_job_run(x->loop, req, run_permissions, b, batch_free);
}

/* mkdir -p; owner/group go to the directories it creates, the mode only
 * to the leaf and only when it is new. */
static int run_mkdir(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    (void)job;
    for (size_t i = 0; i < b->n; i++) {
        const struct osb_fs_perm *p = &b->v[i].perm;
        _cleanup_free_ char *abs = osb_fs_path_abs(b->v[i].path);
        bool created;
        if (osb_fs_tree_mkdirs(abs, p, &created, err) < 0)
            return -1;
        if (created && p->has_mode && chmod(abs, p->mode) < 0)
            return osb_err_sys(err, "chmod %s", abs);
    }
    return 0;
}

static void h_mkdir(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    struct batch *b = perm_batch(req);
    if (b)
        osb_fs_job_run(x->loop, req, run_mkdir, b, batch_free);
}

static int parse_replace_item(const char *path, json_t *v, struct item *it, struct osb_err *err)
{
    if (!json_is_object(v) && !json_is_null(v))
        return osb_err_set(err, OSB_E_INVALID, "%s: expected an object {old, new}", path);
    const char *old = "", *rep = "";
    if (osb_json_str(v, "old", false, &old, err) < 0 ||
        osb_json_str(v, "new", false, &rep, err) < 0)
        return osb_err_wrap(err, "%s", path);
    json_t *o = json_object_get(v, "old"), *n = json_object_get(v, "new");
    it->oldlen = json_is_string(o) ? json_string_length(o) : 0;
    it->replen = json_is_string(n) ? json_string_length(n) : 0;
    if (it->oldlen == 0)
        return osb_err_set(err, OSB_E_INVALID, "%s: old content must not be empty", path);
    it->old = old;
    it->rep = rep;
    return 0;
}

static int run_replace(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    json_t *out = b->verbose ? json_object() : NULL;
    if (out)
        osb_fs_job_result(job, out);
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->v[i];
        _cleanup_free_ char *abs = osb_fs_path_abs(it->path);
        int64_t count = 0;
        if (osb_fs_replace_file(abs, it->old, it->oldlen, it->rep, it->replen, &count, err) < 0)
            return -1;
        if (out)
            json_object_set_new(out, it->path,
                                json_pack("{sI}", "replacedCount", (json_int_t)count));
    }
    return 0;
}

static void h_replace(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    json_t *body = body_json(req, false);
    if (!body)
        return;
    struct batch *b = batch_new(json_object_size(body));
    b->body = body;
    const char *v = osb_http_req_query(req, "verbose");
    b->verbose = v && !strcmp(v, "true");
    const char *key;
    json_t *val;
    struct osb_err err = {0};
    json_object_foreach(body, key, val)
    {
        struct item *it = &b->v[b->n++];
        it->path = osb_xstrdup(key);
        if (osb_ctl_check("path", key, strlen(key), &err) < 0 ||
            parse_replace_item(key, val, it, &err) < 0) {
            batch_free(b);
            bad_body(req, &err);
            return;
        }
    }
    osb_fs_job_run(x->loop, req, run_replace, b, batch_free);
}

/* ---- GET /files/search, GET /directories/list ---- */

static int run_search(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    struct osb_fs_names *names = osb_fs_names_new();
    _cleanup_free_ char *abs = osb_fs_path_abs(b->v[0].path);
    json_t *out = json_array();
    osb_fs_job_result(job, out);
    int rc = osb_fs_tree_search(abs, b->glob, names, out, err);
    osb_fs_names_free(names);
    return rc;
}

static void h_search(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    const char *path = need_query(req, "path");
    if (!path)
        return;
    const char *pattern = osb_http_req_query(req, "pattern");
    struct osb_err err = {0};
    struct osb_fs_glob *g = osb_fs_glob_new(pattern && *pattern ? pattern : "**", &err);
    if (!g) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY", "%s", err.msg);
        return;
    }
    struct batch *b = batch_new(1);
    b->v[b->n++].path = osb_xstrdup(path);
    b->glob = g;
    osb_fs_job_run(x->loop, req, run_search, b, batch_free);
}

/* Go's strconv.Atoi: optional sign, decimal digits, no overflow. */
static bool parse_depth(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || isspace((unsigned char)s[0]))
        return false;
    *out = v;
    return true;
}

static int run_list(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    struct osb_fs_names *names = osb_fs_names_new();
    _cleanup_free_ char *abs = osb_fs_path_abs(b->v[0].path);
    json_t *out = json_array();
    osb_fs_job_result(job, out);
    int rc = osb_fs_tree_list(abs, b->depth, names, out, err);
    osb_fs_names_free(names);
    return rc;
}

static void h_list(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    const char *path = need_query(req, "path");
    if (!path)
        return;
    int64_t depth = 1;
    const char *d = osb_http_req_query(req, "depth");
    if (d && *d && (!parse_depth(d, &depth) || depth < 0)) {
        osb_http_respond_error(req, 400, "INVALID_REQUEST_BODY",
                               "invalid query parameter 'depth': %s", d);
        return;
    }
    struct batch *b = batch_new(1);
    b->v[b->n++].path = osb_xstrdup(path);
    b->depth = depth;
    osb_fs_job_run(x->loop, req, run_list, b, batch_free);
}

/* ---- DELETE /directories ---- */

/* rm -rf each path; every failure is a 500, as in the reference. */
static int run_rmdir(struct osb_fs_job *job, void *ud, struct osb_err *err)
{
    struct batch *b = ud;
    (void)job;
    for (size_t i = 0; i < b->n; i++) {
        if (!*b->v[i].path)
            continue;
        _cleanup_free_ char *abs = osb_fs_path_abs(b->v[i].path);
        if (!strcmp(abs, "/"))
            return osb_err_set(err, OSB_E_INTERNAL,
                               "error removing directory %s: refusing to remove /", b->v[i].path);
        if (osb_fs_tree_remove(abs, err) < 0) {
            err->code = OSB_E_SYS;
            return -1;
        }
    }
    return 0;
}

static void h_rmdir(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    osb_fs_job_run(x->loop, req, run_rmdir, batch_from_query(req, "path"), batch_free);
}

void osb_execd_files_routes(struct osb_execd *x)
{
    /* Every handler gets the execd context (its loop runs the jobs). */
    const struct osb_http_route routes[] = {
        {"GET", "/files/info", h_info, 0, x},
        {"DELETE", "/files", h_delete_files, 0, x},
        {"POST", "/files/mv", h_mv, 0, x},
        {"POST", "/files/permissions", h_permissions, 0, x},
        {"GET", "/files/search", h_search, 0, x},
        {"POST", "/files/replace", h_replace, 0, x},
        {"POST", "/files/upload", osb_fs_upload, OSB_ROUTE_STREAM_BODY, x},
        {"GET", "/files/download", osb_fs_download, 0, x},
        {"GET", "/directories/list", h_list, 0, x},
        {"POST", "/directories", h_mkdir, 0, x},
        {"DELETE", "/directories", h_rmdir, 0, x},
    };
    osb_http_server_add_routes(x->http, routes, sizeof routes / sizeof routes[0]);
}
