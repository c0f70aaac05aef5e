#include "execd/fs_info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/users.h"

#define NAME_CACHE 16

struct name_slot {
    unsigned long id;
    char name[64];
};

struct osb_fs_names {
    struct name_slot users[NAME_CACHE], groups[NAME_CACHE];
    size_t nusers, ngroups;
};

struct osb_fs_names *osb_fs_names_new(void)
{
    return osb_xcalloc(1, sizeof(struct osb_fs_names));
}

void osb_fs_names_free(struct osb_fs_names *n)
{
    free(n);
}

/* Look id up in a slot array; on a miss ask users.h and remember the answer
 * (evicting round-robin once full). */
static const char *cached(struct name_slot *slots, size_t *count, unsigned long id, bool group)
{
    for (size_t i = 0; i < *count && i < NAME_CACHE; i++)
        if (slots[i].id == id)
            return slots[i].name;
    struct name_slot *s = &slots[*count % NAME_CACHE];
    (*count)++;
    s->id = id;
    if (group)
        osb_users_group_name((gid_t)id, s->name, sizeof s->name);
    else
        osb_users_name((uid_t)id, s->name, sizeof s->name);
    return s->name;
}

/* Length of the valid UTF-8 sequence at s (Go's utf8.DecodeRune rules: no
 * overlongs, no surrogates, nothing above U+10FFFF), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

char *osb_fs_utf8_sanitize(const char *s)
{
    size_t len = strlen(s);
    char *out = osb_xmalloc(len * 3 + 1), *w = out;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0) {
            memcpy(w, "\xEF\xBF\xBD", 3);
            w += 3;
            p++;
            continue;
        }
        memcpy(w, p, n);
        w += n;
        p += n;
    }
    *w = '\0';
    return out;
}

json_t *osb_fs_json_string(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *clean = osb_fs_utf8_sanitize(s);
    j = json_string(clean);
    free(clean);
    return j;
}

const char *osb_fs_info_type(mode_t m)
{
    if (S_ISLNK(m))
        return "symlink";
    if (S_ISDIR(m))
        return "directory";
    if (S_ISREG(m))
        return "file";
    return "other";
}

int osb_fs_info_mode(mode_t m)
{
    return (int)(((m >> 6) & 7) * 100 + ((m >> 3) & 7) * 10 + (m & 7));
}

json_t *osb_fs_info_json(const char *path, const struct stat *st, struct osb_fs_names *names)
{
    char mtime[48], ctime_[48], ubuf[64], gbuf[64];
    osb_time_rfc3339(&st->st_mtim, mtime, sizeof mtime);
    osb_time_rfc3339(&st->st_ctim, ctime_, sizeof ctime_);
    const char *owner, *group;
    if (names) {
        owner = cached(names->users, &names->nusers, st->st_uid, false);
        group = cached(names->groups, &names->ngroups, st->st_gid, true);
    } else {
        osb_users_name(st->st_uid, ubuf, sizeof ubuf);
        osb_users_group_name(st->st_gid, gbuf, sizeof gbuf);
        owner = ubuf;
        group = gbuf;
    }
    json_t *j = json_object();
    json_object_set_new(j, "path", osb_fs_json_string(path));
    json_object_set_new(j, "type", json_string(osb_fs_info_type(st->st_mode)));
    json_object_set_new(j, "size", json_integer((json_int_t)st->st_size));
    json_object_set_new(j, "modified_at", json_string(mtime));
    json_object_set_new(j, "created_at", json_string(ctime_));
    json_object_set_new(j, "owner", osb_fs_json_string(owner));
    json_object_set_new(j, "group", osb_fs_json_string(group));
    json_object_set_new(j, "mode", json_integer(osb_fs_info_mode(st->st_mode)));
    return j;
}

int osb_fs_info_lstat(const char *abs, struct osb_fs_names *names, json_t **out,
                      struct osb_err *err)
{
    struct stat st;
    if (lstat(abs, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_NOTFOUND, "file not found: %s", abs);
        return osb_err_sys(err, "stat %s", abs);
    }
    *out = osb_fs_info_json(abs, &st, names);
    return 0;
}
