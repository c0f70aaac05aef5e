#include "execd/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/sigreset.h"
#include "common/xalloc.h"
#include "execd/envhide.h"
#include "execd/idle.h"
#include "execd/pool.h"
#include "execd/users.h"

extern char **environ;

void osb_execd_raise_nofile(struct osb_execd *x)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    x->orig_nofile = rl;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        x->nofile_raised = true;
}

#define ENV_FILE "/opt/opensandbox/.env"

/* The child runs with CLONE_VM|CLONE_VFORK, as posix_spawn does: the parent
 * sleeps until exec (or _exit) without copying its page tables, and the
 * child reports an exec failure through shared memory. The child makes only
 * plain system calls (raw ones for the ids: glibc's setuid() would signal
 * the parent's threads, its setxid broadcast) and never allocates. */
struct child_args {
    const struct osb_spawn *sp;
    const struct rlimit *nofile; /* NULL: keep execd's */
    const char *path;
    bool idle; /* tail -f /dev/null: exec execd's idle instead (idle.h) */
    char *const *envp;
    gid_t *groups;
    int ngroups;
    volatile int err;
};

static int child_fail(struct child_args *a, int e)
{
    a->err = e;
    _exit(127);
}

static int dup_to(int from, int to)
{
    if (from == to)
        return fcntl(to, F_SETFD, 0);
    return dup2(from, to) < 0 ? -1 : 0;
}

static int child(void *arg)
{
    struct child_args *a = arg;
    const struct osb_spawn *sp = a->sp;
    osb_signals_default();
    /* Children end with execd: in a sandbox its PID namespace does that
     * anyway; outside one (development, tests) nothing else would. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(a, errno);
    if (sp->new_session) {
        if (setsid() < 0)
            child_fail(a, errno);
        if (sp->ctty_fd >= 0 && ioctl(sp->ctty_fd, TIOCSCTTY, 0) < 0)
            child_fail(a, errno);
    } else if (setpgid(0, 0) < 0) {
        child_fail(a, errno);
    }
    if (a->nofile)
        setrlimit(RLIMIT_NOFILE, a->nofile);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    int fds[3] = {sp->stdin_fd, sp->stdout_fd, sp->stderr_fd};
    for (int i = 0; i < 3; i++) {
        int f = fds[i] >= 0 ? fds[i] : devnull;
        if (f < 0 || dup_to(f, i) < 0)
            child_fail(a, f < 0 ? ENOENT : errno);
    }
    if (sp->set_ids && (syscall(SYS_setgroups, (size_t)a->ngroups, a->groups) < 0 ||
                        syscall(SYS_setresgid, sp->gid, sp->gid, sp->gid) < 0 ||
                        syscall(SYS_setresuid, sp->uid, sp->uid, sp->uid) < 0))
        child_fail(a, errno);
    if (sp->cwd && chdir(sp->cwd) < 0)
        child_fail(a, errno);
    if (a->idle) /* on failure, the real tail */
        execve(OSB_EXECD_IDLE_EXE, (char *const *)sp->argv, a->envp);
    execve(a->path, (char *const *)sp->argv, a->envp);
    return child_fail(a, errno);
}

/* argv[0] as a path: searched in execd's PATH, in the parent, so the child
 * makes one execve instead of one per PATH entry. Caller frees. */
static char *resolve(const char *name)
{
    if (strchr(name, '/'))
        return osb_xstrdup(name);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char *cand = osb_xasprintf("%.*s%s%s", (int)n, p, n ? "/" : "", name);
        struct stat st;
        if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 && S_ISREG(st.st_mode))
            return cand;
        free(cand);
        p += n + (p[n] == ':');
    }
    return NULL;
}

#define CHILD_STACK (64 * 1024)

void osb_execd_spawn_default_user(struct osb_execd *x, uid_t uid, gid_t gid)
{
    x->has_default_user = true;
    x->default_uid = uid;
    x->default_gid = gid;
}

