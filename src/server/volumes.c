/* Volume resolution and server-managed claims (volumes.h). The checks
 * here turn a bad volume into a 400 at create time; the sandbox init
 * helper resolves the same paths again, the same way, when it mounts them
 * (src/runtime/init/volumes.c), so a host directory changed in between
 * cannot widen what is mounted. */
#include "server/volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/fstree.h"
#include "server/claim.h"
#include "server/server.h"

#define BAD "SANDBOX::INVALID_PARAMETER"
#define NOT_ALLOWED "VOLUME::HOST_PATH_NOT_ALLOWED"
#define NOT_FOUND "VOLUME::HOST_PATH_NOT_FOUND"

/* Whether a is b or lies under it (both normalized, absolute). */
static bool under(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (strcmp(b, "/") == 0)
        return true;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* The longest allowed root holding path, or NULL. */
static const char *allowed_root(const struct osb_config *cfg, const char *path)
{
    const char *best = NULL;
    for (char **r = cfg->storage.allowed_host_paths; r && *r; r++)
        if (under(path, *r) && (!best || strlen(*r) > strlen(best)))
            best = *r;
    return best;
}

/* A failed osb_open_beneath of rel beneath base, as a 400. */
static int resolve_error(const struct osb_volume *v, size_t i, const char *what, const char *rel,
                         const char *base, struct osb_apierr *e)
{
    int en = errno;
    if (en == EXDEV || en == ELOOP)
        return osb_apierr(e, NOT_ALLOWED,
                          "field 'volumes[%zu].%s': '%s' leads outside '%s' through a symlink "
                          "(volume '%s')",
                          i, what, rel, base, v->name);
    if (en == ENOENT || en == ENOTDIR)
        return osb_apierr(e, NOT_FOUND,
                          "field 'volumes[%zu].%s': '%s' does not exist in '%s' (volume '%s')", i,
                          what, rel, base, v->name);
    return osb_apierr(e, BAD,
                      "field 'volumes[%zu].%s': cannot open '%s' in '%s' (volume "
                      "'%s'): %s",
                      i, what, rel, base, v->name, strerror(en));
}

static int check_kind(int fd, const struct osb_volume *v, size_t i, struct osb_apierr *e)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
        return 0;
    return osb_apierr(e, BAD,
                      "field 'volumes[%zu]': volume '%s' must be a directory or a regular file", i,
                      v->name);
}

static int prepare_host(const struct osb_config *cfg, struct osb_volume *v, size_t i,
                        struct osb_apierr *e)
{
    if (!cfg->storage.allowed_host_paths || !cfg->storage.allowed_host_paths[0])
        return osb_apierr(e, NOT_ALLOWED,
                          "field 'volumes[%zu].host.path': host volumes are disabled on this "
                          "server ([storage] allowed_host_paths is empty)",
                          i);
    const char *root = allowed_root(cfg, v->host_path);
    if (!root)
        return osb_apierr(e, NOT_ALLOWED,
                          "field 'volumes[%zu].host.path': '%s' is not under any of [storage] "
                          "allowed_host_paths",
                          i, v->host_path);
    const char *rel = v->host_path + strlen(root);
    rel += *rel == '/';
    _cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return osb_apierr(e, NOT_FOUND,
                          "field 'volumes[%zu].host.path': the allowed root '%s' is not a "
                          "directory on this host: %s",
                          i, root, strerror(errno));
    _cleanup_close_ int fd = osb_open_beneath(rfd, rel, O_PATH, NULL);
    if (fd < 0)
        return resolve_error(v, i, "host.path", *rel ? rel : ".", root, e);
    if (v->sub_path) {
        _cleanup_close_ int sfd = osb_open_beneath(fd, v->sub_path, O_PATH, NULL);
        if (sfd < 0)
            return resolve_error(v, i, "subPath", v->sub_path, v->host_path, e);
        if (check_kind(sfd, v, i, e) < 0)
            return -1;
    } else if (check_kind(fd, v, i, e) < 0) {
        return -1;
    }
    v->src_root = osb_xstrdup(root);
    v->src_rel = osb_xstrdup(rel);
    return 0;
}

