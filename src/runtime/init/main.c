/* osb-sandbox-init: builds one sandbox and execs execd as its PID 1.
 *
 * Started by the runtime (src/runtime/runtime.c) with
 *   fd 0: the spec (compact JSON, see spec.h), fd 1: the result pipe,
 *   fd 2: the server's stderr; every other fd is closed here.
 * Writes exactly one result line to fd 1 and exits:
 *   "ok <host pid of PID 1> <its start time (/proc/pid/stat field 22)>\n"
 *   "error <osb_errc> <errno> <message naming the failed step>\n"
 * On error nothing is left behind (cgroups, state dir, processes). If the
 * result cannot be delivered (the server died), the sandbox is torn down
 * too: nobody would know it exists.
 *
 * Steps: read spec -> state dir (record, log, execd's socket) -> cgroups (limits,
 * join) -> clone3(new mount/pid/uts/ipc/net namespaces, and a user namespace
 * if the spec has a range (userns.c), into the v2 cgroup) -> the child builds
 * the root and execs execd (child.c) -> report. */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/version.h"
#include "runtime/init/init.h"

/* The spec is a few KiB; env and entrypoint are bounded by the server. */
#define MAX_SPEC (8 * 1024 * 1024)

/* The cgroup namespace is made by the child (child.c) once it sits in its
 * cgroups: clone3 creates namespaces before CLONE_INTO_CGROUP applies, so
 * a namespace made here would be rooted at the server's v2 cgroup. */
#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET)

static int read_spec(struct osb_init_spec *s, struct osb_err *err)
{
    struct osb_buf b;
    osb_buf_init(&b, MAX_SPEC);
    char chunk[16384];
    for (;;) {
        ssize_t n = OSB_RETRY(read(0, chunk, sizeof chunk));
        if (n < 0) {
            osb_buf_free(&b);
            return osb_err_sys(err, "read the spec");
        }
        if (n == 0)
            break;
        if (osb_buf_add(&b, chunk, (size_t)n) < 0) {
            osb_buf_free(&b);
            return osb_err_set(err, OSB_E_TOOBIG, "spec larger than %d bytes", MAX_SPEC);
        }
    }
    int r = osb_init_spec_decode(b.data, b.len, s, err);
    osb_buf_free(&b);
    return r;
}

static int write_record(int dirfd, const char *name, const char *data, struct osb_err *err)
{
    _cleanup_close_ int fd =
        openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return osb_err_sys(err, "create `%s`", name);
    size_t n = strlen(data);
    if (OSB_RETRY(write(fd, data, n)) != (ssize_t)n)
        return osb_err_sys(err, "write `%s`", name);
    return 0;
}

/* execd's listening socket, bound in the sandbox dir on the host (by a
 * relative name from inside it: the dir's path may be too long for
 * sun_path). Only root reaches it (the dir is 0700); the sandbox never sees
 * the dir, so it can neither replace the socket nor point it elsewhere. */
