/* Snapshot layers into their mode-free form (idshift.h). */
#include <errno.h>
#include <fts.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/spec.h"
#include "runtime/idshift.h"

#define CAP_XATTR "security.capability"

static const char *const prefixes[] = {"trusted.overlay.", "user.overlay."};

/* Marks that describe one mount's layers, not the files. */
static bool mount_specific(const char *mark)
{
    static const char *const names[] = {"origin", "impure", "nlink", "upper", "uuid"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(names); i++)
        if (strcmp(mark, names[i]) == 0)
            return true;
    return false;
}

/* The mark after an overlay prefix (index of the prefix in *which). */
static const char *overlay_mark(const char *name, size_t *which)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(prefixes); i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            *which = i;
            return name + strlen(prefixes[i]);
        }
    return NULL;
}

static int fix_mark(const char *path, const char *name, struct osb_err *err)
{
    size_t which;
    const char *mark = overlay_mark(name, &which);
    if (!mark)
        return 0;
    if (mount_specific(mark))
        return lremovexattr(path, name) < 0 && errno != ENODATA
                   ? osb_err_sys(err, "remove %s of `%s`", name, path)
                   : 0;
    char val[4096], other[XATTR_NAME_MAX + 1];
    ssize_t n = lgetxattr(path, name, val, sizeof val);
    if (n < 0)
        return osb_err_sys(err, "read %s of `%s`", name, path);
    snprintf(other, sizeof other, "%s%s", prefixes[1 - which], mark);
    if (lsetxattr(path, other, val, (size_t)n, 0) < 0)
        return osb_err_sys(err, "set %s on `%s`", other, path);
    return 0;
}

static uint32_t shifted(uint32_t id, uint32_t first)
{
    return first && id >= first && id - first < OSB_USERNS_IDS ? id - first : id;
}

/* A v3 capability of the sandbox's namespace (its root uid in the range)
 * as v2. */
static int fix_caps(const char *path, const char *val, ssize_t n, uint32_t first,
                    struct osb_err *err)
{
    struct vfs_ns_cap_data c;
    if (n != (ssize_t)sizeof c)
        return 0;
    memcpy(&c, val, sizeof c);
    if ((c.magic_etc & VFS_CAP_REVISION_MASK) != VFS_CAP_REVISION_3 ||
        shifted(c.rootid, first) == c.rootid)
        return 0;
    struct vfs_cap_data v2;
    v2.magic_etc = VFS_CAP_REVISION_2 | (c.magic_etc & VFS_CAP_FLAGS_EFFECTIVE);
    memcpy(v2.data, c.data, sizeof v2.data);
    if (lsetxattr(path, CAP_XATTR, &v2, sizeof v2, 0) < 0)
        return osb_err_sys(err, "set the capabilities of `%s`", path);
    return 0;
}

/* chown drops file capabilities and setuid/setgid: both are read before
 * and put back after. */
static int fix_owner(const char *path, const struct stat *st, uint32_t first, struct osb_err *err)
{
    uid_t uid = shifted(st->st_uid, first);
    gid_t gid = shifted(st->st_gid, first);
    if (uid == st->st_uid && gid == st->st_gid)
        return 0;
    char cap[64];
    ssize_t n = S_ISLNK(st->st_mode) ? -1 : lgetxattr(path, CAP_XATTR, cap, sizeof cap);
    if (lchown(path, uid, gid) < 0)
        return osb_err_sys(err, "chown `%s`", path);
    if (!S_ISLNK(st->st_mode) && chmod(path, st->st_mode & 07777) < 0)
        return osb_err_sys(err, "chmod `%s`", path);
    if (n > 0 && lsetxattr(path, CAP_XATTR, cap, (size_t)n, 0) < 0)
        return osb_err_sys(err, "restore the capabilities of `%s`", path);
    return 0;
}

static int fix_entry(const char *path, const struct stat *st, uint32_t first, struct osb_err *err)
{
    if (fix_owner(path, st, first, err) < 0)
        return -1;
    char list[65536];
    ssize_t n = llistxattr(path, list, sizeof list);
    if (n < 0)
        return errno == ENOTSUP ? 0 : osb_err_sys(err, "list xattrs of `%s`", path);
    for (char *k = list; k < list + n; k += strlen(k) + 1) {
        if (fix_mark(path, k, err) < 0)
            return -1;
        if (strcmp(k, CAP_XATTR) == 0) {
            char val[64];
            ssize_t vl = lgetxattr(path, k, val, sizeof val);
            if (vl > 0 && fix_caps(path, val, vl, first, err) < 0)
                return -1;
        }
    }
    return 0;
}

int osb_idshift_layer(const char *dir, uint32_t first, struct osb_err *err)
{
    char *const roots[] = {(char *)dir, NULL};
    FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
    if (!fts)
        return osb_err_sys(err, "walk layer `%s`", dir);
    int r = 0;
    FTSENT *e;
    while (r == 0 && (e = fts_read(fts))) {
        if (e->fts_info == FTS_DP)
            continue;
        if (e->fts_info == FTS_NS || e->fts_info == FTS_DNR || e->fts_info == FTS_ERR)
            r = osb_err_set(err, OSB_E_SYS, "walk `%s`: %s", e->fts_path, strerror(e->fts_errno));
        else
            r = fix_entry(e->fts_path, e->fts_statp, first, err);
    }
    fts_close(fts);
    return r < 0 ? osb_err_wrap(err, "snapshot layer ids") : 0;
}