/* <volumes_dir>/<claim>/data as an O_PATH fd: the claim is there (and
 * mounted) once osb_vol_ensure is done with it. */
static int open_claim(const struct osb_config *cfg, struct osb_volume *v, size_t i,
                      struct osb_apierr *e)
{
    struct osb_claim_info ci;
    osb_claim_probe(cfg->storage.volumes_dir, v->pvc.claim, &ci);
    if (ci.kind == OSB_CLAIM_ABSENT && !v->pvc.create)
        return osb_apierr(e, "VOLUME::NOT_FOUND",
                          "field 'volumes[%zu].pvc': volume '%s' does not exist and "
                          "createIfNotExists is false",
                          i, v->pvc.claim);
    if (ci.kind == OSB_CLAIM_ABSENT || (ci.kind == OSB_CLAIM_IMAGE && !ci.mounted))
        return osb_apierr(e, "VOLUME::NOT_READY",
                          "volume '%s': claim '%s' is not ready (it was not made or mounted)",
                          v->name, v->pvc.claim);
    if (ci.kind == OSB_CLAIM_PLAIN)
        osb_warn("volume claim %s is a plain directory made by an older server: it has no size "
                 "limit",
                 v->pvc.claim);
    else if (v->pvc.storage_bytes && v->pvc.storage_bytes != ci.bytes && !v->pvc.created)
        osb_info("volume claim %s keeps its size, %lld bytes (the request asks for %s)",
                 v->pvc.claim, (long long)ci.bytes, v->pvc.storage);
    _cleanup_close_ int vd = open(cfg->storage.volumes_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *rel = osb_xasprintf("%s/data", v->pvc.claim);
    int fd = vd < 0 ? -1 : osb_open_beneath(vd, rel, O_PATH | O_DIRECTORY, NULL);
    return fd >= 0 ? fd : resolve_error(v, i, "pvc.claimName", rel, "volumes_dir", e);
}

static int prepare_pvc(const struct osb_config *cfg, struct osb_volume *v, size_t i,
                       struct osb_apierr *e)
{
    _cleanup_close_ int fd = open_claim(cfg, v, i, e);
    if (fd < 0)
        return -1;
    if (v->sub_path) {
        /* As Kubernetes does for a subPath of a claim: made if missing. */
        _cleanup_close_ int sfd = osb_mkdir_beneath(fd, v->sub_path, 0755, NULL);
        if (sfd < 0)
            return resolve_error(v, i, "subPath", v->sub_path, v->pvc.claim, e);
    }
    v->src_root = osb_xasprintf("%s/%s/data", cfg->storage.volumes_dir, v->pvc.claim);
    v->src_rel = osb_xstrdup("");
    return 0;
}

int osb_vol_prepare(const struct osb_config *cfg, struct osb_create_spec *spec,
                    struct osb_apierr *e)
{
    for (size_t i = 0; i < spec->n_volumes; i++) {
        struct osb_volume *v = &spec->volumes[i];
        int r = v->backend == OSB_VOL_HOST ? prepare_host(cfg, v, i, e) : prepare_pvc(cfg, v, i, e);
        if (r < 0)
            return -1;
    }
    return 0;
}

struct osb_rt_volume *osb_vol_rt(const struct osb_create_spec *spec)
{
    if (!spec->n_volumes)
        return NULL;
    struct osb_rt_volume *rv = osb_xcalloc(spec->n_volumes, sizeof *rv);
    for (size_t i = 0; i < spec->n_volumes; i++) {
        const struct osb_volume *v = &spec->volumes[i];
        rv[i] = (struct osb_rt_volume){v->name,     v->src_root,   v->src_rel,
                                       v->sub_path, v->mount_path, v->read_only};
    }
    return rv;
}

/* ------------------------------------------------ making and mounting */

/* What a claim needs before a create can use it. */
enum need { NEED_NONE, NEED_JOIN, NEED_MAKE, NEED_ATTACH };

/* A create waiting for its claims; freed when the last one is done. */
struct vol_group {
    osb_vol_cb cb;
    void *ud;
    size_t pending;
    bool failed;
    struct osb_apierr e;
};

struct osb_vol_job {
    uv_work_t work;
    struct osb_server *srv;
    struct osb_vol_job *next;
    char *claim;
    int64_t bytes; /* > 0: make the claim this big; 0: mount it */
    struct vol_group **groups;
    size_t n_groups;
    int rc;
    int64_t ms; /* how long the work took */
    struct osb_err err;
};

static struct osb_vol_job *find_job(struct osb_server *srv, const char *claim)
{
    for (struct osb_vol_job *j = srv->vol_jobs; j; j = j->next)
        if (strcmp(j->claim, claim) == 0)
            return j;
    return NULL;
}

static enum need claim_need(struct osb_server *srv, const struct osb_volume *v)
{
    if (v->backend != OSB_VOL_PVC)
        return NEED_NONE;
    if (find_job(srv, v->pvc.claim))
        return NEED_JOIN;
    struct osb_claim_info ci;
    osb_claim_probe(srv->cfg->storage.volumes_dir, v->pvc.claim, &ci);
    if (ci.kind == OSB_CLAIM_ABSENT)
        return v->pvc.create ? NEED_MAKE : NEED_NONE;
    return ci.kind == OSB_CLAIM_IMAGE && !ci.mounted ? NEED_ATTACH : NEED_NONE;
}

static int64_t claim_bytes(const struct osb_config *cfg, const struct osb_volume *v)
{
    return v->pvc.storage_bytes ? v->pvc.storage_bytes : cfg->storage.volume_default_bytes;
}

/* Free bytes of the filesystem that holds (or will hold) dir. */
static int64_t free_bytes(const char *dir)
{
    _cleanup_free_ char *p = osb_xstrdup(dir);
    struct statvfs vfs;
    while (statvfs(p, &vfs) < 0) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p)
            return INT64_MAX; /* nothing to measure: mkfs will tell */
        *slash = '\0';
    }
    return (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
}

