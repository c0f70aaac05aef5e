/* The sandbox's user namespace (spec userns_first != 0).
 *
 * The child is cloned into a new user namespace and waits on the sync
 * socket. The parent, still root in the host's namespace, writes its
 * uid_map/gid_map (0..65535 inside -> the sandbox's host range) and makes
 * the mounts only it may make, sending each to the child as a detached
 * mount fd:
 *   - idmapped clones (MOUNT_ATTR_IDMAP with the child's namespace) of the
 *     image layers, the host image's binds and execd: host root's files
 *     show as root inside, so `ls -l /usr/bin` looks normal and overlayfs
 *     uses them as its lower layers;
 *   - the volumes, resolved beneath their roots and idmapped the same way
 *     (volumes.c);
 *   - a clone of the runtime's sysfs (OSB_INIT_SYSFS_FD), which the child
 *     could not clone from its own user namespace.
 * The child then becomes uid/gid 0 of its namespace and builds the root
 * from those fds (rootfs.c). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "runtime/init/init.h"

static int write_map(pid_t pid, const char *which, int64_t first, struct osb_err *err)
{
    char path[64], line[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, which);
    int n = snprintf(line, sizeof line, "0 %lld %d\n", (long long)first, OSB_USERNS_IDS);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || OSB_RETRY(write(fd, line, (size_t)n)) != n)
        return osb_err_sys(err, "write %s (0 %lld %d)", which, (long long)first, OSB_USERNS_IDS);
    return 0;
}

static int send_fd(int sock, int fd, struct osb_err *err)
{
    char byte = 'm';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    struct cmsghdr *h = CMSG_FIRSTHDR(&msg);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    if (OSB_RETRY(sendmsg(sock, &msg, MSG_NOSIGNAL)) != 1)
        return osb_err_sys(err, "hand a mount to the sandbox");
    return 0;
}

/* A detached, idmapped clone of host path src with attrs, sent. */
static int send_idmapped(int sock, int usernsfd, const char *src, unsigned attrs,
                         struct osb_err *err)
{
    _cleanup_close_ int t = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "clone mount of `%s`", src);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP | attrs, .userns_fd = (uint64_t)usernsfd};
    if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
        return osb_err_sys(err, "idmap the mount of `%s`", src);
    return send_fd(sock, t, err);
}

static int send_sysfs(int sock, struct osb_err *err)
{
    _cleanup_close_ int m = osb_init_sysfs_clone(err);
    return m < 0 ? -1 : send_fd(sock, m, err);
}

static int send_trees(const struct osb_init_spec *s, int sock, int usernsfd, struct osb_err *err)
{
    const unsigned ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    _cleanup_free_ char *lowers = osb_xstrdup(s->lower);
    char *save = NULL;
    for (char *l = strtok_r(lowers, ":", &save); l; l = strtok_r(NULL, ":", &save))
        if (send_idmapped(sock, usernsfd, l, 0, err) < 0)
            return osb_err_wrap(err, "image layer");
    for (size_t i = 0; i < s->n_binds; i++)
        if (send_idmapped(sock, usernsfd, s->binds[i].src, ro, err) < 0)
            return -1;
    if (send_idmapped(sock, usernsfd, s->execd, ro, err) < 0)
        return -1;
    for (size_t i = 0; i < s->n_volumes; i++) {
        _cleanup_close_ int v = osb_init_volume_clone(&s->volumes[i], usernsfd, err);
        if (v < 0 || send_fd(sock, v, err) < 0)
            return -1;
    }
    return send_sysfs(sock, err);
}

int osb_init_userns_setup(const struct osb_init_spec *s, pid_t pid, int sock, struct osb_err *err)
{
    if (write_map(pid, "uid_map", s->userns_first, err) < 0 ||
        write_map(pid, "gid_map", s->userns_first, err) < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    _cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        return osb_err_sys(err, "open the sandbox's user namespace");
    return send_trees(s, sock, ns, err);
}

/* ------------------------------------------------------------ the child */

static int recv_fd(int sock, struct osb_err *err)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    ssize_t n = OSB_RETRY(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC));
    struct cmsghdr *h = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (!h || h->cmsg_type != SCM_RIGHTS || h->cmsg_len != CMSG_LEN(sizeof(int)))
        return osb_err_set(err, OSB_E_INTERNAL, "the helper sent no mount (it failed)");
    int fd;
    memcpy(&fd, CMSG_DATA(h), sizeof fd);
    return fd;
}

static size_t count_lowers(const char *lower)
{
    size_t n = 1;
    for (const char *c = lower; *c; c++)
        n += *c == ':';
    return n;
}

int osb_init_userns_enter(const struct osb_init_spec *s, int sock, struct osb_init_trees *t,
                          struct osb_err *err)
{
    t->n_lower = count_lowers(s->lower);
    t->lower = osb_xcalloc(t->n_lower, sizeof *t->lower);
    t->bind = osb_xcalloc(s->n_binds + 1, sizeof *t->bind);
    t->volume = osb_xcalloc(s->n_volumes + 1, sizeof *t->volume);
    t->sysfs = -1;
    for (size_t i = 0; i < t->n_lower; i++)
        if ((t->lower[i] = recv_fd(sock, err)) < 0)
            return -1;
    for (size_t i = 0; i < s->n_binds; i++)
        if ((t->bind[i] = recv_fd(sock, err)) < 0)
            return -1;
    if ((t->execd = recv_fd(sock, err)) < 0)
        return -1;
    for (size_t i = 0; i < s->n_volumes; i++)
        if ((t->volume[i] = recv_fd(sock, err)) < 0)
            return -1;
    if ((t->sysfs = recv_fd(sock, err)) < 0)
        return -1;
    /* Mapped now: become the namespace's root (from the unmapped host 0). */
    if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0)
        return osb_err_sys(err, "become gid 0 of the user namespace");
    if (setresuid(0, 0, 0) < 0)
        return osb_err_sys(err, "become uid 0 of the user namespace");
    return 0;
}
