#include "image/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/fsutil.h"
#include "common/random.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "image/export.h"
#include "image/layer.h"
#include "image/oci_archive.h"
#include "image/ref.h"

#define RECORD "image.json"
#define HOST "host"
#define NAME_MAX_LEN 200

struct pending {
    char key[128];
    int fd; /* shared lock on .use-<key> until the layer is recorded */
};

struct osb_istore {
    char *state, *layers, *images;
    pthread_mutex_t mu; /* guards pending */
    struct pending *pending;
    size_t n_pending, cap_pending;
};

/* ------------------------------------------------------------ names, keys, locks */

int osb_istore_name_check(const char *name, struct osb_err *err)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0)
        return osb_err_set(err, OSB_E_INVALID, "image name is empty");
    if (n > NAME_MAX_LEN)
        return osb_err_set(err, OSB_E_INVALID, "image name longer than %d characters",
                           NAME_MAX_LEN);
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` must start with a lower-case letter or digit", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("._:/-", c);
        if (!ok)
            return osb_err_set(err, OSB_E_INVALID,
                               "image name `%s` has character '%c'; allowed: a-z 0-9 . _ : / -",
                               name, c);
    }
    if (strstr(name, "..") || strstr(name, "//") || name[n - 1] == '/' || strstr(name, "/."))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` has an empty, hidden or \"..\" path component", name);
    return 0;
}

/* The record directory of a name: '/' '+', ':' '@', '@' '%'. Any stored
 * name maps to one plain directory entry (no '/', not hidden). */
static int dir_of(const char *name, char *out, size_t n, struct osb_err *err)
{
    size_t len = strlen(name);
    if (len == 0 || len >= n || len > 255 || name[0] == '.' || strcmp(name, HOST) == 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", name);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if ((unsigned char)c <= ' ' || c == 0x7f || c == '+' || c == '%')
            return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", name);
        out[i] = c == '/' ? '+' : c == ':' ? '@' : c == '@' ? '%' : c;
    }
    out[len] = '\0';
    return 0;
}

static bool key_ok(const char *k)
{
    if (!*k || strlen(k) >= 128 || k[0] == '.' || k[0] == '-')
        return false;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '-'))
            return false;
    return true;
}

static char *layer_path(const struct osb_istore *s, const char *key)
{
    return osb_xasprintf("%s/%s", s->layers, key);
}