/* What the claims being made and the existing ones may still take from
 * the disk: images are sparse, so a size that merely fits the free space
 * is not enough, or claims that each passed would together fill the disk
 * (and the server's state on it) once sandboxes write into them. */
static int64_t promised_bytes(struct osb_server *srv)
{
    int64_t sum = osb_claim_unallocated(srv->cfg->storage.volumes_dir);
    for (struct osb_vol_job *j = srv->vol_jobs; j; j = j->next)
        sum += j->bytes;
    return sum;
}

/* *promised grows by each claim this request makes (-1: not yet measured). */
static int check_size(struct osb_server *srv, const struct osb_volume *v, size_t i,
                      int64_t *promised, struct osb_apierr *e)
{
    const struct osb_config *cfg = srv->cfg;
    int64_t want = claim_bytes(cfg, v);
    const char *what = v->pvc.storage ? v->pvc.storage : "the default size";
    if (want > cfg->storage.volume_max_bytes)
        return osb_apierr(e, "VOLUME::INVALID_SIZE",
                          "field 'volumes[%zu].pvc.storage': %s (%lld bytes) is above this "
                          "server's largest claim, %lld bytes ([storage] volume_max_size)",
                          i, what, (long long)want, (long long)cfg->storage.volume_max_bytes);
    int64_t avail = free_bytes(cfg->storage.volumes_dir);
    if (*promised < 0)
        *promised = promised_bytes(srv);
    if (want > avail - *promised)
        return osb_apierr(e, "VOLUME::INVALID_SIZE",
                          "field 'volumes[%zu].pvc.storage': %s (%lld bytes) is more than the "
                          "%lld bytes free where claims are kept (%lld free, %lld of them "
                          "promised to other claims, which are sparse)",
                          i, what, (long long)want,
                          (long long)(avail > *promised ? avail - *promised : 0), (long long)avail,
                          (long long)*promised);
    *promised += want;
    return 0;
}

