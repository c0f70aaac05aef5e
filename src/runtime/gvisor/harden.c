/* What config.json adds so a gvisor sandbox keeps the privileges a native
 * one has (src/runtime/init/secure.c): Docker's default capability set in
 * the bounding, effective, permitted and inheritable sets (the Sentry
 * enforces them; without a set execd could not switch a command to
 * another uid), no_new_privs (a setuid binary gains nothing), native's
 * open-files limit, pids_max as RLIMIT_NPROC (the Sentry enforces it, per
 * uid as Linux does: a fork past it fails with EAGAIN inside, where the
 * host's pids.max would abort the whole Sentry; see cgroup.c), and the
 * mounts that keep every writable place under
 * the disk limit (gVisor's own /tmp would be the Sentry's memory). */
#include <stdio.h>
#include <sys/stat.h>

#include "runtime/gvisor/state.h"

static const char *const caps[] = {
    "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",  "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",     "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",   "CAP_AUDIT_WRITE",
};

/* Native's (secure.c): execd serves many connections. */
#define GV_NOFILE 65536

static json_t *cap_list(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        json_array_append_new(a, json_string(caps[i]));
    return a;
}

static json_t *rlimit(const char *type, json_int_t n)
{
    return json_pack("{s:s, s:I, s:I}", "type", type, "hard", n, "soft", n);
}

void osb_gv_harden_process(const struct osb_sandbox_spec *s, json_t *process)
{
    json_int_t pids = s->pids_max ? s->pids_max : OSB_LIMIT_DEFAULT_PIDS;
    json_object_set_new(process, "capabilities",
                        json_pack("{s:o, s:o, s:o, s:o}", "bounding", cap_list(), "effective",
                                  cap_list(), "permitted", cap_list(), "inheritable", cap_list()));
    json_object_set_new(process, "noNewPrivileges", json_true());
    json_object_set_new(process, "rlimits", json_pack("[o,o]", rlimit("RLIMIT_NOFILE", GV_NOFILE),
                                                   rlimit("RLIMIT_NPROC", pids)));
}

/* /tmp and /dev/shm: directories on the writable layer's tmpfs
 * (osb_gv_harden_rw makes them), so they share the disk limit. gVisor
 * mounts its own /tmp only when the spec mounts nothing there, and its
 * /dev/shm is a directory of its /dev: both the Sentry's memory, with no
 * bound but the memory limit. */
static const char *const rw_dirs[][2] = {{"/tmp", "tmp"}, {"/dev/shm", "shm"}};

void osb_gv_harden_mounts(const char *dir, json_t *mounts)
{
    for (size_t i = 0; i < sizeof rw_dirs / sizeof rw_dirs[0]; i++) {
        char src[PATH_MAX + 16];
        snprintf(src, sizeof src, "%s/rw/%s", dir, rw_dirs[i][1]);
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:[s,s,s,s]}", "destination",
                                                rw_dirs[i][0], "type", "bind", "source", src,
                                                "options", "rbind", "rw", "nosuid", "nodev"));
    }
}

int osb_gv_harden_rw(const char *dir)
{
    for (size_t i = 0; i < sizeof rw_dirs / sizeof rw_dirs[0]; i++) {
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/rw/%s", dir, rw_dirs[i][1]);
        if (mkdir(p, 0700) < 0 || chmod(p, 01777) < 0)
            return -1;
    }
    return 0;
}