static bool layer_exists(const struct osb_istore *s, const char *key)
{
    _cleanup_free_ char *p = layer_path(s, key);
    struct stat st;
    return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* flock on <layers>/<kind><key>; a file unlinked (by prune) between our
 * open and our lock is retried so both sides agree on one inode. */
static int lock_key(const struct osb_istore *s, const char *kind, const char *key, int op,
                    struct osb_err *err)
{
    _cleanup_free_ char *p = osb_xasprintf("%s/%s%s", s->layers, kind, key);
    for (;;) {
        int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return osb_err_sys(err, "open `%s`", p);
        if (OSB_RETRY(flock(fd, op)) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return e == EWOULDBLOCK ? -2 : osb_err_sys(err, "lock `%s`", p);
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            return fd;
        close(fd);
    }
}

static void unlink_locks(const struct osb_istore *s, const char *key)
{
    _cleanup_free_ char *a = osb_xasprintf("%s/.use-%s", s->layers, key);
    _cleanup_free_ char *b = osb_xasprintf("%s/.lock-%s", s->layers, key);
    unlink(b);
    unlink(a);
}

/* ------------------------------------------------------------ records */

static char **strv_of(json_t *a)
{
    if (!json_is_array(a))
        return NULL;
    size_t n = json_array_size(a), i, o = 0;
    char **v = osb_xcalloc(n + 1, sizeof *v);
    json_t *x;
    json_array_foreach(a, i, x)
    {
        if (json_is_string(x))
            v[o++] = osb_xstrdup(json_string_value(x));
    }
    return v;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void osb_image_free(struct osb_image *im)
{
    if (!im)
        return;
    strv_free(im->layers);
    strv_free(im->env);
    strv_free(im->entrypoint);
    strv_free(im->cmd);
    free(im->workdir);
    free(im->user);
    memset(im, 0, sizeof *im);
}

static char *str_or_null(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v && *v ? osb_xstrdup(v) : NULL;
}

static int record_parse(const struct osb_istore *s, json_t *j, struct osb_image *out,
                        const char *path, struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    const char *name = json_string_value(json_object_get(j, "name"));
    json_t *layers = json_object_get(j, "layers");
    if (!name || !json_is_array(layers))
        return osb_err_set(err, OSB_E_INTERNAL, "image record `%s` is malformed", path);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->digest, sizeof out->digest, "%s",
             json_string_value(json_object_get(j, "digest")) ?: "");
    snprintf(out->base, sizeof out->base, "%s",
             json_string_value(json_object_get(j, "base")) ?: "");
    size_t n = json_array_size(layers), i;
    out->layers = osb_xcalloc(n + 1, sizeof *out->layers);
    json_t *k;
    json_array_foreach(layers, i, k)
    {
        const char *key = json_string_value(k);
        if (!key || !key_ok(key)) {
            osb_image_free(out);
            return osb_err_set(err, OSB_E_INTERNAL, "image record `%s`: bad layer key", path);
        }
        out->layers[i] = layer_path(s, key);
    }
    out->env = strv_of(json_object_get(j, "env"));
    out->entrypoint = strv_of(json_object_get(j, "entrypoint"));
    out->cmd = strv_of(json_object_get(j, "cmd"));
    out->workdir = str_or_null(j, "workdir");
    out->user = str_or_null(j, "user");
    out->size_bytes = (uint64_t)json_integer_value(json_object_get(j, "size"));
    out->created_ms = json_integer_value(json_object_get(j, "created"));
    return 0;
}

/* 0, or OSB_E_NOTFOUND when the directory has no record. */
static int record_read(const struct osb_istore *s, const char *dir, const char *shown,
                       struct osb_image *out, struct osb_err *err)
{
    _cleanup_free_ char *p = osb_xasprintf("%s/%s/%s", s->images, dir, RECORD);
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    if (!j) {
        if (access(p, F_OK) < 0 && errno == ENOENT)
            return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", shown);
        return osb_err_set(err, OSB_E_INTERNAL, "image `%s`: record `%s` unreadable: %s", shown, p,
                           je.text);
    }
    int r = record_parse(s, j, out, p, err);
    json_decref(j);
    return r;
}

/* Write the record of dir: replacing one (a re-pull) or only where none
 * is (imports, snapshots: OSB_E_EXISTS). Atomic either way. */
static int record_write(const struct osb_istore *s, const char *name, json_t *rec, bool replace,
                        struct osb_err *err)
{
    char dir[300], rnd[17];
    if (dir_of(name, dir, sizeof dir, err) < 0)
        return osb_err_set(err, OSB_E_INVALID, "image name `%s` cannot be stored", name);
    _cleanup_free_ char *d = osb_xasprintf("%s/%s", s->images, dir);
    if (mkdir(d, 0755) < 0 && errno != EEXIST)
        return osb_err_sys(err, "create `%s`", d);
    osb_random_hex(rnd, 8);
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.%s.%s", d, RECORD, rnd);
    _cleanup_free_ char *final = osb_xasprintf("%s/%s", d, RECORD);
    if (json_dump_file(rec, tmp, JSON_INDENT(1)) < 0) {
        unlink(tmp);
        return osb_err_sys(err, "write `%s`", tmp);
    }
    _cleanup_close_ int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0) {
        unlink(tmp);
        return osb_err_sys(err, "sync `%s`", tmp);
    }
    int r = replace ? rename(tmp, final) : link(tmp, final);
    int e = errno;
    if (!replace || r < 0)
        unlink(tmp);
    if (r < 0 && e == EEXIST)
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` already exists", name);
    errno = e;
    return r < 0 ? osb_err_sys(err, "install `%s`", final) : 0;
}

static json_t *record_new(const char *name, const char *digest, const char *base,
                          const char *const *keys, size_t n_keys, uint64_t size)
{
    json_t *layers = json_array();
    for (size_t i = 0; i < n_keys; i++)
        json_array_append_new(layers, json_string(keys[i]));
    return json_pack("{s:s, s:s, s:s, s:o, s:I, s:I}", "name", name, "digest", digest, "base", base,
                     "layers", layers, "size", (json_int_t)size, "created",
                     (json_int_t)osb_now_ms());
}

/* ------------------------------------------------------------ open, get, list */

static void clean_temporaries(struct osb_istore *s);

int osb_istore_open(const char *state_dir, struct osb_istore **out, struct osb_err *err)
{
    struct osb_istore *s = osb_xcalloc(1, sizeof *s);
    s->state = osb_xstrdup(state_dir);
    s->layers = osb_xasprintf("%s/layers", state_dir);
    s->images = osb_xasprintf("%s/images", state_dir);
    pthread_mutex_init(&s->mu, NULL);
    if (osb_mkdir_p(s->layers, 0700, err) < 0 || osb_mkdir_p(s->images, 0755, err) < 0) {
        osb_istore_close(s);
        return osb_err_wrap(err, "open the image store in `%s`", state_dir);
    }
    clean_temporaries(s);
    *out = s;
    return 0;
}

void osb_istore_close(struct osb_istore *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_pending; i++)
        close(s->pending[i].fd);
    free(s->pending);
    pthread_mutex_destroy(&s->mu);
    free(s->state);
    free(s->layers);
    free(s->images);
    free(s);
}

const char *osb_istore_layers_dir(const struct osb_istore *s)
{
    return s->layers;
}

/* The record directory holding name: exact first, then canonical. */
static int find(const struct osb_istore *s, const char *name, struct osb_image *out,
                struct osb_err *err)
{
    char dir[300], canon[600];
    struct osb_err e1 = {0};
    if (dir_of(name, dir, sizeof dir, &e1) == 0 && record_read(s, dir, name, out, &e1) == 0)
        return 0;
    if (e1.code != OSB_E_NOTFOUND) {
        *err = e1;
        return -1;
    }
    struct osb_ref ref;
    if (osb_ref_parse(name, &ref, NULL) == 0) {
        osb_ref_string(&ref, canon, sizeof canon);
        if (strcmp(canon, name) != 0 && dir_of(canon, dir, sizeof dir, NULL) == 0)
            return record_read(s, dir, name, out, err);
    }
    return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", name);
}

int osb_istore_get(struct osb_istore *s, const char *name, struct osb_image *out,
                   struct osb_err *err)
{
    return find(s, name, out, err);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct osb_image *)a)->name, ((const struct osb_image *)b)->name);
}

int osb_istore_list(struct osb_istore *s, struct osb_image **out, size_t *n, struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(s->images);
    if (!d)
        return osb_err_sys(err, "read `%s`", s->images);
    struct osb_image *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, HOST) == 0)
            continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            v = osb_xrealloc(v, cap * sizeof *v);
        }
        if (record_read(s, e->d_name, e->d_name, &v[cnt], NULL) == 0)
            cnt++;
    }
    if (cnt)
        qsort(v, cnt, sizeof *v, by_name);
    *out = v;
    *n = cnt;
    return 0;
}

/* ------------------------------------------------------------ pull */

struct pull {
    struct osb_istore *s;
    struct osb_registry *reg;
    const char *image;
    osb_istore_progress_cb progress;
    void *ud;
    int *use_fds;
    size_t n_use;
};

static void say(struct pull *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct pull *p, const char *fmt, ...)
{
    if (!p->progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    p->progress(p->ud, line);
}

struct feed {
    struct osb_layer_writer *w;
    bool broken; /* the unpacker stopped; why: */
    struct osb_err why;
};

/* Once the unpacker fails, the rest of the blob is still read and hashed
 * (the registry client bounds it by the manifest's size): a corrupted blob
 * must be reported as a digest mismatch, not as whatever the damaged bytes
 * made the unpacker say. */
static int feed_layer(void *ud, const void *data, size_t len, struct osb_err *err)
{
    struct feed *f = ud;
    (void)err;
    if (!f->broken && osb_layer_write(f->w, data, len, &f->why) < 0)
        f->broken = true;
    return 0;
}

/* Fetch one blob into a temporary layer, then commit it by rename(). */
static int fetch_layer(struct pull *p, const struct osb_blob *b, const char *key,
                       struct osb_err *err)
{
    char rnd[17];
    osb_random_hex(rnd, 8);
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.tmp-%s.%s", p->s->layers, rnd, key);
    _cleanup_free_ char *final = layer_path(p->s, key);
    struct osb_layer_writer *w = NULL;
    int64_t t0 = osb_mono_ms();
    if (osb_layer_begin(tmp, &w, err) < 0)
        return -1;
    struct feed f = {.w = w};
    if (osb_registry_blob(p->reg, b, feed_layer, &f, err) < 0) {
        osb_layer_abort(w);
        return -1;
    }
    if (f.broken) {
        osb_layer_abort(w);
        *err = f.why;
        return -1;
    }
    if (osb_layer_commit(w, err) < 0)
        return -1;
    if (rename(tmp, final) < 0) {
        int e = errno;
        osb_layer_discard(tmp);
        if (e != EEXIST && e != ENOTEMPTY) { /* else: a racing writer won */
            errno = e;
            return osb_err_sys(err, "install layer `%s`", final);
        }
    }
    int64_t ms = osb_mono_ms() - t0;
    say(p, "%.19s: %.1f MB in %.1f s", b->digest, (double)b->size / 1e6, (double)ms / 1000.0);
    return 0;
}

/* Make the layer present and keep it from prune until the record is
 * written: a shared lock on .use-<key>, then (when absent) the exclusive
 * fetch lock and a re-check, so concurrent pulls fetch it once. */
static int ensure_layer(struct pull *p, const struct osb_blob *b, const char *key,
                        struct osb_err *err)
{
    int use = lock_key(p->s, ".use-", key, LOCK_SH, err);
    if (use < 0)
        return -1;
    p->use_fds[p->n_use++] = use;
    if (layer_exists(p->s, key)) {
        say(p, "%.19s: already present", b->digest);
        return 0;
    }
    int fl = lock_key(p->s, ".lock-", key, LOCK_EX, err);
    if (fl < 0)
        return -1;
    int r = 0;
    if (layer_exists(p->s, key))
        say(p, "%.19s: fetched by another pull", b->digest);
    else
        r = fetch_layer(p, b, key, err);
    close(fl);
    return r;
}

/* "image `x`: layer sha256:…: why", whether or not why named the image. */
static int layer_error(struct pull *p, const char *digest, struct osb_err *err)
{
    if (!err)
        return -1;
    char prefix[700], msg[sizeof err->msg];
    snprintf(prefix, sizeof prefix, "image `%s`: ", p->image);
    size_t n = strlen(prefix);
    const char *why = strncmp(err->msg, prefix, n) == 0 ? err->msg + n : err->msg;
    snprintf(msg, sizeof msg, "%slayer %.19s: %s", prefix, digest, why);
    snprintf(err->msg, sizeof err->msg, "%s", msg);
    return -1;
}

static json_t *config_record(json_t *rec, json_t *config)
{
    json_t *c = json_object_get(config, "config");
    json_t *env = json_object_get(c, "Env"), *ep = json_object_get(c, "Entrypoint");
    json_t *cmd = json_object_get(c, "Cmd");
    json_object_set(rec, "env", json_is_array(env) ? env : json_null());
    json_object_set(rec, "entrypoint", json_is_array(ep) ? ep : json_null());
    json_object_set(rec, "cmd", json_is_array(cmd) ? cmd : json_null());
    const char *wd = json_string_value(json_object_get(c, "WorkingDir"));
    const char *user = json_string_value(json_object_get(c, "User"));
    json_object_set_new(rec, "workdir", wd && *wd ? json_string(wd) : json_null());
    json_object_set_new(rec, "user", user && *user ? json_string(user) : json_null());
    return rec;
}

static int pull_layers(struct pull *p, const struct osb_manifest *m, char **keys, uint64_t *size,
                       struct osb_err *err)
{
    *size = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        keys[i] = osb_xasprintf("sha256-%s", m->layers[i].digest + 7);
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            dup = dup || strcmp(keys[j], keys[i]) == 0;
        if (dup)
            continue;
        if (ensure_layer(p, &m->layers[i], keys[i], err) < 0)
            return layer_error(p, m->layers[i].digest, err);
        _cleanup_free_ char *dir = layer_path(p->s, keys[i]);
        unsigned long long bytes = 0;
        if (osb_layer_size(dir, &bytes, err) < 0)
            return -1;
        *size += bytes;
    }
    return 0;
}

static int pull_manifest(struct pull *p, const struct osb_manifest *m, struct osb_err *err)
{
    char **keys = osb_xcalloc(m->n_layers + 1, sizeof *keys);
    p->use_fds = osb_xcalloc(m->n_layers + 1, sizeof *p->use_fds);
    uint64_t size = 0;
    int r = pull_layers(p, m, keys, &size, err);
    if (r == 0) {
        json_t *rec =
            record_new(p->image, m->digest, "", (const char *const *)keys, m->n_layers, size);
        config_record(rec, m->config);
        r = record_write(p->s, p->image, rec, true, err);
        json_decref(rec);
    }
    for (size_t i = 0; i < p->n_use; i++)
        close(p->use_fds[i]);
    free(p->use_fds);
    strv_free(keys);
    return r;
}

int osb_istore_pull(struct osb_istore *s, const char *refstr, const struct osb_registry_opts *o,
                    osb_istore_progress_cb progress, void *ud, struct osb_image *out,
                    struct osb_err *err)
{
    struct osb_ref ref;
    char image[600];
    if (osb_ref_parse(refstr, &ref, err) < 0)
        return -1;
    osb_ref_string(&ref, image, sizeof image);
    struct pull p = {.s = s, .image = image, .progress = progress, .ud = ud};
    if (osb_registry_open(&ref, o, &p.reg, err) < 0)
        return -1;
    struct osb_manifest m;
    say(&p, "%s: resolving", image);
    int r = osb_registry_manifest(p.reg, &m, err);
    if (r == 0) {
        say(&p, "%s: manifest %s, %zu layers", image, m.digest, m.n_layers);
        r = pull_manifest(&p, &m, err);
        osb_manifest_free(&m);
    }
    osb_registry_close(p.reg);
    if (r == 0 && out)
        r = find(s, image, out, err);
    return r;
}

/* ------------------------------------------------------------ import, add */

static bool record_exists(const struct osb_istore *s, const char *name)
{
    char dir[300];
    if (dir_of(name, dir, sizeof dir, NULL) < 0)
        return false;
    _cleanup_free_ char *p = osb_xasprintf("%s/%s/%s", s->images, dir, RECORD);
    return access(p, F_OK) == 0;
}

static int import_layer(struct osb_istore *s, const char *key, const char *tar_path, uint64_t *size,
                        struct osb_err *err)
{
    char rnd[17];
    osb_random_hex(rnd, 8);
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.tmp-%s.%s", s->layers, rnd, key);
    _cleanup_free_ char *final = layer_path(s, key);
    int fl = lock_key(s, ".lock-", key, LOCK_EX, err);
    if (fl < 0)
        return -1;
    int r = osb_layer_from_file(tmp, tar_path, err);
    if (r == 0 && rename(tmp, final) < 0) {
        r = osb_err_sys(err, "install layer `%s`", final);
        osb_layer_discard(tmp);
    }
    unsigned long long bytes = 0;
    if (r == 0 && (r = osb_layer_size(final, &bytes, err)) == 0)
        *size = bytes;
    close(fl);
    return r;
}

/* The layers of an OCI layout unpacked in blobs (oci_archive.h), keyed by
 * digest as pulled layers are (a layer the store has is not unpacked
 * again), then the record with the image's config. */
static int import_oci(struct osb_istore *s, const char *name, const char *blobs,
                      const struct osb_manifest *m, struct osb_err *err)
{
    char **keys = osb_xcalloc(m->n_layers + 1, sizeof *keys);
    int *use = osb_xcalloc(m->n_layers + 1, sizeof *use);
    size_t n_use = 0;
    uint64_t size = 0;
    int r = 0;
    for (size_t i = 0; i < m->n_layers && r == 0; i++) {
        keys[i] = osb_xasprintf("sha256-%s", m->layers[i].digest + 7);
        int u = lock_key(s, ".use-", keys[i], LOCK_SH, err);
        if (u < 0) {
            r = -1;
            break;
        }
        use[n_use++] = u;
        if (!layer_exists(s, keys[i])) {
            int fl = lock_key(s, ".lock-", keys[i], LOCK_EX, err);
            if (fl < 0) {
                r = -1;
                break;
            }
            if (!layer_exists(s, keys[i])) {
                _cleanup_free_ char *src = osb_xasprintf("%s/%s", blobs, m->layers[i].digest + 7);
                _cleanup_free_ char *tmp = osb_xasprintf("%s/.tmp-%s", blobs, keys[i]);
                _cleanup_free_ char *final = layer_path(s, keys[i]);
                r = osb_layer_from_file(tmp, src, err);
                if (r == 0 && rename(tmp, final) < 0) {
                    r = osb_err_sys(err, "install layer `%s`", final);
                    osb_layer_discard(tmp);
                }
            }
            close(fl);
        }
        _cleanup_free_ char *dir = layer_path(s, keys[i]);
        unsigned long long bytes = 0;
        if (r == 0 && (r = osb_layer_size(dir, &bytes, err)) == 0)
            size += bytes;
    }
    if (r == 0) {
        json_t *rec = record_new(name, "", "", (const char *const *)keys, m->n_layers, size);
        config_record(rec, m->config);
        r = record_write(s, name, rec, false, err);
        json_decref(rec);
    }
    for (size_t i = 0; i < n_use; i++)
        close(use[i]);
    free(use);
    strv_free(keys);
    return r;
}

int osb_istore_import(struct osb_istore *s, const char *name, const char *tar_path,
                      struct osb_err *err)
{
    if (osb_istore_name_check(name, err) < 0)
        return -1;
    if (strcmp(name, HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "`host` is the built-in image's name");
    if (record_exists(s, name))
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` already exists", name);
    /* An OCI layout archive: its blobs go to a temporary (removed at the
     * next open if we die) and its layers and config are imported. */
    char rnd[17];
    osb_random_hex(rnd, 8);
    _cleanup_free_ char *blobs = osb_xasprintf("%s/.tmp-%s.import-%s", s->layers, rnd, rnd);
    if (mkdir(blobs, 0700) < 0)
        return osb_err_sys(err, "create `%s`", blobs);
    struct osb_manifest m;
    int oci = osb_oci_archive_read(tar_path, blobs, name, &m, err);
    if (oci == 1) {
        oci = import_oci(s, name, blobs, &m, err) < 0 ? -1 : 1;
        osb_manifest_free(&m);
    }
    osb_layer_discard(blobs);
    if (oci < 0 && err && err->code != OSB_E_EXISTS)
        return osb_err_wrap(err, "import image `%s` from `%s`", name, tar_path);
    if (oci != 0)
        return oci < 0 ? -1 : 0;
    char uuid[37];
    osb_random_uuid4(uuid);
    _cleanup_free_ char *key = osb_xasprintf("tar-%s", uuid);
    int use = lock_key(s, ".use-", key, LOCK_SH, err);
    if (use < 0)
        return osb_err_wrap(err, "import image `%s`", name);
    uint64_t size = 0;
    int r = import_layer(s, key, tar_path, &size, err);
    if (r == 0) {
        const char *keys[] = {key};
        json_t *rec = record_new(name, "", "", keys, 1, size);
        config_record(rec, NULL);
        r = record_write(s, name, rec, false, err);
        json_decref(rec);
        if (r < 0) {
            _cleanup_free_ char *dir = layer_path(s, key);
            osb_layer_discard(dir);
        }
    }
    close(use);
    if (r < 0 && err && err->code != OSB_E_EXISTS)
        return osb_err_wrap(err, "import image `%s` from `%s`", name, tar_path);
    return r;
}

void osb_istore_new_layer(const struct osb_istore *cs, const char *prefix, char *out, size_t n)
{
    struct osb_istore *s = (struct osb_istore *)cs; /* pending is bookkeeping */
    char uuid[37];
    osb_random_uuid4(uuid);
    struct pending pd = {.fd = -1};
    snprintf(pd.key, sizeof pd.key, "%s-%s", prefix, uuid);
    snprintf(out, n, "%s/%s", s->layers, pd.key);
    pd.fd = lock_key(s, ".use-", pd.key, LOCK_SH, NULL);
    if (pd.fd < 0)
        return; /* then prune may race it; the add still works */
    pthread_mutex_lock(&s->mu);
    if (s->n_pending == s->cap_pending) {
        s->cap_pending = s->cap_pending ? 2 * s->cap_pending : 8;
        s->pending = osb_xrealloc(s->pending, s->cap_pending * sizeof *s->pending);
    }
    s->pending[s->n_pending++] = pd;
    pthread_mutex_unlock(&s->mu);
}

/* The key of an absolute layer dir directly under <layers>. */
static const char *key_of(const struct osb_istore *s, const char *dir)
{
    size_t n = strlen(s->layers);
    if (strncmp(dir, s->layers, n) != 0 || dir[n] != '/' || !key_ok(dir + n + 1))
        return NULL;
    return dir + n + 1;
}

static void release_pending(struct osb_istore *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n_pending; i++)
        if (strcmp(s->pending[i].key, key) == 0) {
            close(s->pending[i].fd);
            s->pending[i] = s->pending[--s->n_pending];
            break;
        }
    pthread_mutex_unlock(&s->mu);
}


