/* What config.json adds so a gvisor sandbox keeps the privileges a native
 * one has (src/runtime/init/secure.c): Docker's default capability set in
 * the bounding, effective, permitted and inheritable sets (the Sentry
 * enforces them; without a set execd could not switch a command to
 * another uid), no_new_privs (a setuid binary gains nothing), native's
 * open-files limit, pids_max as RLIMIT_NPROC (the Sentry enforces it, per
 * uid as Linux does: a fork past it fails with EAGAIN inside, where the
 * host's pids.max would abort the whole Sentry; see cgroup.c). (/tmp and
 * /dev/shm stay under the disk limit through mounts.c.)
 *
 * execd's socket directory is a bind of the host directory <dir>/sock, in
 * which the gofer (--host-uds=create) makes the real host socket execd
 * binds. Once execd listens, the directory is made immutable
 * (FS_IMMUTABLE_FL, which binds root too; only CAP_LINUX_IMMUTABLE clears
 * it, and gVisor has no call that reaches it): nothing the sandbox does
 * creates, removes, renames or writes anything in it, so it holds
 * execd.sock and nothing else, and the server's connect never follows
 * a link the sandbox planted. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "runtime/gvisor/state.h"

static const char *const caps[] = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",    "CAP_AUDIT_WRITE",
};

/* Native's (secure.c): execd serves many connections. */
#define GV_NOFILE 65536

static json_t *cap_list(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < OSB_ARRAY_LEN(caps); i++)
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
    json_object_set_new(
        process, "rlimits",
        json_pack("[o,o]", rlimit("RLIMIT_NOFILE", GV_NOFILE), rlimit("RLIMIT_NPROC", pids)));
}

static int set_immutable(const char *path, bool on, struct osb_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int flags;
    if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
        return osb_err_sys(err, "%s", path);
    flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
    if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
        return osb_err_sys(err, "set the immutable flag on %s", path);
    return 0;
}

/* What the sandbox could do before the lock: only execd.sock, a socket. */
static int check_sock_dir(const char *sock_dir, struct osb_err *err)
{
    DIR *d = opendir(sock_dir);
    if (!d)
        return osb_err_sys(err, "opendir %s", sock_dir);
    int bad = 0;
    struct dirent *e;
    while (!bad && (e = readdir(d))) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bad = strcmp(e->d_name, OSB_GV_SOCK_NAME) != 0 ||
              fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode);
    }
    closedir(d);
    return bad ? osb_err_set(err, OSB_E_INTERNAL,
                             "the sandbox changed execd's socket directory while starting")
               : 0;
}

int osb_gv_lock_sock_dir(const char *dir, struct osb_err *err)
{
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s/sock", dir);
    return set_immutable(p, true, err) < 0 ? -1 : check_sock_dir(p, err);
}

void osb_gv_unlock_sock_dir(const char *dir)
{
    char p[PATH_MAX + 8];
    snprintf(p, sizeof p, "%s/sock", dir);
    struct osb_err err = {0};
    if (access(p, F_OK) == 0 && set_immutable(p, false, &err) < 0)
        osb_warn("gvisor: %s", err.msg);
}

int osb_gv_harden_probe(const char *sandboxes_dir, struct osb_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/.immutable-probe", sandboxes_dir);
    if (mkdir(p, 0700) < 0 && errno != EEXIST)
        return osb_err_sys(err, "mkdir %s", p);
    int rc = set_immutable(p, true, err) == 0 && set_immutable(p, false, err) == 0 ? 0 : -1;
    if (rc < 0)
        set_immutable(p, false, &(struct osb_err){0});
    rmdir(p);
    return rc < 0 ? osb_err_wrap(err, "gvisor: the state directory's file system must support "
                                      "the immutable flag (chattr +i) for execd's socket "
                                      "directory")
                  : 0;
}
