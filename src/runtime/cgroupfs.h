/* cgroups of sandboxes: where they go, and the operations on a sandbox's
 * set of cgroups (freeze, kill, remove, stats). The native backend uses
 * all of it; the gvisor backend the detection (its plan, under a base of
 * its own) and the stats, since runsc creates and removes its cgroups.
 *
 * Layout: every sandbox gets "<own cgroup>/opensandbox-<hash>/<id>" in each
 * hierarchy it uses, where <own cgroup> is the server's cgroup in that
 * hierarchy, so sandboxes stay inside whatever limits and accounting the
 * server itself is under (a systemd unit, a container), and <hash> is a
 * hash of the state dir, so servers with different state dirs never touch
 * each other's cgroups.
 *  - cgroup v2 with the memory and pids controllers: one directory (role
 *    OSB_CG_V2) holds every limit and the freeze/kill knobs.
 *  - otherwise cgroup v1: memory, cpu, cpuacct (when mounted apart from
 *    cpu), pids; plus, when a v2 hierarchy without controllers is mounted
 *    next to them (hybrid, like this project's CI), a directory there
 *    (OSB_CG_UNIFIED) for cgroup.freeze, cgroup.kill and cgroup.events,
 *    which are faster and simpler than the v1 freezer; the v1 freezer only
 *    when no such v2 directory exists.
 * The helper records each sandbox's directories in <sandbox dir>/sandbox,
 * so a restarted server operates on the directories the sandbox really
 * has even if its own cgroup changed. */
#ifndef OSB_RT_CGROUPFS_H
#define OSB_RT_CGROUPFS_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/init/spec.h"

struct osb_cg_base {
    enum osb_cg_role role;
    char home[PATH_MAX]; /* the server's own cgroup directory in this hierarchy */
    char base[PATH_MAX]; /* <parent of sandboxes' cgroups>/<base_name> */
};

struct osb_cg_plan {
    struct osb_cg_base bases[OSB_CG_NROLES];
    size_t n;
    int version;        /* 1 or 2 (limits) */
    char base_name[32]; /* "opensandbox-<hash of the state dir>" */
    char desc[256];     /* "cgroup v1: memory cpu cpuacct pids; v2 for freeze/kill" */
};

/* Parsing, separated from the filesystem for unit tests. text is the
 * content of /proc/self/mountinfo, resp. /proc/self/cgroup. */
struct osb_cg_mounts {
    char v2[PATH_MAX];                /* cgroup2 mount point, "" if none */
    char v2_root[PATH_MAX];           /* its mount root ("/" normally) */
    char v1[OSB_CG_NROLES][PATH_MAX]; /* per v1 role: mount point, "" if none */
    char v1_root[OSB_CG_NROLES][PATH_MAX];
    bool cpuacct_with_cpu; /* cpu and cpuacct share one hierarchy */
};
void osb_cg_parse_mountinfo(const char *text, struct osb_cg_mounts *m);
/* The process's cgroup path for a v1 controller ("memory", ...) or, with
 * controller NULL, for the v2 hierarchy. Returns false if not listed. */
bool osb_cg_parse_own(const char *text, const char *controller, char *out, size_t n);
/* mount point + (own path minus the mount's root): the directory of own
 * cgroup as seen through this mount. */
void osb_cg_join_path(const char *mnt, const char *mnt_root, const char *own, char *out, size_t n);

void osb_cg_base_name(const char *state_dir, char *out, size_t n);
/* Detect the layout from /proc/self/{mountinfo,cgroup} and create the
 * base directories (enabling v2 controllers on the way down). */
int osb_cg_plan_init(struct osb_cg_plan *p, const char *state_dir,
                     struct osb_err *err) OSB_MUST_CHECK;

/* One sandbox's cgroups. */
/* Recreate base groups another runtime on the same state dir removed (each
 * removes the empty ones when it closes). A few mkdir calls. */
int osb_cg_ensure_bases(const struct osb_cg_plan *p, struct osb_err *err) OSB_MUST_CHECK;

struct osb_cg_set {
    size_t n;
    enum osb_cg_role role[OSB_CG_NROLES];
    char dir[OSB_CG_NROLES][PATH_MAX];
};
/* The set a new sandbox gets under plan p (also what an unrecorded
 * sandbox would have). */
void osb_cg_set_for(const struct osb_cg_plan *p, const char *id, struct osb_cg_set *s);
/* Parse the helper's <sandbox dir>/sandbox record: "<role> <dir>\n" lines
 * (an "image <name>" line is skipped).
 * Lines with unknown roles or dirs outside /sys/fs/cgroup-like mounts are
 * rejected: the record decides what gets killed and removed. */
int osb_cg_set_parse(const char *text, struct osb_cg_set *s, struct osb_err *err) OSB_MUST_CHECK;
/* Record if present, else the plan's set. */
void osb_cg_set_load(const struct osb_cg_plan *p, const char *id, const char *sandbox_dir,
                     struct osb_cg_set *s);

bool osb_cg_exists(const struct osb_cg_set *s);
/* Freeze (true) or thaw; waits until the kernel reports the new state. */
int osb_cg_freeze(const struct osb_cg_set *s, bool freeze, struct osb_err *err) OSB_MUST_CHECK;
/* SIGKILL every process and wait until none is left (bounded). */
int osb_cg_kill(const struct osb_cg_set *s, struct osb_err *err) OSB_MUST_CHECK;
/* rmdir every directory (missing ones are fine). */
int osb_cg_remove(const struct osb_cg_set *s, struct osb_err *err) OSB_MUST_CHECK;

struct osb_cg_stats {
    uint64_t memory_bytes, cpu_usage_ns, pids;
};
int osb_cg_stats(const struct osb_cg_set *s, struct osb_cg_stats *out,
                 struct osb_err *err) OSB_MUST_CHECK;
#endif