int osb_istore_add(struct osb_istore *s, const struct osb_image *im, struct osb_err *err)
{
    size_t n = 0;
    while (im->layers && im->layers[n])
        n++;
    const char **keys = osb_xcalloc(n + 1, sizeof *keys);
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        keys[i] = key_of(s, im->layers[i]);
        if (!keys[i] || !layer_exists(s, keys[i]))
            r = osb_err_set(err, OSB_E_INVALID, "image `%s`: `%s` is not a layer of the store",
                            im->name, im->layers[i]);
    }
    if (r == 0 && im->base[0] && strcmp(im->base, HOST) != 0 && !record_exists(s, im->base))
        r = osb_err_set(err, OSB_E_NOTFOUND, "image `%s`: base image `%s` not found", im->name,
                        im->base);
    if (r == 0) {
        json_t *rec = record_new(im->name, im->digest, im->base, keys, n, im->size_bytes);
        json_object_set_new(rec, "env", osb_json_strv(im->env));
        json_object_set_new(rec, "entrypoint", osb_json_strv(im->entrypoint));
        json_object_set_new(rec, "cmd", osb_json_strv(im->cmd));
        json_object_set_new(rec, "workdir", im->workdir ? json_string(im->workdir) : json_null());
        json_object_set_new(rec, "user", im->user ? json_string(im->user) : json_null());
        r = record_write(s, im->name, rec, false, err);
        json_decref(rec);
    }
    for (size_t i = 0; i < n && r == 0; i++)
        release_pending(s, keys[i]);
    free(keys);
    return r;
}

