#include "runtime/cgroupfs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/fstree.h"

/* Where the server moves itself when cgroup v2 forbids processes in a
 * cgroup that delegates controllers ("no internal processes"). */
#define LEAF_NAME "opensandbox-server"
/* Bounds on the synchronous waits (freeze, kill, rmdir). */
#define WAIT_MS 3000

static const char *const v1_controller[OSB_CG_NROLES] = {
    [OSB_CG_MEMORY] = "memory", [OSB_CG_CPU] = "cpu",         [OSB_CG_CPUACCT] = "cpuacct",
    [OSB_CG_PIDS] = "pids",     [OSB_CG_FREEZER] = "freezer",
};

/* ------------------------------------------------------------ parsing */

static bool in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n) {
        bool start = p == list || p[-1] == ',';
        bool end = p[n] == ',' || p[n] == '\0' || p[n] == ' ' || p[n] == '\n';
        if (start && end)
            return true;
    }
    return false;
}

static void parse_mount_line(char *line, struct osb_cg_mounts *m)
{
    char *f[6] = {0}, *save = NULL, *sep = strstr(line, " - ");
    if (!sep)
        return;
    *sep = '\0';
    char *tok = strtok_r(line, " ", &save);
    for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &save))
        f[i] = tok;
    char *fstype = strtok_r(sep + 3, " ", &save);
    strtok_r(NULL, " ", &save); /* source */
    char *super = strtok_r(NULL, " \n", &save);
    if (!f[4] || !fstype)
        return;
    if (strcmp(fstype, "cgroup2") == 0 && !m->v2[0]) {
        snprintf(m->v2, sizeof m->v2, "%s", f[4]);
        snprintf(m->v2_root, sizeof m->v2_root, "%s", f[3]);
        return;
    }
    if (strcmp(fstype, "cgroup") != 0 || !super)
        return;
    for (int r = OSB_CG_MEMORY; r < OSB_CG_NROLES; r++) {
        if (!m->v1[r][0] && in_list(super, v1_controller[r])) {
            snprintf(m->v1[r], sizeof m->v1[r], "%s", f[4]);
            snprintf(m->v1_root[r], sizeof m->v1_root[r], "%s", f[3]);
        }
    }
    if (in_list(super, "cpu") && in_list(super, "cpuacct"))
        m->cpuacct_with_cpu = true;
}

void osb_cg_parse_mountinfo(const char *text, struct osb_cg_mounts *m)
{
    memset(m, 0, sizeof *m);
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        parse_mount_line(l, m);
    free(copy);
}

bool osb_cg_parse_own(const char *text, const char *controller, char *out, size_t n)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *c1 = strchr(l, ':'), *eol = strchr(l, '\n');
        const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || (eol && c2 > eol))
            continue;
        char ctl[256];
        snprintf(ctl, sizeof ctl, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
        bool match =
            controller ? in_list(ctl, controller) : (ctl[0] == '\0' && c1 - l == 1 && *l == '0');
        if (!match)
            continue;
        size_t len = eol ? (size_t)(eol - c2 - 1) : strlen(c2 + 1);
        snprintf(out, n, "%.*s", (int)len, c2 + 1);
        return true;
    }
    return false;
}

void osb_cg_join_path(const char *mnt, const char *mnt_root, const char *own, char *out, size_t n)
{
    size_t rl = strlen(mnt_root);
    if (strcmp(mnt_root, "/") != 0 && strncmp(own, mnt_root, rl) == 0 &&
        (own[rl] == '/' || own[rl] == '\0'))
        own += rl;
    while (*own == '/')
        own++;
    snprintf(out, n, "%s%s%s", mnt, *own ? "/" : "", own);
}

/* ------------------------------------------------------------ plan */

static void add_base(struct osb_cg_plan *p, enum osb_cg_role role, const char *home)
{
    struct osb_cg_base *b = &p->bases[p->n++];
    b->role = role;
    snprintf(b->home, sizeof b->home, "%s", home);
    snprintf(b->base, sizeof b->base, "%s/%s", home, p->base_name);
}

/* "opensandbox-<FNV-1a of the state dir>": two servers (or test runs)
 * with different state dirs never see each other's sandboxes as orphans. */
