/* Privileges of a sandbox, as Docker gives a container by default:
 *  - capabilities: Docker's default set only, in the bounding, permitted,
 *    effective and inheritable sets; the ambient set cleared. No SYS_ADMIN,
 *    NET_ADMIN, SYS_PTRACE, SYS_MODULE, DAC_READ_SEARCH...
 *  - no_new_privs: setuid binaries and file capabilities cannot raise them.
 *  - seccomp: the calls Docker's default profile refuses to a container
 *    without extra capabilities return EPERM (a deny list; see
 *    docs/security.md for how it relates to Docker's allow list), and
 *    clone3 returns ENOSYS so libc falls back to clone, whose namespace
 *    flags the filter can inspect.
 *  - rlimits: a generous open-files limit (execd serves many connections).
 * Order matters: capabilities before no_new_privs before seccomp (the
 * filter would refuse the prctl/capset calls it does not list, and
 * loading it needs no_new_privs without CAP_SYS_ADMIN). */
#include <errno.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/init.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const int keep_caps[] = {
    CAP_CHOWN,   CAP_DAC_OVERRIDE, CAP_FSETID,           CAP_FOWNER,
    CAP_MKNOD,   CAP_NET_RAW,      CAP_SETGID,           CAP_SETUID,
    CAP_SETFCAP, CAP_SETPCAP,      CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
    CAP_KILL,    CAP_AUDIT_WRITE,
};

/* Refused with EPERM. Names libseccomp does not know on this architecture
 * are skipped. */
static const char *const denied[] = {
    /* mounts and namespaces */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "fsconfig",
    "mount_setattr",
    "unshare",
    "setns",
    /* kernel keyring, BPF, perf, io_uring */
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    /* kernel modules, reboot, kexec, swap, accounting, quota, log */
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "nfsservctl",
    "lookup_dcookie",
    "_sysctl",
    "sysfs",
    "ustat",
    "uselib",
    "vhangup",
    /* clocks */
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_settime64",
    "clock_adjtime",
    "clock_adjtime64",
    "adjtimex",
    /* raw hardware and process introspection beyond ptrace's own checks */
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    "open_by_handle_at",
    "name_to_handle_at",
    "userfaultfd",
    "kcmp",
    "fanotify_init",
    "move_pages",
    "migrate_pages",
};

/* Namespace flags that clone() may not carry. */
static const unsigned long ns_flags[] = {CLONE_NEWNS,     CLONE_NEWUTS, CLONE_NEWIPC,
                                         CLONE_NEWUSER,   CLONE_NEWPID, CLONE_NEWNET,
                                         CLONE_NEWCGROUP, CLONE_NEWTIME};

static bool kept(int cap)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(keep_caps); i++)
        if (keep_caps[i] == cap)
            return true;
    return false;
}

static int last_cap(void)
{
    FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
    int n = CAP_LAST_CAP;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = CAP_LAST_CAP;
        fclose(f);
    }
    return n;
}

static int drop_caps(struct osb_err *err)
{
    int last = last_cap();
    for (int c = 0; c <= last; c++)
        if (!kept(c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            return osb_err_sys(err, "drop capability %d from the bounding set", c);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return osb_err_sys(err, "clear ambient capabilities");
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2] = {{0}};
    for (size_t i = 0; i < OSB_ARRAY_LEN(keep_caps); i++) {
        int c = keep_caps[i];
        data[c / 32].effective |= 1u << (c % 32);
        data[c / 32].permitted |= 1u << (c % 32);
        data[c / 32].inheritable |= 1u << (c % 32);
    }
    if (syscall(SYS_capset, &hdr, data) < 0)
        return osb_err_sys(err, "set capabilities");
    return 0;
}

static int deny(scmp_filter_ctx ctx, const char *name, struct osb_err *err)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (r < 0 && r != -EDOM)
        return osb_err_set(err, OSB_E_SYS, "seccomp rule for %s: %s", name, strerror(-r));
    return 0;
}

static int add_rules(scmp_filter_ctx ctx, struct osb_err *err)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(denied); i++)
        if (deny(ctx, denied[i], err) < 0)
            return -1;
    int r = 0;
    for (size_t i = 0; i < OSB_ARRAY_LEN(ns_flags) && r == 0; i++)
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
    if (r == 0)
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (r < 0)
        return osb_err_set(err, OSB_E_SYS, "seccomp rules: %s", strerror(-r));
    return 0;
}

/* The compiled filter (libseccomp's output: ~0.7 ms to build, a third of a
 * sandbox's set-up time here) is cached in the state dir, keyed by this
 * binary's identity, and loaded with a plain prctl in the child. */