static int bind_ctl_socket(int dirfd, struct osb_err *err)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return osb_err_sys(err, "create execd's socket");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", OSB_SANDBOX_CTL_SOCK);
    mode_t old = umask(0077);
    int r = fchdir(dirfd) == 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
                    listen(fd, 1024) == 0
                ? 0
                : osb_err_sys(err, "bind execd's socket `%s`", OSB_SANDBOX_CTL_SOCK);
    umask(old);
    if (chdir("/") < 0 && r == 0)
        r = osb_err_sys(err, "chdir /");
    if (r < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The sandbox dir records what the runtime needs later even after a
 * server restart: which cgroups to kill and which image is in use. It
 * also holds the log (created empty: only the server writes it) and
 * execd's socket (*listenfd). */
static int make_state_dir(const struct osb_init_spec *s, int *listenfd, struct osb_err *err)
{
    if (mkdir(s->dir, 0700) < 0) {
        if (errno == EEXIST)
            return osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` already exists", s->id);
        return osb_err_sys(err, "create state dir `%s`", s->dir);
    }
    _cleanup_close_ int d = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (d < 0)
        return osb_err_sys(err, "open state dir `%s`", s->dir);
    struct osb_buf rec;
    osb_buf_init(&rec, 1 << 20);
    int r = osb_buf_addf(&rec, "image %s\n", s->image);
    for (size_t i = 0; i < s->n_cgroups; i++)
        r |= osb_buf_addf(&rec, "%s %s\n", osb_cg_role_name(s->cgroups[i].role), s->cgroups[i].dir);
    if (r < 0)
        r = osb_err_set(err, OSB_E_INVALID, "sandbox record exceeds %zu bytes", rec.max);
    else
        r = write_record(d, OSB_SANDBOX_RECORD, rec.data, err);
    osb_buf_free(&rec);
    if (r < 0 || write_record(d, OSB_SANDBOX_LOG, "", err) < 0)
        return -1;
    if (s->userns_first) {
        char line[64];
        snprintf(line, sizeof line, "%lld %d\n", (long long)s->userns_first, OSB_USERNS_IDS);
        if (write_record(d, OSB_SANDBOX_USERNS, line, err) < 0)
            return -1;
    }
    *listenfd = bind_ctl_socket(d, err);
    return *listenfd < 0 ? -1 : 0;
}

static void remove_state_dir(const struct osb_init_spec *s)
{
    _cleanup_close_ int d = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (d < 0)
        return;
    unlinkat(d, OSB_SANDBOX_LOG, 0);
    unlinkat(d, OSB_SANDBOX_RECORD, 0);
    unlinkat(d, OSB_SANDBOX_USERNS, 0);
    unlinkat(d, OSB_SANDBOX_CTL_SOCK, 0);
    rmdir(s->dir);
}

/* Field 22 of /proc/<pid>/stat; the comm field (2) may hold spaces and
 * parentheses, so parse after the last ')'. */
static uint64_t start_time_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Reads the child's error report; EOF without data means execve worked
 * (the pipe is close-on-exec). */
static int wait_exec(int rfd, struct osb_err *err)
{
    char msg[sizeof err->msg];
    size_t len = 0;
    for (;;) {
        ssize_t n = OSB_RETRY(read(rfd, msg + len, sizeof msg - 1 - len));
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof msg - 1)
            break;
    }
    if (len == 0)
        return 0;
    msg[len] = '\0';
    /* "errno|message" */
    char *bar = strchr(msg, '|');
    int e = bar ? (int)strtol(msg, NULL, 10) : 0;
    osb_err_set(err, OSB_E_SYS, "%s", bar ? bar + 1 : msg);
    err->sys_errno = e;
    return -1;
}

/* fork-like clone3 (no new stack): the child continues in a copy of this
 * single-threaded process, born in the v2 cgroup if there is one. */
static pid_t clone_ns(int v2fd, bool own_net, bool userns)
{
    /* A network slot is joined by this helper (setns) before the clone. */
    uint64_t flags = own_net ? NS_FLAGS : (NS_FLAGS & ~(uint64_t)CLONE_NEWNET);
    if (userns)
        flags |= CLONE_NEWUSER;
    struct clone_args a = {.flags = flags, .exit_signal = SIGCHLD};
    if (v2fd >= 0) {
        a.flags |= CLONE_INTO_CGROUP;
        a.cgroup = (uint64_t)v2fd;
    }
    pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof a);
    if (pid < 0 && errno == ENOSYS && v2fd < 0)
        pid = (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, 0);
    return pid;
}

/* execd writes a byte to the ready pipe once it listens; EOF first means it
 * died (its log says why). Waiting here means the server's first /ping
 * succeeds instead of polling for the socket. */
#define READY_TIMEOUT_MS 10000

static int wait_ready(int rfd, struct osb_err *err)
{
    struct pollfd pfd = {.fd = rfd, .events = POLLIN};
    int r = (int)OSB_RETRY(poll(&pfd, 1, READY_TIMEOUT_MS));
    if (r == 0)
        return osb_err_set(err, OSB_E_INTERNAL, "execd did not start listening within %d ms",
                           READY_TIMEOUT_MS);
    char c;
    if (r < 0 || OSB_RETRY(read(rfd, &c, 1)) != 1)
        return osb_err_set(err, OSB_E_INTERNAL,
                           "execd exited before it was ready (see the sandbox log)");
    return 0;
}

static void close_pair(int p[2])
{
    close(p[0]);
    close(p[1]);
}

/* Error, ready and output pipes; the child gets the output pipe's both
 * ends (stdio and execd's keep slot). */
static int make_pipes(int ep[2], int rp[2], int op[2], struct osb_err *err)
{
    if (pipe2(ep, O_CLOEXEC) < 0)
        return osb_err_sys(err, "create the error pipe");
    if (pipe2(rp, O_CLOEXEC) < 0) {
        close_pair(ep);
        return osb_err_sys(err, "create the ready pipe");
    }
    if (pipe2(op, O_CLOEXEC) < 0) {
        close_pair(ep);
        close_pair(rp);
        return osb_err_sys(err, "create the output pipe");
    }
    return 0;
}

/* With a user namespace: the sync socket; sp[] stays -1 without. */
static int make_sync(const struct osb_init_spec *s, int sp[2], struct osb_err *err)
{
    sp[0] = sp[1] = -1;
    if (s->userns_first && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
        return osb_err_sys(err, "create the sync socket");
    return 0;
}

static void close_sync(int sp[2])
{
    if (sp[0] >= 0)
        close_pair(sp);
    sp[0] = sp[1] = -1;
}

static pid_t start_child(const struct osb_init_spec *s, int listenfd, int v2fd,
                         const struct sock_fprog *filter, struct osb_err *err)
{
    int p[2], rp[2], op[2], sp[2];
    if (make_sync(s, sp, err) < 0)
        return -1;
    if (make_pipes(p, rp, op, err) < 0) {
        close_sync(sp);
        return -1;
    }
    /* The output pipe is PID 1's stdout and stderr, which programs reopen
     * (/dev/stdout, /proc/self/fd/1): owned by host root it would be
     * nobody's in a user namespace, and root inside could not. Owned by
     * the range's first id it is root's inside, as it is without one. */
    if (s->userns_first && fchown(op[0], (uid_t)s->userns_first, (gid_t)s->userns_first) < 0) {
        osb_err_sys(err, "hand the output pipe to the sandbox's root");
        close_sync(sp);
        close_pair(p);
        close_pair(rp);
        close_pair(op);
        return -1;
    }
    pid_t pid = clone_ns(v2fd, s->netns == NULL, s->userns_first != 0);
    osb_init_trace(pid == 0 ? "child: cloned" : "parent: cloned");
    if (pid < 0) {
        osb_err_sys(err, "clone new namespaces");
        close_sync(sp);
        close_pair(p);
        close_pair(rp);
        close_pair(op);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        close(rp[0]);
        if (v2fd >= 0)
            close(v2fd);
        if (sp[0] >= 0)
            close(sp[0]);
        struct osb_init_fds fds = {.sync = sp[1],
                                   .out = op[1],
                                   .out_keep = op[0],
                                   .listen = listenfd,
                                   .err = p[1],
                                   .ready = rp[1]};
        osb_init_child(s, &fds, filter);
    }
    close(p[1]);
    close(rp[1]);
    close_pair(op);
    int r = sp[0] >= 0 ? osb_init_userns_setup(s, pid, sp[0], err) : 0;
    close_sync(sp);
    if (r == 0)
        r = wait_exec(p[0], err);
    close(p[0]);
    if (r == 0)
        r = wait_ready(rp[0], err);
    close(rp[0]);
    if (r < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static int report(const char *line)
{
    size_t n = strlen(line);
    return OSB_RETRY(write(1, line, n)) == (ssize_t)n ? 0 : -1;
}

static void report_error(const struct osb_err *err)
{
    char line[sizeof err->msg + 64];
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    for (char *c = msg; *c; c++)
        if (*c == '\n')
            *c = ' ';
    snprintf(line, sizeof line, "error %d %d %s\n", (int)err->code, err->sys_errno, msg);
    report(line);
}

#define BACKGROUND_NICE 19

/* Only fds 0-2 and the runtime's sysfs survive: the server's other
 * descriptors must never reach a sandbox (the sysfs, close-on-exec, does
 * not either). */
static void close_extra_fds(void)
{
    fcntl(OSB_INIT_SYSFS_FD, F_SETFD, FD_CLOEXEC);
    if (syscall(SYS_close_range, OSB_INIT_SYSFS_FD + 1U, ~0U, 0U) == 0)
        return;
    for (int fd = OSB_INIT_SYSFS_FD + 1; fd < 1024; fd++)
        close(fd);
}

/* <state>/sandboxes/<id> -> <state> */
static int prepare_seccomp(const struct osb_init_spec *s, struct sock_fprog *filter,
                           struct osb_err *err)
{
    char state[PATH_MAX];
    snprintf(state, sizeof state, "%s", s->dir);
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(state, '/');
        if (!slash || slash == state)
            return osb_err_set(err, OSB_E_INVALID, "bad sandbox dir `%s`", s->dir);
        *slash = '\0';
    }
    return osb_init_seccomp_prepare(state, filter, err);
}

/* The sandbox's network: a pre-built slot (netns pinned by the server). */
static int join_netns(const char *path, struct osb_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open network namespace `%s`", path);
    if (setns(fd, CLONE_NEWNET) < 0)
        return osb_err_sys(err, "join network namespace `%s`", path);
    return 0;
}

static int build(struct osb_init_spec *s, const struct sock_fprog *filter, pid_t *pid,
                 struct osb_err *err)
{
    _cleanup_close_ int listenfd = -1;
    if (make_state_dir(s, &listenfd, err) < 0) {
        if (err->code != OSB_E_EXISTS)
            remove_state_dir(s);
        return -1;
    }
    osb_init_trace("state dir");
    _cleanup_close_ int v2fd = -1;
    if (osb_init_cgroups_enter(s, &v2fd, err) < 0) {
        remove_state_dir(s);
        return -1;
    }
    osb_init_trace("cgroups");
    if (s->netns && join_netns(s->netns, err) < 0) {
        osb_init_cgroups_leave(s, true);
        remove_state_dir(s);
        return -1;
    }
    *pid = start_child(s, listenfd, v2fd, filter, err);
    osb_init_trace("child exec'd");
    if (*pid < 0) {
        osb_init_cgroups_leave(s, true);
        remove_state_dir(s);
        return -1;
    }
    osb_init_cgroups_leave(s, false);
    osb_init_trace("left cgroups");
    return 0;
}

/* The filter is the parent's copy: the child has its own (clone without
 * CLONE_VM) and has exec'd, with the filter installed, by the time build
 * returns. */
static int create(struct osb_init_spec *s, pid_t *pid, struct osb_err *err)
{
    struct sock_fprog filter = {0};
    if (prepare_seccomp(s, &filter, err) < 0)
        return -1;
    osb_init_trace("seccomp ready");
    int rc = build(s, &filter, pid, err);
    free(filter.filter);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("osb-sandbox-init %s\n", osb_version());
        return 0;
    }
    struct osb_err err = {0};
    struct osb_init_spec s;
    osb_init_trace("start");
    signal(SIGPIPE, SIG_IGN);
    close_extra_fds();
    if (read_spec(&s, &err) < 0) {
        report_error(&err);
        return 1;
    }
    /* The helper, its kernel work and the new sandbox inherit it: a pool's
     * refill gives the CPU to claims and to other creates. */
    if (s.background)
        setpriority(PRIO_PROCESS, 0, BACKGROUND_NICE);
    pid_t pid;
    if (create(&s, &pid, &err) < 0) {
        report_error(&err);
        osb_init_spec_free(&s);
        return 1;
    }
    char line[128];
    snprintf(line, sizeof line, "ok %d %" PRIu64 "\n", (int)pid, start_time_of(pid));
    if (report(line) < 0) {
        /* Nobody will ever learn about this sandbox: take it down. */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        osb_init_cgroups_leave(&s, true);
        remove_state_dir(&s);
        osb_init_spec_free(&s);
        return 1;
    }
    osb_init_spec_free(&s);
    return 0;
}