void osb_cg_base_name(const char *state_dir, char *out, size_t n)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *c = (const unsigned char *)state_dir; *c; c++)
        h = (h ^ *c) * 16777619u;
    snprintf(out, n, "opensandbox-%08x", h);
}

static bool has_file(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static bool v2_has(const char *dir, const char *controller)
{
    char path[PATH_MAX], buf[512];
    snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
    if (osb_fs_read(path, buf, sizeof buf) < 0)
        return false;
    for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
        if (strcmp(w, controller) == 0)
            return true;
    return false;
}

/* Moves every process of dir into dir/LEAF_NAME (v2's no-internal-process
 * rule forbids enabling controllers for children otherwise). */
static int move_to_leaf(const char *dir, struct osb_err *err)
{
    char leaf[PATH_MAX], procs[PATH_MAX], buf[65536];
    snprintf(leaf, sizeof leaf, "%s/%s", dir, LEAF_NAME);
    if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
        return osb_err_sys(err, "create cgroup `%s`", leaf);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    if (osb_fs_read(procs, buf, sizeof buf) < 0)
        return osb_err_sys(err, "read `%s`", procs);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", leaf);
    for (char *save = NULL, *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save))
        if (osb_write_fileat(AT_FDCWD, procs, w, NULL) < 0) /* e.g. it exited meanwhile */
            osb_debug("move pid %s into `%s`: %s", w, leaf, strerror(errno));
    return 0;
}

/* Enables the controllers dir has for its children. */
static int v2_delegate(const char *dir, bool may_move, struct osb_err *err)
{
    static const char *const ctls[] = {"memory", "pids", "cpu"};
    char path[PATH_MAX], want[64];
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
    for (size_t i = 0; i < OSB_ARRAY_LEN(ctls); i++) {
        if (!v2_has(dir, ctls[i]))
            continue;
        snprintf(want, sizeof want, "+%s", ctls[i]);
        if (osb_write_fileat(AT_FDCWD, path, want, NULL) == 0)
            continue;
        if (errno != EBUSY || !may_move || move_to_leaf(dir, err) < 0 ||
            osb_write_fileat(AT_FDCWD, path, want, err) < 0)
            return osb_err_wrap(err, "enable the %s controller in `%s`", ctls[i], dir);
    }
    return 0;
}

/* The v2 directory of the calling process's cgroup. */
static bool own_v2_dir(const struct osb_cg_mounts *m, char *out, size_t n)
{
    char cg[1 << 14], own[PATH_MAX];
    if (!m->v2[0] || osb_fs_read("/proc/self/cgroup", cg, sizeof cg) < 0 ||
        !osb_cg_parse_own(cg, NULL, own, sizeof own))
        return false;
    osb_cg_join_path(m->v2, m->v2_root, own, out, n);
    return true;
}

static int plan_v2(struct osb_cg_plan *p, const struct osb_cg_mounts *m, const char *own_dir,
                   struct osb_err *err)
{
    char home[PATH_MAX];
    snprintf(home, sizeof home, "%s", own_dir);
    /* Already moved into the leaf by an earlier run: work from its parent. */
    char *slash = strrchr(home, '/');
    if (slash && strcmp(slash + 1, LEAF_NAME) == 0)
        *slash = '\0';
    if (v2_delegate(home, true, err) < 0)
        return -1;
    add_base(p, OSB_CG_V2, home);
    struct osb_cg_base *b = &p->bases[p->n - 1];
    if (osb_mkdir_p(b->base, 0755, err) < 0 || v2_delegate(b->base, false, err) < 0)
        return -1;
    /* The helper starts where the server is now: the leaf if it moved. */
    own_v2_dir(m, b->home, sizeof b->home);
    p->version = 2;
    snprintf(p->desc, sizeof p->desc, "cgroup v2: memory pids%s",
             v2_has(b->base, "cpu") ? " cpu" : "");
    return 0;
}

int osb_cg_ensure_bases(const struct osb_cg_plan *p, struct osb_err *err)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct osb_cg_base *b = &p->bases[i];
        if (mkdir(b->base, 0755) < 0) {
            if (errno == EEXIST)
                continue;
            return osb_err_sys(err, "create cgroup `%s`", b->base);
        }
        if (b->role == OSB_CG_V2 && v2_delegate(b->base, false, err) < 0)
            return -1;
    }
    return 0;
}

