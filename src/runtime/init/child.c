/* The sandbox's PID 1 before it becomes execd: a checklist of steps, each
 * a call and an early exit that names the step on the error pipe. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/sigreset.h"
#include "common/xalloc.h"
#include "runtime/init/init.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static __attribute__((noreturn)) void fail(int errfd, const struct osb_err *err)
{
    char line[sizeof err->msg + 32];
    int n = snprintf(line, sizeof line, "%d|%s", err->sys_errno, err->msg);
    if (n > 0) {
        ssize_t w = write(errfd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
    _exit(127);
}

/* The new network namespace has only lo, and it starts down. */
static int loopback_up(struct osb_err *err)
{
    _cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return osb_err_sys(err, "socket for lo");
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        return osb_err_sys(err, "read lo flags");
    /* A network slot's is up already, and its namespace may not be ours
     * to change (a user namespace). */
    if (ifr.ifr_flags & IFF_UP)
        return 0;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        return osb_err_sys(err, "bring lo up");
    return 0;
}

/* stdin from /dev/null, stdout and stderr into the output pipe the server
 * drains into the bounded log: no descriptor of a host file reaches the
 * sandbox. The pipe's read end and execd's listening socket go to their
 * fixed slots (dup2 clears close-on-exec: execd sets it again). */
static int setup_fds(const struct osb_init_fds *fds, struct osb_err *err)
{
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0)
        return osb_err_sys(err, "open /dev/null");
    if (dup2(nul, 0) < 0 || dup2(fds->out, 1) < 0 || dup2(fds->out, 2) < 0)
        return osb_err_sys(err, "set up stdio");
    close(nul);
    if (dup2(fds->out_keep, OSB_SANDBOX_LOG_FD) < 0 || dup2(fds->listen, OSB_SANDBOX_LISTEN_FD) < 0)
        return osb_err_sys(err, "hand the output pipe and the socket to execd");
    return 0;
}

static bool has_key(char **env, const char *key)
{
    size_t k = strlen(key);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], key, k) == 0 && env[i][k] == '=')
            return true;
    return false;
}

/* The spec's env, then defaults the entrypoint expects (as Docker sets
 * them), then the token execd takes out of its own environment. */
static char **build_env(const struct osb_init_spec *s)
{
    size_t n = 0;
    while (s->env[n])
        n++;
    char **env = osb_xcalloc(n + 5, sizeof *env);
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(s->env[i], "EXECD_ACCESS_TOKEN=", 19) != 0)
            env[j++] = s->env[i];
    if (!has_key(env, "PATH"))
        env[j++] = "PATH=" DEFAULT_PATH;
    if (!has_key(env, "HOSTNAME"))
        env[j++] = osb_xasprintf("HOSTNAME=%s", s->hostname);
    if (!has_key(env, "HOME"))
        env[j++] = "HOME=/root";
    env[j++] = osb_xasprintf("EXECD_ACCESS_TOKEN=%s", s->token);
    return env;
}

static char **build_argv(const struct osb_init_spec *s, int readyfd)
{
    size_t n = 0;
    while (s->entrypoint[n])
        n++;
    char **argv = osb_xcalloc(n + 21, sizeof *argv);
    static char fdnum[16], layerfd[16], logfd[16], listenfd[16], reportfd[16];
    snprintf(reportfd, sizeof reportfd, "%d", OSB_SANDBOX_REPORT_FD);
    snprintf(fdnum, sizeof fdnum, "%d", readyfd);
    snprintf(layerfd, sizeof layerfd, "%d", OSB_SANDBOX_LAYER_FD);
    snprintf(logfd, sizeof logfd, "%d", OSB_SANDBOX_LOG_FD);
    snprintf(listenfd, sizeof listenfd, "%d", OSB_SANDBOX_LISTEN_FD);
    size_t j = 0;
    argv[j++] = OSB_SANDBOX_EXECD;
    argv[j++] = "--port";
    argv[j++] = OSB_EXECD_PORT;
    argv[j++] = "--listen-fd";
    argv[j++] = listenfd;
    argv[j++] = "--ready-fd";
    argv[j++] = fdnum;
    argv[j++] = "--keep-fd";
    argv[j++] = layerfd;
    argv[j++] = "--keep-fd";
    argv[j++] = logfd;
    if (!s->keep_running) {
        argv[j++] = "--report-fd";
        argv[j++] = reportfd;
    }
    if (s->workdir) {
        argv[j++] = "--workdir";
        argv[j++] = s->workdir;
    }
    if (s->user) {
        argv[j++] = "--user";
        argv[j++] = s->user;
    }
    argv[j++] = "--";
    for (size_t i = 0; i < n; i++)
        argv[j++] = s->entrypoint[i];
    return argv;
}