/* ------------------------------------------------------------ remove, prune */

int osb_istore_remove(struct osb_istore *s, const char *name, osb_istore_in_use_cb in_use, void *ud,
                      struct osb_err *err)
{
    if (strcmp(name, HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "the built-in `host` image cannot be removed");
    struct osb_image im;
    if (find(s, name, &im, err) < 0)
        return -1;
    char dir[300], rnd[17];
    dir_of(im.name, dir, sizeof dir, NULL);
    int r = 0;
    if (in_use && in_use(ud, im.name))
        r = osb_err_set(err, OSB_E_EXISTS, "image `%s` is in use by a sandbox", im.name);
    struct osb_image *all = NULL;
    size_t n = 0;
    if (r == 0 && osb_istore_list(s, &all, &n, err) < 0)
        r = -1;
    for (size_t i = 0; i < n; i++) {
        if (r == 0 && strcmp(all[i].base, im.name) == 0)
            r = osb_err_set(err, OSB_E_EXISTS, "image `%s` is the base of `%s`", im.name,
                            all[i].name);
        osb_image_free(&all[i]);
    }
    free(all);
    if (r == 0) {
        osb_random_hex(rnd, 8);
        _cleanup_free_ char *from = osb_xasprintf("%s/%s", s->images, dir);
        _cleanup_free_ char *trash = osb_xasprintf("%s/.rm-%s", s->images, rnd);
        r = rename(from, trash) < 0 ? osb_err_sys(err, "remove image `%s`", im.name)
                                    : osb_layer_remove(trash, err);
    }
    osb_image_free(&im);
    return r;
}

/* Temporaries whose writer is gone (its fetch lock is free). */
static void clean_temporaries(struct osb_istore *s)
{
    _cleanup_closedir_ DIR *d = opendir(s->layers);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *dot = strncmp(e->d_name, ".tmp-", 5) == 0 ? strchr(e->d_name + 5, '.') : NULL;
        if (!dot || !key_ok(dot + 1))
            continue;
        int fl = lock_key(s, ".lock-", dot + 1, LOCK_EX | LOCK_NB, NULL);
        if (fl < 0)
            continue;
        _cleanup_free_ char *p = osb_xasprintf("%s/%s", s->layers, e->d_name);
        osb_layer_discard(p);
        close(fl);
    }
    _cleanup_closedir_ DIR *im = opendir(s->images);
    while (im && (e = readdir(im))) {
        if (strncmp(e->d_name, ".rm-", 4) != 0)
            continue;
        _cleanup_free_ char *p = osb_xasprintf("%s/%s", s->images, e->d_name);
        osb_layer_discard(p);
    }
}

