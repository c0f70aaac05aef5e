/* Volume resolution and server-managed claims (volumes.h). The checks
 * here turn a bad volume into a 400 at create time; the sandbox init
 * helper resolves the same paths again, the same way, when it mounts them
 * (src/runtime/init/volumes.c), so a host directory changed in between
 * cannot widen what is mounted. */
#include "server/volumes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/native/fsutil.h"
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
        return osb_apierr_set(e, 400, NOT_ALLOWED,
                              "field 'volumes[%zu].%s': '%s' leads outside '%s' through a symlink "
                              "(volume '%s')",
                              i, what, rel, base, v->name);
    if (en == ENOENT || en == ENOTDIR)
        return osb_apierr_set(e, 400, NOT_FOUND,
                              "field 'volumes[%zu].%s': '%s' does not exist in '%s' (volume '%s')",
                              i, what, rel, base, v->name);
    return osb_apierr_set(e, 400, BAD, "field 'volumes[%zu].%s': cannot open '%s' in '%s' (volume "
                          "'%s'): %s",
                          i, what, rel, base, v->name, strerror(en));
}

static int check_kind(int fd, const struct osb_volume *v, size_t i, struct osb_apierr *e)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
        return 0;
    return osb_apierr_set(e, 400, BAD,
                          "field 'volumes[%zu]': volume '%s' must be a directory or a regular file",
                          i, v->name);
}

static int prepare_host(const struct osb_config *cfg, struct osb_volume *v, size_t i,
                        struct osb_apierr *e)
{
    if (!cfg->storage.allowed_host_paths || !cfg->storage.allowed_host_paths[0])
        return osb_apierr_set(e, 400, NOT_ALLOWED,
                              "field 'volumes[%zu].host.path': host volumes are disabled on this "
                              "server ([storage] allowed_host_paths is empty)",
                              i);
    const char *root = allowed_root(cfg, v->host_path);
    if (!root)
        return osb_apierr_set(e, 400, NOT_ALLOWED,
                              "field 'volumes[%zu].host.path': '%s' is not under any of [storage] "
                              "allowed_host_paths",
                              i, v->host_path);
    const char *rel = v->host_path + strlen(root);
    rel += *rel == '/';
    _cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0)
        return osb_apierr_set(e, 400, NOT_FOUND,
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

/* <volumes_dir>/<claim>/data as an O_PATH fd, created when allowed. */
static int open_claim(const struct osb_config *cfg, struct osb_volume *v, size_t i,
                      struct osb_apierr *e)
{
    struct osb_err err = {0};
    if (v->pvc.create && osb_mkdir_p(cfg->storage.volumes_dir, 0700, &err) < 0)
        return osb_apierr_set(e, 500, "VOLUME::CREATE_FAILED", "volume '%s': %s", v->name,
                              err.msg);
    _cleanup_close_ int vd = open(cfg->storage.volumes_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *rel = osb_xasprintf("%s/data", v->pvc.claim);
    int fd = vd < 0 ? -1 : osb_open_beneath(vd, rel, O_PATH | O_DIRECTORY, NULL);
    if (fd >= 0 || (errno != ENOENT && vd >= 0))
        return fd >= 0 ? fd : resolve_error(v, i, "pvc.claimName", rel, "volumes_dir", e);
    if (!v->pvc.create)
        return osb_apierr_set(e, 400, "VOLUME::NOT_FOUND",
                              "field 'volumes[%zu].pvc': volume '%s' does not exist and "
                              "createIfNotExists is false",
                              i, v->pvc.claim);
    fd = osb_mkdir_beneath(vd, rel, 0755, &err);
    if (fd < 0)
        return osb_apierr_set(e, 500, "VOLUME::CREATE_FAILED", "volume '%s': %s", v->name, err.msg);
    osb_info("created volume %s", v->pvc.claim);
    v->pvc.created = true;
    return fd;
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
        rv[i] = (struct osb_rt_volume){v->name, v->src_root, v->src_rel, v->sub_path,
                                       v->mount_path, v->read_only};
    }
    return rv;
}

/* ---------------------------------------------------------------- release */

/* Whether record s names claim among its volumes (and, with want_delete,
 * made it and asks for it to go with the sandbox: a claim that existed
 * before is never removed). */
static bool uses_claim(const struct osb_sbx *s, const char *claim, bool want_delete)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(s->spec, "volumes"), i, v)
    {
        json_t *pvc = json_object_get(v, "pvc");
        const char *c = json_string_value(json_object_get(pvc, "claimName"));
        if (c && strcmp(c, claim) == 0 &&
            (!want_delete || (json_is_true(json_object_get(pvc, "deleteOnSandboxTermination")) &&
                              json_is_true(json_object_get(pvc, "autoCreated")))))
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
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(s->spec, "volumes"), i, v)
    {
        const char *claim = json_string_value(json_object_get(json_object_get(v, "pvc"),
                                                              "claimName"));
        if (!claim || !uses_claim(s, claim, true) || claim_in_use(srv, s, claim))
            continue;
        _cleanup_free_ char *dir = osb_xasprintf("%s/%s", srv->cfg->storage.volumes_dir, claim);
        struct osb_err err = {0};
        if (osb_rtfs_remove_tree(dir, &err) < 0)
            osb_err_log("remove volume %s of sandbox %s: %s", claim, s->id, err.msg);
        else
            osb_info("removed volume %s with sandbox %s", claim, s->id);
    }
}