/* Whether an earlier volume of the request names the same claim. */
static bool claim_named_before(const struct osb_create_spec *spec, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (spec->volumes[k].backend == OSB_VOL_PVC &&
            strcmp(spec->volumes[k].pvc.claim, spec->volumes[i].pvc.claim) == 0)
            return true;
    return false;
}

int osb_vol_check(struct osb_server *srv, struct osb_create_spec *spec, struct osb_apierr *e)
{
    int rc = 0;
    int64_t promised = -1;
    for (size_t i = 0; i < spec->n_volumes; i++) {
        struct osb_volume *v = &spec->volumes[i];
        if (v->backend == OSB_VOL_HOST) {
            /* A bad host volume must fail the create before any claim is made. */
            if (prepare_host(srv->cfg, v, i, e) < 0)
                return -1;
            free(v->src_root);
            free(v->src_rel);
            v->src_root = v->src_rel = NULL;
            continue;
        }
        enum need n = claim_need(srv, v);
        if (n == NEED_MAKE && !claim_named_before(spec, i) &&
            check_size(srv, v, i, &promised, e) < 0)
            return -1;
        if (n != NEED_NONE)
            rc = 1;
    }
    return rc;
}

static void job_work(uv_work_t *w)
{
    struct osb_vol_job *j = w->data;
    const char *vdir = j->srv->cfg->storage.volumes_dir;
    int64_t t0 = osb_mono_ms();
    j->rc = j->bytes ? osb_claim_make(vdir, j->claim, j->bytes, &j->err)
                     : osb_claim_attach(vdir, j->claim, &j->err);
    j->ms = osb_mono_ms() - t0;
}

static void group_done(struct vol_group *g)
{
    if (--g->pending)
        return;
    g->cb(g->ud, g->failed ? &g->e : NULL);
    free(g);
}