struct candidate {
    char key[128];
    int fd;
};

static bool referenced(struct osb_image *all, size_t n, const char *dir)
{
    for (size_t i = 0; i < n; i++)
        for (char **l = all[i].layers; l && *l; l++)
            if (strcmp(*l, dir) == 0)
                return true;
    return false;
}

/* Unused layers, and the lock files of absent ones, each under an
 * exclusive .use lock (taken without waiting: a user keeps it). */
static size_t lock_candidates(struct osb_istore *s, struct candidate **out)
{
    _cleanup_closedir_ DIR *d = opendir(s->layers);
    struct candidate *c = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *key = e->d_name;
        if (strncmp(key, ".use-", 5) == 0 && key_ok(key + 5) && !layer_exists(s, key + 5))
            key += 5;
        else if (!key_ok(key))
            continue;
        int fd = lock_key(s, ".use-", key, LOCK_EX | LOCK_NB, NULL);
        if (fd < 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            c = osb_xrealloc(c, cap * sizeof *c);
        }
        snprintf(c[n].key, sizeof c[n].key, "%s", key);
        c[n++].fd = fd;
    }
    *out = c;
    return n;
}

int osb_istore_prune(struct osb_istore *s, size_t *layers_removed, uint64_t *bytes_freed,
                     struct osb_err *err)
{
    *layers_removed = 0;
    *bytes_freed = 0;
    clean_temporaries(s);
    struct candidate *c = NULL;
    size_t nc = lock_candidates(s, &c);
    struct osb_image *all = NULL;
    size_t n = 0;
    int r = osb_istore_list(s, &all, &n, err);
    for (size_t i = 0; i < nc; i++) {
        _cleanup_free_ char *dir = layer_path(s, c[i].key);
        if (r == 0 && !referenced(all, n, dir)) {
            unsigned long long bytes = 0;
            bool present = layer_exists(s, c[i].key);
            if (present) {
                if (osb_layer_size(dir, &bytes, NULL) < 0)
                    bytes = 0; /* only counts toward bytes_freed */
                r = osb_layer_remove(dir, err);
            }
            if (r == 0) {
                unlink_locks(s, c[i].key);
                *layers_removed += present;
                *bytes_freed += bytes;
            }
        }
        close(c[i].fd);
    }
    for (size_t i = 0; i < n; i++)
        osb_image_free(&all[i]);
    free(all);
    free(c);
    return r;
}

