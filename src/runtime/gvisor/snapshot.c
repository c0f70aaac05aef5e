/* Snapshots: pause the sandbox (runsc pause), take a descriptor of its
 * writable layer, copy it on the thread pool with the caller's function,
 * resume. The layer's tmpfs is mounted only in the gofer's namespace,
 * beneath execd's binary directory (mounts.c); a short-lived child enters
 * that namespace and the gofer's root (setns alone leaves it at the
 * namespace's root, above the gofer's pivoted one), unshares a private
 * copy of it, lifts the bind of execd's directory that covers the tmpfs
 * there (the gofer's own mounts stay as they are) and
 * passes the upper dir back over a socketpair (SCM_RIGHTS). The copy is
 * put into the native backend's one layer form (../idshift.h; ids are
 * as inside already: the Sentry has no user namespace on the host). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fstree.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/gvisor/state.h"
#include "runtime/idshift.h"

struct gv_snap {
    uv_work_t work;
    struct osb_gv *rt;
    char id[OSB_RT_ID_MAX + 1];
    int upper;
    char *dst;
    osb_rt_copy_fn copy;
    int rc;
    struct osb_err err;
    osb_rt_snapshot_cb cb;
    void *ud;
};

/* The gofer's pid from runsc's record of the container. */
static pid_t gofer_pid(const struct osb_gv *rt, const char *id)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s_sandbox:%s.state", rt->root_dir, id, id);
    json_t *st = json_load_file(path, 0, NULL);
    json_t *p = st ? json_object_get(st, "goferPid") : NULL;
    pid_t pid = json_is_integer(p) ? (pid_t)json_integer_value(p) : 0;
    json_decref(st);
    return pid;
}

/* The gofer's mount namespace and root (*root), checked to be this
 * sandbox's gofer: a pidfd pins the process while they are opened. */
static int gofer_ns(const struct osb_gv *rt, const char *id, int *root, struct osb_err *err)
{
    pid_t pid = gofer_pid(rt, id);
    _cleanup_close_ int pfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
    char p[64], cmd[4096], dir[PATH_MAX];
    snprintf(p, sizeof p, "/proc/%d/cmdline", (int)pid);
    ssize_t n = pfd >= 0 ? osb_fs_read(p, cmd, sizeof cmd - 1) : -1;
    osb_gv_dir(rt, id, dir, sizeof dir);
    bool ours = n > 0 && strcmp(cmd, "runsc-gofer") == 0;
    for (ssize_t i = 0; ours && i < n; i++)
        cmd[i] = cmd[i] ? cmd[i] : ' ';
    if (ours) {
        cmd[n] = '\0';
        char want[PATH_MAX + 16];
        snprintf(want, sizeof want, "--bundle %s ", dir);
        ours = strstr(cmd, want) != NULL;
    }
    if (!ours)
        return osb_err_set(err, OSB_E_INTERNAL, "sandbox `%s`: its runsc gofer is not running", id);
    snprintf(p, sizeof p, "/proc/%d/ns/mnt", (int)pid);
    int ns = open(p, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        return osb_err_sys(err, "sandbox `%s`: open the gofer's mount namespace", id);
    snprintf(p, sizeof p, "/proc/%d/root", (int)pid);
    *root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*root < 0 || syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) < 0) {
        if (*root >= 0)
            close(*root);
        close(ns);
        return osb_err_set(err, OSB_E_INTERNAL, "sandbox `%s`: its runsc gofer exited", id);
    }
    return ns;
}

static int send_fd(int sock, int fd)
{
    char c = 0, ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {&c, 1};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char c, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&c, 1};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    if (OSB_RETRY(recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) != 1)
        return -1;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    int fd = -1;
    if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(h), sizeof fd);
    return fd;
}

/* The forked child (system calls only): in a private copy of the gofer's
 * namespace, lift what covers the layer's tmpfs (execd's directory: it
 * holds execd), open its upper dir, send it. */
