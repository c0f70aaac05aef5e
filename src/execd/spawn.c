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
#include <sys/resource.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "execd/users.h"

extern char **environ;

static struct rlimit orig_nofile;
static bool nofile_raised;

void osb_execd_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    orig_nofile = rl;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        nofile_raised = true;
}

#define ENV_FILE "/opt/opensandbox/.env"

/* In the child: report errno through the pipe and exit. */
static void child_fail(int fd, int e)
{
    ssize_t r = write(fd, &e, sizeof e);
    (void)r;
    _exit(127);
}

static int dup_to(int from, int to)
{
    if (from == to)
        return fcntl(to, F_SETFD, 0);
    return dup2(from, to) < 0 ? -1 : 0;
}

static void child(const struct osb_spawn *sp, int errfd, gid_t *groups, int ngroups)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    if (sp->new_session) {
        if (setsid() < 0)
            child_fail(errfd, errno);
        if (sp->ctty_fd >= 0 && ioctl(sp->ctty_fd, TIOCSCTTY, 0) < 0)
            child_fail(errfd, errno);
    } else if (setpgid(0, 0) < 0) {
        child_fail(errfd, errno);
    }
    if (nofile_raised)
        setrlimit(RLIMIT_NOFILE, &orig_nofile);
    int devnull = open("/dev/null", O_RDWR);
    int fds[3] = {sp->stdin_fd, sp->stdout_fd, sp->stderr_fd};
    for (int i = 0; i < 3; i++) {
        int f = fds[i] >= 0 ? fds[i] : devnull;
        if (f < 0 || dup_to(f, i) < 0)
            child_fail(errfd, f < 0 ? ENOENT : errno);
    }
    if (sp->set_ids) {
        if (setgroups((size_t)ngroups, groups) < 0 || setgid(sp->gid) < 0 || setuid(sp->uid) < 0)
            child_fail(errfd, errno);
    }
    if (sp->cwd && chdir(sp->cwd) < 0)
        child_fail(errfd, errno);
    char *const *envp = sp->envp ? (char *const *)sp->envp : environ;
    execvpe(sp->argv[0], (char *const *)sp->argv, envp);
    child_fail(errfd, errno);
}

pid_t osb_execd_spawn(const struct osb_spawn *sp, struct osb_err *err)
{
    gid_t groups[256];
    int ngroups = 0;
    if (sp->set_ids) {
        groups[0] = sp->gid;
        ngroups = osb_users_groups_of(sp->uid, sp->gid, groups, OSB_ARRAY_LEN(groups));
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return osb_err_sys(err, "fork");
    }
    if (pid == 0) {
        close(p[0]);
        child(sp, p[1], groups, ngroups);
    }
    close(p[1]);
    int e = 0;
    ssize_t n = OSB_RETRY(read(p[0], &e, sizeof e));
    close(p[0]);
    if (n == (ssize_t)sizeof e) {
        errno = e;
        /* The child exits 127 right away; the reaper collects it. */
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

char **osb_execd_env_build(json_t *extra)
{
    size_t n = 0;
    char **env = osb_xcalloc(1, sizeof *env);
    for (char **e = environ; *e; e++) {
        char *eq = strchr(*e, '=');
        if (eq)
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