/* ------------------------------------------------------------ export */

/* The layers of im with its bases' below, bottom first. */
static int chain_layers(struct osb_istore *s, const struct osb_image *im, char ***out, size_t *n,
                        struct osb_err *err)
{
    struct osb_image bases[8];
    size_t depth = 0;
    int r = 0;
    for (const struct osb_image *cur = im; r == 0 && cur->base[0];) {
        if (strcmp(cur->base, HOST) == 0)
            r = osb_err_set(err, OSB_E_UNSUPPORTED,
                            "image `%s`: it is based on the built-in "
                            "`host` image, which cannot be exported",
                            im->name);
        else if (depth == OSB_ARRAY_LEN(bases))
            r = osb_err_set(err, OSB_E_INVALID, "image `%s`: base chain too deep", im->name);
        else if (find(s, cur->base, &bases[depth], err) < 0)
            r = osb_err_wrap(err, "image `%s`: base", im->name);
        else
            cur = &bases[depth++];
    }
    size_t total = 0, k = 0;
    for (size_t d = 0; d < depth; d++)
        for (char **l = bases[d].layers; l && *l; l++)
            total++;
    for (char **l = im->layers; l && *l; l++)
        total++;
    char **v = osb_xcalloc(total + 1, sizeof *v);
    for (size_t d = depth; d-- > 0;)
        for (char **l = bases[d].layers; l && *l; l++)
            v[k++] = osb_xstrdup(*l);
    for (char **l = im->layers; l && *l; l++)
        v[k++] = osb_xstrdup(*l);
    for (size_t d = 0; d < depth; d++)
        osb_image_free(&bases[d]);
    if (r < 0) {
        strv_free(v);
        return -1;
    }
    *out = v;
    *n = k;
    return 0;
}

