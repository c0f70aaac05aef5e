#include "runtime/native/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/sigreset.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

extern char **environ;

/* Descriptors the child takes go here first, above every target. */
#define HIGH_FD 64

struct args {
    const char *path;
    const struct osb_nat_fdmap *map;
    size_t n;
    pid_t parent;
    volatile int err; /* errno of the failing step; the child then exits */
};

static int fail(struct args *a)
{
    a->err = errno ? errno : EIO;
    _exit(127);
}

/* Runs on the parent's memory (CLONE_VM, parent suspended): raw system
 * calls only, no allocation. */
static int child(void *arg)
{
    struct args *a = arg;
    osb_signals_default();
    if (setsid() < 0 || syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE) < 0)
        return fail(a);
    int pidfd = (int)syscall(SYS_pidfd_open, a->parent, 0);
    if (pidfd < 0 || fcntl(pidfd, F_DUPFD_CLOEXEC, HIGH_FD + (int)a->n) < 0)
        return fail(a);
    close(pidfd);
    pidfd = HIGH_FD + (int)a->n;
    for (size_t i = 0; i < a->n; i++) {
        int fd = (int)syscall(SYS_pidfd_getfd, pidfd, a->map[i].from, 0);
        if (fd < 0 || dup2(fd, HIGH_FD + (int)i) < 0)
            return fail(a);
        close(fd);
    }
    for (size_t i = 0; i < a->n; i++)
        if (dup2(HIGH_FD + (int)i, a->map[i].to) < 0)
            return fail(a);
    syscall(SYS_close_range, (unsigned)HIGH_FD, ~0U, 0U);
    char *argv[] = {(char *)a->path, NULL};
    execve(a->path, argv, environ);
    return fail(a);
}

pid_t osb_nat_spawn(const char *path, const struct osb_nat_fdmap *map, size_t n, char *stack,
                    struct osb_err *err)
{
    struct args a = {.path = path, .map = map, .n = n, .parent = getpid()};
    for (size_t i = 0; i < n; i++)
        if (map[i].to < 0 || map[i].to >= HIGH_FD)
            return osb_err_set(err, OSB_E_INTERNAL, "spawn: descriptor %d out of range", map[i].to);
    /* No handler of ours may run in the child before it resets them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = clone(child, stack + OSB_NAT_SPAWN_STACK,
                      CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &a);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        errno = e;
        return osb_err_sys(err, "start `%s`", path);
    }
    if (a.err) {
        waitpid(pid, NULL, 0); /* it has exited (127) */
        errno = a.err;
        return osb_err_sys(err, "start `%s`", path);
    }
    return pid;
}
