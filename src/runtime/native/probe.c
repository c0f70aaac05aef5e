/* The user namespace probe (probe.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/spec.h"
#include "runtime/native/probe.h"

static int write_map(pid_t pid, const char *which, uint32_t first, struct osb_err *err)
{
    char path[64], line[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, which);
    int n = snprintf(line, sizeof line, "0 %u %d\n", first, OSB_USERNS_IDS);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || OSB_RETRY(write(fd, line, (size_t)n)) != n)
        return osb_err_sys(err, "write the %s of a new user namespace", which);
    return 0;
}

static int idmap(const char *path, int usernsfd, struct osb_err *err)
{
    _cleanup_close_ int t = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "clone the mount of `%s`", path);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)usernsfd};
    if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
        return osb_err_sys(err, "an idmapped mount of `%s` (its filesystem may not support them)",
                           path);
    return 0;
}

/* The child only waits for the pipe's EOF: async-signal-safe calls alone,
 * as the server may have threads. */
static pid_t clone_waiter(int rfd, int wfd)
{
    pid_t pid =
        (pid_t)syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, 0);
    if (pid == 0) {
        close(wfd);
        char c;
        while (read(rfd, &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    return pid;
}

static int probe_child(pid_t pid, const char *const *paths, uint32_t first, struct osb_err *err)
{
    if (write_map(pid, "uid_map", first, err) < 0 || write_map(pid, "gid_map", first, err) < 0)
        return -1;
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/user", (int)pid);
    _cleanup_close_ int fd = open(ns, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open a new user namespace");
    for (size_t i = 0; paths[i]; i++)
        if (idmap(paths[i], fd, err) < 0)
            return -1;
    return 0;
}

int osb_userns_probe(const char *const *paths, uint32_t first, struct osb_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    pid_t pid = clone_waiter(p[0], p[1]);
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return osb_err_sys(err, "create a user namespace");
    }
    int r = probe_child(pid, paths, first, err);
    close(p[1]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return r;
}