void osb_init_child(const struct osb_init_spec *s, const struct osb_init_fds *fds,
                    const struct sock_fprog *filter)
{
    struct osb_err err = {0};
    int errfd = fds->err, readyfd = fds->ready;
    int rootfd = -1, layerfd = -1;
    osb_signals_default();
    if (setsid() < 0)
        osb_err_sys(&err, "setsid"), fail(errfd, &err);
    /* Opened here, in our mount namespace (a descriptor from the parent
     * names the host's mount), and before we become the user namespace's
     * root, who may not walk the host's root-only state dirs. */
    int dirfd = open(s->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        osb_err_sys(&err, "open the sandbox dir"), fail(errfd, &err);
    struct osb_init_trees trees = {.execd = -1, .sysfs = -1};
    if (fds->sync >= 0 && osb_init_userns_enter(s, fds->sync, &trees, &err) < 0)
        fail(errfd, &err);
    if (fds->sync < 0 && (trees.sysfs = osb_init_sysfs_clone(&err)) < 0)
        fail(errfd, &err);
    /* The views of its cgroups, while their host paths still show. */
    struct osb_init_cgviews cg;
    osb_init_cgviews_clone(&cg);
    /* Rooted at the sandbox's own cgroups: /proc/self/cgroup shows "/". */
    if (unshare(CLONE_NEWCGROUP) < 0)
        osb_err_sys(&err, "new cgroup namespace"), fail(errfd, &err);
    struct osb_init_layerdirs ld = {-1, -1};
    if (osb_init_rootfs_prepare(s, dirfd, &trees, &cg, &rootfd, &layerfd, &ld, &err) < 0)
        fail(errfd, &err);
    close(dirfd);
    /* Kept open across exec for execd to hold (see OSB_SANDBOX_LAYER_FD). */
    if (dup2(layerfd, OSB_SANDBOX_LAYER_FD) < 0)
        osb_err_sys(&err, "keep the writable layer's fd"), fail(errfd, &err);
    close(layerfd);
    osb_init_trace("child: root prepared");
    /* Volume sources are opened on the host, so before pivot_root (in a
     * user namespace the parent did, idmapped). */
    int *vfds = trees.volume;
    if (!vfds) {
        vfds = osb_xcalloc(s->n_volumes + 1, sizeof *vfds);
        if (osb_init_volumes_open(s, vfds, &err) < 0)
            fail(errfd, &err);
    }
    if (osb_init_rootfs_pivot(rootfd, &err) < 0)
        fail(errfd, &err);
    close(rootfd);
    osb_init_trace("child: pivoted");
    if (osb_init_rootfs_finish(s, &cg, &ld, &err) < 0 || loopback_up(&err) < 0)
        fail(errfd, &err);
    if (osb_init_volumes_attach(s, vfds, &err) < 0)
        fail(errfd, &err);
    for (size_t i = 0; i < s->n_volumes; i++)
        close(vfds[i]);
    free(vfds);
    osb_init_trace("child: mounts done");
    if (sethostname(s->hostname, strlen(s->hostname)) < 0)
        osb_err_sys(&err, "sethostname"), fail(errfd, &err);
    if (setup_fds(fds, &err) < 0)
        fail(errfd, &err);
    char **env = build_env(s), **argv = build_argv(s, readyfd);
    /* execd writes a byte here once it listens, and closes it. */
    if (fcntl(readyfd, F_SETFD, 0) < 0)
        osb_err_sys(&err, "ready pipe"), fail(errfd, &err);
    if (osb_init_secure(filter, &err) < 0)
        fail(errfd, &err);
    osb_init_trace("child: secured");
    execve(argv[0], argv, env);
    osb_err_sys(&err, "exec %s", argv[0]);
    fail(errfd, &err);
}