static int plan_v1(struct osb_cg_plan *p, const struct osb_cg_mounts *m, const char *own_text,
                   struct osb_err *err)
{
    if (!m->v1[OSB_CG_MEMORY][0] || !m->v1[OSB_CG_PIDS][0])
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "no usable cgroups: need cgroup v2 with the memory and pids "
                           "controllers, or v1 memory and pids hierarchies");
    char own[PATH_MAX], dir[PATH_MAX];
    /* OSB_RT_CGROUP_V1_ONLY=1 ignores a hybrid v2 hierarchy, so tests can
     * exercise the pure-v1 paths (v1 freezer, kill loop) on a hybrid host. */
    const char *v1_only = getenv("OSB_RT_CGROUP_V1_ONLY");
    if (m->v2[0] && !(v1_only && strcmp(v1_only, "1") == 0) &&
        osb_cg_parse_own(own_text, NULL, own, sizeof own)) {
        osb_cg_join_path(m->v2, m->v2_root, own, dir, sizeof dir);
        char base[PATH_MAX];
        snprintf(base, sizeof base, "%s/%s", dir, p->base_name);
        if (osb_mkdir_p(base, 0755, NULL) == 0 && has_file(base, "cgroup.kill") &&
            has_file(base, "cgroup.freeze"))
            add_base(p, OSB_CG_UNIFIED, dir);
    }
    bool unified = p->n > 0;
    for (int r = OSB_CG_MEMORY; r < OSB_CG_NROLES; r++) {
        if (!m->v1[r][0] || (r == OSB_CG_CPUACCT && m->cpuacct_with_cpu) ||
            (r == OSB_CG_FREEZER && unified))
            continue;
        if (!osb_cg_parse_own(own_text, v1_controller[r], own, sizeof own))
            continue;
        osb_cg_join_path(m->v1[r], m->v1_root[r], own, dir, sizeof dir);
        add_base(p, (enum osb_cg_role)r, dir);
        if (osb_mkdir_p(p->bases[p->n - 1].base, 0755, err) < 0)
            return -1;
    }
    if (!unified && !m->v1[OSB_CG_FREEZER][0])
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "no cgroup freezer: need the v1 freezer or cgroup v2");
    p->version = 1;
    int len = snprintf(p->desc, sizeof p->desc, "cgroup v1:");
    for (size_t i = 0; i < p->n; i++)
        if (p->bases[i].role != OSB_CG_UNIFIED && len < (int)sizeof p->desc)
            len += snprintf(p->desc + len, sizeof p->desc - (size_t)len, " %s",
                            osb_cg_role_name(p->bases[i].role));
    if (unified && len < (int)sizeof p->desc)
        snprintf(p->desc + len, sizeof p->desc - (size_t)len, "; v2 for freeze/kill");
    return 0;
}

int osb_cg_plan_init(struct osb_cg_plan *p, const char *state_dir, struct osb_err *err)
{
    memset(p, 0, sizeof *p);
    osb_cg_base_name(state_dir, p->base_name, sizeof p->base_name);
    static char mi[1 << 16], cg[1 << 14];
    if (osb_fs_read("/proc/self/mountinfo", mi, sizeof mi) < 0 ||
        osb_fs_read("/proc/self/cgroup", cg, sizeof cg) < 0)
        return osb_err_sys(err, "read /proc/self/mountinfo or /proc/self/cgroup");
    struct osb_cg_mounts m;
    osb_cg_parse_mountinfo(mi, &m);
    char dir[PATH_MAX];
    if (own_v2_dir(&m, dir, sizeof dir) && v2_has(dir, "memory") && v2_has(dir, "pids"))
        return plan_v2(p, &m, dir, err);
    return plan_v1(p, &m, cg, err);
}

/* ------------------------------------------------------------ sets */

void osb_cg_set_for(const struct osb_cg_plan *p, const char *id, struct osb_cg_set *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < p->n; i++) {
        s->role[s->n] = p->bases[i].role;
        snprintf(s->dir[s->n], sizeof s->dir[0], "%s/%s", p->bases[i].base, id);
        s->n++;
    }
}