int osb_istore_export(struct osb_istore *s, const char *name, const char *tar_path,
                      struct osb_err *err)
{
    struct osb_image im;
    if (find(s, name, &im, err) < 0)
        return -1;
    char **layers = NULL;
    size_t n = 0;
    int r = chain_layers(s, &im, &layers, &n, err);
    if (r == 0 && osb_export_write(&im, layers, n, tar_path, err) < 0)
        r = osb_err_wrap(err, "export image `%s` to `%s`", im.name, tar_path);
    strv_free(layers);
    osb_image_free(&im);
    return r;
}

void osb_istore_discard_layer(struct osb_istore *s, const char *dir)
{
    const char *key = key_of(s, dir);
    osb_layer_discard(dir);
    if (key)
        release_pending(s, key);
}

/* ------------------------------------------------------------ push */

static int push_blob(struct pull *p, const struct osb_export *e, const struct osb_export_blob *b,
                     struct osb_err *err)
{
    _cleanup_free_ char *path = osb_export_blob_path(e, b->digest);
    int64_t t0 = osb_mono_ms();
    int r = osb_registry_push_blob(p->reg, b->digest, b->size, path, err);
    if (r == 1)
        say(p, "%.19s: already present", b->digest);
    else if (r == 0)
        say(p, "%.19s: pushed %.1f MB in %.1f s", b->digest, (double)b->size / 1e6,
            (double)(osb_mono_ms() - t0) / 1000.0);
    return r < 0 ? -1 : 0;
}