static int build_filter(int fd, struct osb_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return osb_err_set(err, OSB_E_SYS, "seccomp_init failed");
    int r = 0;
    /* 32-bit and x32 programs run as in Docker; the rules cover them. */
    if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
        r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
        if (r == 0 || r == -EEXIST)
            r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
        if (r == -EEXIST)
            r = 0;
    }
    if (r < 0) {
        seccomp_release(ctx);
        return osb_err_set(err, OSB_E_SYS, "seccomp arch: %s", strerror(-r));
    }
    if (add_rules(ctx, err) < 0) {
        seccomp_release(ctx);
        return -1;
    }
    r = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (r < 0)
        return osb_err_set(err, OSB_E_SYS, "compile the seccomp filter: %s", strerror(-r));
    return 0;
}

/* Reads a whole filter program from fd (at offset 0); -1 if it is not one. */
static int read_filter(int fd, struct sock_fprog *filter)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) ||
        st.st_size > 64 * 1024)
        return -1;
    struct sock_filter *f = malloc((size_t)st.st_size);
    if (!f || pread(fd, f, (size_t)st.st_size, 0) != st.st_size) {
        free(f);
        return -1;
    }
    filter->filter = f;
    filter->len = (unsigned short)(st.st_size / sizeof *f);
    return 0;
}

static void cache_path(const char *state_dir, char *out, size_t n)
{
    struct stat st = {0};
    stat("/proc/self/exe", &st);
    snprintf(out, n, "%s/seccomp-%lx-%lx-%lx.bpf", state_dir, (unsigned long)st.st_ino,
             (unsigned long)st.st_size, (unsigned long)st.st_mtime);
}

int osb_init_seccomp_prepare(const char *state_dir, struct sock_fprog *filter, struct osb_err *err)
{
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    cache_path(state_dir, path, sizeof path);
    _cleanup_close_ int cached = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (cached >= 0 && read_filter(cached, filter) == 0)
        return 0;
    _cleanup_close_ int fd = memfd_create("seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "memfd for the seccomp filter");
    if (build_filter(fd, err) < 0)
        return -1;
    if (read_filter(fd, filter) < 0)
        return osb_err_set(err, OSB_E_INTERNAL, "libseccomp produced no filter");
    /* Best effort: a failed write only means the next sandbox compiles too. */
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    size_t len = filter->len * sizeof *filter->filter;
    if (out >= 0 && write(out, filter->filter, len) == (ssize_t)len && fsync(out) == 0)
        rename(tmp, path);
    else
        unlink(tmp);
    return 0;
}

static int load_seccomp(const struct sock_fprog *filter, struct osb_err *err)
{
    if (!filter || !filter->filter)
        return osb_err_set(err, OSB_E_INTERNAL, "the seccomp filter was not prepared");
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, filter, 0, 0) < 0)
        return osb_err_sys(err, "load the seccomp filter");
    return 0;
}

#ifdef __x86_64__
/* personality(2): Docker allows only PER_LINUX (0), PER_LINUX32 (8), their
 * UNAME26 variants (0x20000, 0x20008) and the 0xffffffff query; other
 * values set flags such as ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC.
 * libseccomp cannot compare one argument twice in a rule, so this is a
 * second, hand-written filter (filters stack; the strictest result wins).
 * The kernel takes the argument as an unsigned int: compare the low word. */
static int load_personality_filter(struct osb_err *err)
{
#define ALLOWED(v, skip) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), (skip), 0)
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 5, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* x86_64 and x32 */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 135, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x40000000 | 135, 4, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* i386 */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 136, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* personality: check the low word of the argument */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        ALLOWED(0x0, 5),
        ALLOWED(0x8, 4),
        ALLOWED(0x20000, 3),
        ALLOWED(0x20008, 2),
        ALLOWED(0xffffffff, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef ALLOWED
    struct sock_fprog prog = {.len = OSB_ARRAY_LEN(f), .filter = f};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
        return osb_err_sys(err, "load the personality filter");
    return 0;
}
#else
static int load_personality_filter(struct osb_err *err)
{
    (void)err;
    return 0;
}
#endif

static int set_rlimits(struct osb_err *err)
{
    /* Raising the hard limit needs CAP_SYS_RESOURCE, which the server may
     * lack itself: stay within what it has. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) < 0)
        return osb_err_sys(err, "read RLIMIT_NOFILE");
    if (nofile.rlim_max == RLIM_INFINITY || nofile.rlim_max > 65536)
        nofile.rlim_max = 65536;
    nofile.rlim_cur = nofile.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
        return osb_err_sys(err, "set RLIMIT_NOFILE");
    return 0;
}

int osb_init_secure(const struct sock_fprog *filter, struct osb_err *err)
{
    if (set_rlimits(err) < 0 || drop_caps(err) < 0)
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return osb_err_sys(err, "set no_new_privs");
    return load_personality_filter(err) < 0 ? -1 : load_seccomp(filter, err);
}