int osb_cg_set_parse(const char *text, struct osb_cg_set *s, struct osb_err *err)
{
    memset(s, 0, sizeof *s);
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return osb_err_set(err, OSB_E_INTERNAL, "out of memory");
    int r = 0;
    for (char *l = strtok_r(copy, "\n", &save); l && r == 0; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "image ", 6) == 0)
            continue;
        char *sp = strchr(l, ' ');
        int role = -1;
        if (sp) {
            *sp = '\0';
            role = osb_cg_role_parse(l);
        }
        if (role < 0 || sp[1] != '/' || strstr(sp + 1, "/..") || s->n == OSB_CG_NROLES) {
            r = osb_err_set(err, OSB_E_INVALID, "bad cgroups record line `%s`", l);
            break;
        }
        s->role[s->n] = (enum osb_cg_role)role;
        snprintf(s->dir[s->n], sizeof s->dir[0], "%s", sp + 1);
        s->n++;
    }
    free(copy);
    return r;
}

void osb_cg_set_load(const struct osb_cg_plan *p, const char *id, const char *sandbox_dir,
                     struct osb_cg_set *s)
{
    char path[PATH_MAX], buf[8192];
    snprintf(path, sizeof path, "%s/%s", sandbox_dir, OSB_SANDBOX_RECORD);
    if (osb_fs_read(path, buf, sizeof buf) > 0 && osb_cg_set_parse(buf, s, NULL) == 0 && s->n)
        return;
    osb_cg_set_for(p, id, s);
}

static const char *dir_of(const struct osb_cg_set *s, enum osb_cg_role role)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->role[i] == role)
            return s->dir[i];
    return NULL;
}

/* The v2 directory (with or without controllers), if any. */
static const char *v2_dir(const struct osb_cg_set *s)
{
    const char *d = dir_of(s, OSB_CG_V2);
    return d ? d : dir_of(s, OSB_CG_UNIFIED);
}