/* The manifest blob is small (a few hundred bytes per layer). */
static int read_blob(const struct osb_export *e, const struct osb_export_blob *b, char **out,
                     struct osb_err *err)
{
    _cleanup_free_ char *path = osb_export_blob_path(e, b->digest);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", path);
    char *buf = osb_xmalloc((size_t)b->size + 1);
    ssize_t n = OSB_RETRY(read(fd, buf, (size_t)b->size + 1));
    if (n != b->size) {
        free(buf);
        return n < 0 ? osb_err_sys(err, "read `%s`", path)
                     : osb_err_set(err, OSB_E_INTEGRITY, "`%s` changed size", path);
    }
    *out = buf;
    return 0;
}

/* Layers, then the config, then the manifest that names them. */
static int push_built(struct pull *p, const struct osb_export *e, const struct osb_ref *ref,
                      struct osb_err *err)
{
    const char *reference = ref->digest[0] ? ref->digest : ref->tag;
    if (ref->digest[0] && strcmp(ref->digest, e->manifest.digest) != 0)
        return osb_err_set(err, OSB_E_INTEGRITY,
                           "image `%s`: the manifest is %s, not the "
                           "digest given",
                           p->image, e->manifest.digest);
    /* the registry's messages name each blob already */
    for (size_t i = 0; i < e->n_layers; i++)
        if (push_blob(p, e, &e->layers[i], err) < 0)
            return -1;
    if (push_blob(p, e, &e->config, err) < 0)
        return -1;
    _cleanup_free_ char *man = NULL;
    if (read_blob(e, &e->manifest, &man, err) < 0)
        return -1;
    if (osb_registry_push_manifest(p->reg, reference, OSB_EXPORT_MANIFEST_MT, man,
                                   (size_t)e->manifest.size, err) < 0)
        return -1;
    say(p, "%s: manifest %s", p->image, e->manifest.digest);
    return 0;
}

static int push_image(struct osb_istore *s, const struct osb_image *im, const struct osb_ref *ref,
                      const struct osb_registry_opts *o, struct pull *p,
                      char digest_out[OSB_DIGEST_MAX], struct osb_err *err)
{
    char **layers = NULL;
    size_t n = 0;
    if (chain_layers(s, im, &layers, &n, err) < 0)
        return -1;
    _cleanup_free_ char *tmpl = osb_xasprintf("%s/.push-XXXXXX", s->state);
    struct osb_export e;
    say(p, "%s: building %zu layer blobs", im->name, n);
    int r = osb_export_build(im, layers, n, tmpl, &e, err);
    strv_free(layers);
    if (r < 0)
        return osb_err_wrap(err, "image `%s`", im->name);
    r = osb_registry_open(ref, o, &p->reg, err);
    if (r == 0) {
        r = push_built(p, &e, ref, err);
        osb_registry_close(p->reg);
    }
    if (r == 0)
        snprintf(digest_out, OSB_DIGEST_MAX, "%s", e.manifest.digest);
    osb_export_free(&e);
    return r;
}

int osb_istore_push(struct osb_istore *s, const char *name, const char *refstr,
                    const struct osb_registry_opts *o, osb_istore_progress_cb progress, void *ud,
                    char digest_out[OSB_DIGEST_MAX], struct osb_err *err)
{
    struct osb_ref ref;
    char image[600];
    if (osb_ref_parse(refstr, &ref, err) < 0)
        return -1;
    osb_ref_string(&ref, image, sizeof image);
    struct osb_image im;
    if (find(s, name, &im, err) < 0)
        return -1;
    struct pull p = {.s = s, .image = image, .progress = progress, .ud = ud};
    int r = push_image(s, &im, &ref, o, &p, digest_out, err);
    osb_image_free(&im);
    return r;
}