static void child_take(int ns, int root, int sock)
{
    if (setns(ns, CLONE_NEWNS) < 0 || fchdir(root) < 0 || chroot(".") < 0 ||
        unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        _exit(1);
    struct stat st;
    for (int i = 0;
         i < 8 && fstatat(AT_FDCWD, OSB_GV_BIN_DIR "/execd", &st, AT_SYMLINK_NOFOLLOW) == 0; i++)
        if (umount2(OSB_GV_BIN_DIR, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
            _exit(2);
    struct statfs sf;
    int fd = open(OSB_GV_BIN_DIR "/upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC ||
        fstatat(AT_FDCWD, OSB_GV_BIN_DIR "/work", &st, AT_SYMLINK_NOFOLLOW) < 0)
        _exit(3);
    _exit(send_fd(sock, fd) < 0 ? 4 : 0);
}

static int take_upper(const struct osb_gv *rt, const char *id, struct osb_err *err)
{
    _cleanup_close_ int root = -1;
    _cleanup_close_ int ns = gofer_ns(rt, id, &root, err);
    if (ns < 0)
        return -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return osb_err_sys(err, "socketpair");
    pid_t pid = fork();
    if (pid == 0)
        child_take(ns, root, sv[1]);
    close(sv[1]);
    int fd = pid > 0 ? recv_fd(sv[0]) : -1;
    close(sv[0]);
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (fd < 0)
        return osb_err_set(err, OSB_E_INTERNAL,
                           "sandbox `%s`: cannot reach its writable layer in the gofer's "
                           "namespace (step %d)",
                           id,
                           pid < 0         ? -1
                           : WIFEXITED(st) ? WEXITSTATUS(st)
                                           : 128);
    return fd;
}

static void snap_work(uv_work_t *w)
{
    struct gv_snap *sn = w->data;
    sn->rc = sn->copy(sn->upper, sn->dst, &sn->err);
    /* The layer's form every mode restores from: the overlay marks also
     * under user.overlay.* for a native sandbox in a user namespace. */
    if (sn->rc == 0)
        sn->rc = osb_idshift_layer(sn->dst, 0, &sn->err);
}

static void snap_done(uv_work_t *w, int status)
{
    struct gv_snap *sn = w->data;
    struct osb_gv *rt = sn->rt;
    close(sn->upper);
    if (status < 0 && sn->rc == 0)
        sn->rc = osb_err_set(&sn->err, OSB_E_INTERNAL, "snapshot of `%s` cancelled", sn->id);
    struct osb_err e = {0};
    /* The sandbox may be gone meanwhile: resuming it then fails harmlessly. */
    if (!rt->closing && osb_rt_resume(&rt->base, sn->id, &e) < 0)
        osb_debug("snapshot of sandbox %s: not resumed (%s)", sn->id, e.msg);
    rt->open_handles--;
    if (!rt->closing)
        sn->cb(sn->ud, sn->rc < 0 ? &sn->err : NULL);
    free(sn->dst);
    free(sn);
    osb_gv_maybe_free(rt);
}

int osb_gv_snapshot(struct osb_rt *base, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                    struct osb_err *err)
{
    (void)h;
    struct osb_gv *rt = osb_gv_of(base);
    char status[32];
    pid_t pid;
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    if (osb_gv_check_id(id, err) < 0 || osb_gv_state(rt, id, &pid, status, sizeof status, err) < 0)
        return -1;
    /* The server snapshots Running sandboxes only (a Paused one is refused). */
    if (strcmp(status, "running") != 0)
        return osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` is not running (%s)", id, status);
    if (osb_rt_pause(base, id, err) < 0)
        return -1;
    int upper = take_upper(rt, id, err);
    if (upper < 0) {
        struct osb_err e = {0};
        if (osb_rt_resume(base, id, &e) < 0)
            osb_warn("sandbox %s: not resumed after a failed snapshot: %s", id, e.msg);
        return -1;
    }
    struct gv_snap *sn = osb_xcalloc(1, sizeof *sn);
    sn->rt = rt;
    snprintf(sn->id, sizeof sn->id, "%s", id);
    sn->upper = upper;
    sn->dst = osb_xstrdup(dst_dir);
    sn->copy = copy;
    sn->cb = cb;
    sn->ud = ud;
    sn->work.data = sn;
    rt->open_handles++;
    uv_queue_work(rt->loop, &sn->work, snap_work, snap_done);
    return 0;
}
