#include "execd/fs_perm.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "execd/users.h"

int osb_fs_perm_mode(long long dec, mode_t *out)
{
    if (dec < 0 || dec > 7777)
        return -1;
    mode_t m = 0;
    for (int shift = 0; dec > 0; shift += 3, dec /= 10) {
        if (dec % 10 > 7)
            return -1;
        m |= (mode_t)(dec % 10) << shift;
    }
    *out = m & 0777;
    return 0;
}

static int parse_owner(json_t *obj, const char *what, struct osb_fs_perm *p, struct osb_err *err)
{
    const char *owner = NULL, *group = NULL;
    if (osb_json_name(obj, "owner", false, &owner, err) < 0 ||
        osb_json_name(obj, "group", false, &group, err) < 0)
        return osb_err_wrap(err, "%s", what);
    if (owner && *owner && osb_users_uid(owner, &p->uid) < 0)
        return osb_err_set(err, OSB_E_INTERNAL, "%s: unknown user '%s'", what, owner);
    if (group && *group && osb_users_gid(group, &p->gid) < 0)
        return osb_err_set(err, OSB_E_INTERNAL, "%s: unknown group '%s'", what, group);
    return 0;
}

int osb_fs_perm_parse(json_t *obj, const char *what, struct osb_fs_perm *p, struct osb_err *err)
{
    *p = (struct osb_fs_perm){.uid = (uid_t)-1, .gid = (gid_t)-1};
    if (!obj || json_is_null(obj))
        return 0;
    if (!json_is_object(obj))
        return osb_err_set(err, OSB_E_INVALID, "%s: permission must be an object", what);
    int64_t mode = 0;
    if (osb_json_int(obj, "mode", false, &mode, err) < 0)
        return osb_err_wrap(err, "%s", what);
    if (mode != 0) {
        if (osb_fs_perm_mode(mode, &p->mode) < 0)
            return osb_err_set(err, OSB_E_INVALID,
                               "%s: mode %lld is not an octal permission like 755", what,
                               (long long)mode);
        p->has_mode = true;
    }
    return parse_owner(obj, what, p, err);
}

int osb_fs_perm_chown(const char *path, const struct osb_fs_perm *p, struct osb_err *err)
{
    if (p->uid == (uid_t)-1 && p->gid == (gid_t)-1)
        return 0;
    if (chown(path, p->uid, p->gid) < 0)
        return osb_err_sys(err, "chown %s", path);
    return 0;
}

int osb_fs_perm_apply(const char *path, const struct osb_fs_perm *p, bool apply_mode,
                      struct osb_err *err)
{
    if (apply_mode && p->has_mode && chmod(path, p->mode) < 0)
        return osb_err_sys(err, "chmod %s", path);
    return osb_fs_perm_chown(path, p, err);
}