static void job_done(uv_work_t *w, int status)
{
    struct osb_vol_job *j = w->data;
    for (struct osb_vol_job **pp = &j->srv->vol_jobs; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    if (status < 0 && j->rc == 0)
        j->rc = osb_err_set(&j->err, OSB_E_INTERNAL, "cancelled");
    if (j->rc < 0)
        osb_err_log("volume claim %s: %s", j->claim, j->err.msg);
    else if (j->bytes)
        osb_info("created volume %s: %lld bytes, ext4 image, %lld ms", j->claim,
                 (long long)j->bytes, (long long)j->ms);
    else
        osb_info("mounted volume %s (%lld ms)", j->claim, (long long)j->ms);
    for (size_t i = 0; i < j->n_groups; i++) {
        struct vol_group *g = j->groups[i];
        if (j->rc < 0 && !g->failed) {
            g->failed = true;
            osb_apierr(&g->e, "VOLUME::CREATE_FAILED", "volume claim '%s': %s", j->claim,
                       j->err.msg);
        }
        group_done(g);
    }
    free(j->groups);
    free(j->claim);
    free(j);
}

static void job_join(struct osb_vol_job *j, struct vol_group *g)
{
    j->groups = osb_xrealloc(j->groups, (j->n_groups + 1) * sizeof *j->groups);
    j->groups[j->n_groups++] = g;
    g->pending++;
}

static struct osb_vol_job *job_start(struct osb_server *srv, const char *claim, int64_t bytes)
{
    struct osb_vol_job *j = osb_xcalloc(1, sizeof *j);
    j->srv = srv;
    j->claim = osb_xstrdup(claim);
    j->bytes = bytes;
    j->work.data = j;
    j->next = srv->vol_jobs;
    srv->vol_jobs = j;
    uv_queue_work(srv->loop, &j->work, job_work, job_done);
    return j;
}

void osb_vol_ensure(struct osb_server *srv, struct osb_create_spec *spec, osb_vol_cb cb, void *ud)
{
    struct vol_group *g = osb_xcalloc(1, sizeof *g);
    g->cb = cb;
    g->ud = ud;
    g->pending = 1; /* held until every job is joined: none can finish first */
    for (size_t i = 0; i < spec->n_volumes; i++) {
        struct osb_volume *v = &spec->volumes[i];
        enum need n = claim_need(srv, v);
        if (n == NEED_NONE)
            continue;
        struct osb_vol_job *j =
            n == NEED_JOIN
                ? find_job(srv, v->pvc.claim)
                : job_start(srv, v->pvc.claim, n == NEED_MAKE ? claim_bytes(srv->cfg, v) : 0);
        if (n == NEED_MAKE)
            v->pvc.created = true;
        job_join(j, g);
    }
    group_done(g);
}

/* ---------------------------------------------------------------- release */

/* Whether record s names claim among its volumes (and, with want_delete,
 * made it and asks for it to go with the sandbox: a claim that existed
 * before is never removed). */
/* The claim a recorded volume names (NULL: none); *pvc its pvc object. */
static const char *record_claim(json_t *v, json_t **pvc)
{
    const char *c = NULL;
    *pvc = NULL;
    if (osb_json_obj(v, "pvc", false, pvc, NULL) <= 0 ||
        osb_json_str(*pvc, "claimName", false, &c, NULL) <= 0)
        return NULL;
    return c;
}

static bool record_flag(json_t *pvc, const char *key)
{
    bool b = false;
    return osb_json_bool(pvc, key, false, &b, NULL) > 0 && b;
}

static bool uses_claim(const struct osb_sbx *s, const char *claim, bool want_delete)
{
    json_t *vols = NULL, *v, *pvc;
    size_t i;
    if (osb_json_array(s->spec, "volumes", false, &vols, NULL) <= 0)
        return false;
    json_array_foreach(vols, i, v)
    {
        const char *c = record_claim(v, &pvc);
        if (c && strcmp(c, claim) == 0 &&
            (!want_delete ||
             (record_flag(pvc, "deleteOnSandboxTermination") && record_flag(pvc, "autoCreated"))))
            return true;
    }
    return false;
}

/* Another record that may still mount the claim: any but those whose
 * processes are known to be gone. */
static bool claim_in_use(struct osb_server *srv, const struct osb_sbx *self, const char *claim)
{
    size_t n = osb_reg_count(srv->reg);
    for (size_t i = 0; i < n; i++) {
        const struct osb_sbx *o = osb_reg_at(srv->reg, i);
        if (o != self && o->state != OSB_ST_FAILED && o->state != OSB_ST_TERMINATED &&
            uses_claim(o, claim, false))
            return true;
    }
    return false;
}

void osb_vol_release(struct osb_server *srv, const struct osb_sbx *s)
{
    json_t *vols = NULL, *v, *pvc;
    size_t i;
    if (osb_json_array(s->spec, "volumes", false, &vols, NULL) <= 0)
        return;
    json_array_foreach(vols, i, v)
    {
        const char *claim = record_claim(v, &pvc);
        if (!claim || !uses_claim(s, claim, true) || claim_in_use(srv, s, claim))
            continue;
        if (find_job(srv, claim)) {
            osb_info("volume %s of sandbox %s is kept: a create in progress uses it", claim, s->id);
            continue;
        }
        const char *vdir = srv->cfg->storage.volumes_dir;
        _cleanup_free_ char *dir = osb_xasprintf("%s/%s", vdir, claim);
        struct osb_err err = {0};
        /* The image goes once its last mount does: a sandbox whose mount
         * namespace is still being torn down keeps it a moment longer. */
        if (osb_claim_detach(vdir, claim, &err) < 0 || osb_fs_remove_tree(dir, &err) < 0)
            osb_err_log("remove volume %s of sandbox %s: %s", claim, s->id, err.msg);
        else
            osb_info("removed volume %s with sandbox %s", claim, s->id);
    }
}

void osb_vol_close(struct osb_server *srv)
{
    const char *vdir = srv->cfg->storage.volumes_dir;
    _cleanup_closedir_ DIR *d = opendir(vdir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue; /* ".", "..", a scratch ".new-" claim */
        struct osb_err err = {0};
        if (osb_claim_detach(vdir, de->d_name, &err) < 0)
            osb_err_log("volume %s: %s", de->d_name, err.msg);
    }
}