pid_t osb_execd_spawn(struct osb_execd *x, const struct osb_spawn *req, struct osb_err *err)
{
    _cleanup_free_ char *path = resolve(req->argv[0]);
    /* idle.h: only where the real tail exists; that process never starts
     * another, so the thread pool can wait. */
    bool idle = path && osb_execd_idle_argv(req->argv) && access(path, X_OK) == 0;
    if (!idle)
        osb_execd_pool_start(x);
    struct osb_spawn with_user;
    const struct osb_spawn *sp = req;
    if (!req->set_ids && x->has_default_user) {
        with_user = *req;
        with_user.set_ids = true;
        with_user.uid = x->default_uid;
        with_user.gid = x->default_gid;
        sp = &with_user;
    }
    gid_t groups[256];
    struct child_args a = {
        .sp = sp, .groups = groups, .nofile = x->nofile_raised ? &x->orig_nofile : NULL};
    if (sp->set_ids)
        a.ngroups = osb_users_groups_of(sp->uid, sp->gid, groups, OSB_ARRAY_LEN(groups));
    if (!path) {
        errno = ENOENT;
        return osb_err_sys(err, "exec %s", sp->argv[0]);
    }
    a.path = path;
    a.idle = idle;
    /* An inherited environment goes through env_build too, so a hidden
     * variable never reaches a child. */
    char **own = sp->envp || !osb_execd_env_hiding(x) ? NULL : osb_execd_env_build(x, NULL);
    a.envp = sp->envp ? (char *const *)sp->envp : own ? own : environ;
    if (!x->child_stack)
        x->child_stack = osb_xmalloc(CHILD_STACK);
    char *stack = x->child_stack;
    /* No handler of ours may run in the child before it resets them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t pid = clone(child, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    int e = errno;
    osb_execd_env_free(own);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        errno = e;
        return osb_err_sys(err, "clone");
    }
    if (a.err) {
        errno = a.err;
        /* The child exited 127; the reaper collects it. */
        return osb_err_sys(err, "exec %s", sp->argv[0]);
    }
    return pid;
}

static void env_set(char ***env, size_t *n, const char *kv, size_t keylen)
{
    for (size_t i = 0; i < *n; i++) {
        if (strncmp((*env)[i], kv, keylen) == 0 && (*env)[i][keylen] == '=') {
            free((*env)[i]);
            (*env)[i] = osb_xstrdup(kv);
            return;
        }
    }
    *env = osb_xrealloc(*env, (*n + 2) * sizeof **env);
    (*env)[(*n)++] = osb_xstrdup(kv);
    (*env)[*n] = NULL;
}

static void env_file(char ***env, size_t *n)
{
    _cleanup_fclose_ FILE *f = fopen(ENV_FILE, "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq || eq == line)
            continue;
        env_set(env, n, line, (size_t)(eq - line));
    }
    free(line);
}

char **osb_execd_env_build(const struct osb_execd *x, json_t *extra)
{
    size_t n = 0;
    char **env = osb_xcalloc(1, sizeof *env);
    for (char **e = environ; *e; e++) {
        char *eq = strchr(*e, '=');
        if (eq && !osb_execd_env_hidden(x, *e, (size_t)(eq - *e)))
            env_set(&env, &n, *e, (size_t)(eq - *e));
    }
    env_file(&env, &n);
    const char *k;
    json_t *v;
    json_object_foreach(extra, k, v)
    {
        if (!json_is_string(v) || !*k || strchr(k, '='))
            continue;
        char *kv = osb_xasprintf("%s=%s", k, json_string_value(v));
        env_set(&env, &n, kv, strlen(k));
        free(kv);
    }
    return env;
}

void osb_execd_env_free(char **env)
{
    if (!env)
        return;
    for (char **e = env; *e; e++)
        free(*e);
    free(env);
}
