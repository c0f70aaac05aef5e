#include "execd/users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/xalloc.h"

/* Paths are variables so unit tests can point them at fixtures. */
const char *osb_users_passwd_path = "/etc/passwd";
const char *osb_users_group_path = "/etc/group";

/* Calls fn for each line split on ':'; stops when fn returns non-zero. */
static int each_entry(const char *path, int (*fn)(char **f, int nf, void *ud), void *ud)
{
    _cleanup_fclose_ FILE *fp = fopen(path, "re");
    if (!fp)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int r = 0;
    while (!r && getline(&line, &cap, fp) > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        char *f[8];
        int nf = 0;
        char *s = line, *c;
        while (nf < 8) {
            f[nf++] = s;
            if (!(c = strchr(s, ':')))
                break;
            *c = '\0';
            s = c + 1;
        }
        if (nf >= 3 && f[0][0] && f[0][0] != '#')
            r = fn(f, nf, ud);
    }
    free(line);
    return r;
}

static bool parse_id(const char *s, unsigned long *out)
{
    char *end;
    if (!*s || *s < '0' || *s > '9')
        return false;
    *out = strtoul(s, &end, 10);
    return *end == '\0';
}

struct lookup {
    const char *name; /* by name */
    unsigned long id; /* by id */
    char *buf;
    size_t n;
    unsigned long found;
};

static int by_id(char **f, int nf, void *ud)
{
    struct lookup *l = ud;
    unsigned long id;
    (void)nf;
    if (!parse_id(f[2], &id) || id != l->id)
        return 0;
    snprintf(l->buf, l->n, "%s", f[0]);
    return 1;
}

static int by_name(char **f, int nf, void *ud)
{
    struct lookup *l = ud;
    (void)nf;
    if (strcmp(f[0], l->name) != 0 || !parse_id(f[2], &l->found))
        return 0;
    return 1;
}

static void name_of(const char *path, unsigned long id, char *buf, size_t n)
{
    struct lookup l = {.id = id, .buf = buf, .n = n};
    if (!each_entry(path, by_id, &l))
        snprintf(buf, n, "%lu", id);
}

static int id_of(const char *path, const char *name, unsigned long *out)
{
    if (parse_id(name, out))
        return 0;
    struct lookup l = {.name = name};
    if (!each_entry(path, by_name, &l))
        return -1;
    *out = l.found;
    return 0;
}

void osb_users_name(uid_t uid, char *buf, size_t n)
{
    name_of(osb_users_passwd_path, uid, buf, n);
}

void osb_users_group_name(gid_t gid, char *buf, size_t n)
{
    name_of(osb_users_group_path, gid, buf, n);
}

int osb_users_uid(const char *name, uid_t *out)
{
    unsigned long v;
    if (id_of(osb_users_passwd_path, name, &v) < 0)
        return -1;
    *out = (uid_t)v;
    return 0;
}

int osb_users_gid(const char *name, gid_t *out)
{
    unsigned long v;
    if (id_of(osb_users_group_path, name, &v) < 0)
        return -1;
    *out = (gid_t)v;
    return 0;
}

struct groups_ctx {
    char user[256];
    gid_t *groups;
    size_t max, n;
};

static int member(char **f, int nf, void *ud)
{
    struct groups_ctx *g = ud;
    unsigned long gid;
    if (nf < 4 || !parse_id(f[2], &gid) || g->n >= g->max)
        return 0;
    for (char *save = NULL, *m = strtok_r(f[3], ",", &save); m; m = strtok_r(NULL, ",", &save))
        if (strcmp(m, g->user) == 0 && (gid_t)gid != g->groups[0])
            g->groups[g->n++] = (gid_t)gid;
    return 0;
}

int osb_users_groups_of(uid_t uid, gid_t gid, gid_t *groups, size_t max)
{
    struct groups_ctx g = {.groups = groups, .max = max, .n = 1};
    groups[0] = gid;
    struct lookup l = {.id = uid, .buf = g.user, .n = sizeof g.user};
    if (each_entry(osb_users_passwd_path, by_id, &l))
        each_entry(osb_users_group_path, member, &g);
    return (int)g.n;
}

static int home_of(char **f, int nf, void *ud)
{
    struct lookup *l = ud;
    unsigned long id;
    if (nf < 6 || !parse_id(f[2], &id) || id != l->id)
        return 0;
    l->buf = osb_xstrdup(f[5]);
    return 1;
}

char *osb_users_home(uid_t uid)
{
    struct lookup l = {.id = uid};
    each_entry(osb_users_passwd_path, home_of, &l);
    return l.buf;
}