bool osb_cg_exists(const struct osb_cg_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (access(s->dir[i], F_OK) == 0)
            return true;
    return false;
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Polls dir/file until it contains want (as a whole line or word). */
static bool wait_for(const char *dir, const char *file, const char *want)
{
    char path[PATH_MAX], buf[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int64_t end = osb_mono_ms() + WAIT_MS;
    for (long us = 50;; us = us < 2000 ? us * 2 : us) {
        if (osb_fs_read(path, buf, sizeof buf) >= 0 && strstr(buf, want))
            return true;
        if (osb_mono_ms() > end)
            return false;
        pause_us(us);
    }
}

int osb_cg_freeze(const struct osb_cg_set *s, bool freeze, struct osb_err *err)
{
    char path[PATH_MAX];
    const char *d = v2_dir(s);
    if (d) {
        snprintf(path, sizeof path, "%s/cgroup.freeze", d);
        if (osb_write_fileat(AT_FDCWD, path, freeze ? "1" : "0", err) < 0)
            return -1;
        if (!wait_for(d, "cgroup.events", freeze ? "frozen 1" : "frozen 0"))
            return osb_err_set(err, OSB_E_INTERNAL, "`%s` did not become %s within %d ms", d,
                               freeze ? "frozen" : "thawed", WAIT_MS);
        return 0;
    }
    d = dir_of(s, OSB_CG_FREEZER);
    if (!d)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "no freezer cgroup for this sandbox");
    snprintf(path, sizeof path, "%s/freezer.state", d);
    const char *state = freeze ? "FROZEN" : "THAWED";
    if (osb_write_fileat(AT_FDCWD, path, state, err) < 0)
        return -1;
    if (!wait_for(d, "freezer.state", state)) {
        struct osb_err thaw;
        if (freeze && osb_write_fileat(AT_FDCWD, path, "THAWED", &thaw) < 0)
            osb_warn("%s", thaw.msg);
        return osb_err_set(err, OSB_E_INTERNAL, "`%s` did not become %s within %d ms", d, state,
                           WAIT_MS);
    }
    return 0;
}

/* Where to list the processes: any directory holds all of them. */
static const char *procs_dir(const struct osb_cg_set *s)
{
    const char *d = v2_dir(s);
    if (!d)
        d = dir_of(s, OSB_CG_PIDS);
    return d ? d : (s->n ? s->dir[0] : NULL);
}

/* SIGKILLs every listed pid; returns how many were listed, -1 if the
 * directory is gone. */
static int kill_listed(const char *dir)
{
    char path[PATH_MAX], buf[1 << 16];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (osb_fs_read(path, buf, sizeof buf) < 0)
        return -1;
    int n = 0;
    for (char *save = NULL, *w = strtok_r(buf, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
        pid_t pid = (pid_t)strtol(w, NULL, 10);
        if (pid > 0) {
            kill(pid, SIGKILL);
            n++;
        }
    }
    return n;
}

int osb_cg_kill(const struct osb_cg_set *s, struct osb_err *err)
{
    const char *pd = procs_dir(s);
    if (!pd || access(pd, F_OK) < 0)
        return 0;
    const char *d = v2_dir(s);
    char path[PATH_MAX];
    bool killed = false;
    if (d) {
        snprintf(path, sizeof path, "%s/cgroup.kill", d);
        killed = osb_write_fileat(AT_FDCWD, path, "1", NULL) == 0;
    }
    const char *fz = dir_of(s, OSB_CG_FREEZER);
    if (!killed && fz) {
        /* v1: freeze so nothing forks between listing and killing, kill,
         * thaw so the frozen tasks can act on SIGKILL. */
        int frozen = osb_cg_freeze(s, true, NULL);
        kill_listed(fz);
        /* Thawed even after a failed freeze: a half-frozen group waits. */
        if (osb_cg_freeze(s, false, NULL) < 0 || frozen < 0)
            osb_debug("cgroup %s: the freeze around the kill failed; killing unfrozen", fz);
    }
    int64_t end = osb_mono_ms() + WAIT_MS;
    for (long us = 50;; us = us < 2000 ? us * 2 : us) {
        int n = kill_listed(pd);
        if (n <= 0)
            return 0;
        if (osb_mono_ms() > end)
            return osb_err_set(err, OSB_E_INTERNAL, "%d processes of `%s` survived SIGKILL", n, pd);
        pause_us(us);
    }
}

int osb_cg_remove(const struct osb_cg_set *s, struct osb_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        int64_t end = osb_mono_ms() + WAIT_MS;
        for (long us = 50; rmdir(s->dir[i]) < 0; us = us < 2000 ? us * 2 : us) {
            if (errno == ENOENT)
                break;
            if (errno != EBUSY || osb_mono_ms() > end)
                return osb_err_sys(err, "remove cgroup `%s`", s->dir[i]);
            pause_us(us);
        }
    }
    return 0;
}

static uint64_t read_u64(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX], buf[8192];
    if (!dir)
        return 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (osb_fs_read(path, buf, sizeof buf) < 0)
        return 0;
    if (!key)
        return strtoull(buf, NULL, 10);
    size_t k = strlen(key);
    for (char *l = buf; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ')
            return strtoull(l + k + 1, NULL, 10);
    return 0;
}

int osb_cg_stats(const struct osb_cg_set *s, struct osb_cg_stats *out, struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    const char *pd = procs_dir(s);
    if (!pd || access(pd, F_OK) < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox has no cgroup");
    const char *v2 = dir_of(s, OSB_CG_V2), *uni = dir_of(s, OSB_CG_UNIFIED);
    if (v2) {
        out->memory_bytes = read_u64(v2, "memory.current", NULL);
        out->pids = read_u64(v2, "pids.current", NULL);
    } else {
        out->memory_bytes = read_u64(dir_of(s, OSB_CG_MEMORY), "memory.usage_in_bytes", NULL);
        out->pids = read_u64(dir_of(s, OSB_CG_PIDS), "pids.current", NULL);
    }
    if (v2 || uni) {
        /* cpu.stat exists in every v2 cgroup, controller or not. */
        out->cpu_usage_ns = read_u64(v2 ? v2 : uni, "cpu.stat", "usage_usec") * 1000;
    } else {
        const char *acct = dir_of(s, OSB_CG_CPUACCT);
        out->cpu_usage_ns = read_u64(acct ? acct : dir_of(s, OSB_CG_CPU), "cpuacct.usage", NULL);
    }
    return 0;
}
