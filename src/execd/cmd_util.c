#include "execd/cmd_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/xalloc.h"

/* Go's syscall.Signal.String() on Linux. */
static const char *signal_name(int sig)
{
    static const char *const names[] = {
        [SIGHUP] = "hangup",
        [SIGINT] = "interrupt",
        [SIGQUIT] = "quit",
        [SIGILL] = "illegal instruction",
        [SIGTRAP] = "trace/breakpoint trap",
        [SIGABRT] = "aborted",
        [SIGBUS] = "bus error",
        [SIGFPE] = "floating point exception",
        [SIGKILL] = "killed",
        [SIGUSR1] = "user defined signal 1",
        [SIGSEGV] = "segmentation fault",
        [SIGUSR2] = "user defined signal 2",
        [SIGPIPE] = "broken pipe",
        [SIGALRM] = "alarm clock",
        [SIGTERM] = "terminated",
        [SIGSTKFLT] = "stack fault",
        [SIGCHLD] = "child exited",
        [SIGCONT] = "continued",
        [SIGSTOP] = "stopped (signal)",
        [SIGTSTP] = "stopped",
        [SIGTTIN] = "stopped (tty input)",
        [SIGTTOU] = "stopped (tty output)",
        [SIGURG] = "urgent I/O condition",
        [SIGXCPU] = "CPU time limit exceeded",
        [SIGXFSZ] = "file size limit exceeded",
        [SIGVTALRM] = "virtual timer expired",
        [SIGPROF] = "profiling timer expired",
        [SIGWINCH] = "window changed",
        [SIGIO] = "I/O possible",
        [SIGPWR] = "power failure",
        [SIGSYS] = "bad system call",
    };
    if (sig > 0 && (size_t)sig < OSB_ARRAY_LEN(names) && names[sig])
        return names[sig];
    return NULL;
}

void osb_cmd_exit_text(int wstatus, char *buf, size_t n)
{
    if (!WIFSIGNALED(wstatus)) {
        snprintf(buf, n, "exit status %d", WEXITSTATUS(wstatus));
        return;
    }
    int sig = WTERMSIG(wstatus);
    const char *name = signal_name(sig);
    const char *core = WCOREDUMP(wstatus) ? " (core dumped)" : "";
    if (name)
        snprintf(buf, n, "signal: %s%s", name, core);
    else
        snprintf(buf, n, "signal: signal %d%s", sig, core);
}

int osb_cmd_exit_code(int wstatus)
{
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

void osb_cmd_duration_text(int64_t ms, char *buf, size_t n)
{
    if (ms <= 0) {
        snprintf(buf, n, "0s");
        return;
    }
    if (ms < 1000) {
        snprintf(buf, n, "%lldms", (long long)ms);
        return;
    }
    long long h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, f = ms % 1000;
    char secs[32];
    if (f) {
        snprintf(secs, sizeof secs, "%lld.%03lld", s, f);
        size_t l = strlen(secs);
        while (secs[l - 1] == '0')
            secs[--l] = '\0';
    } else {
        snprintf(secs, sizeof secs, "%lld", s);
    }
    if (h)
        snprintf(buf, n, "%lldh%lldm%ss", h, m, secs);
    else if (m)
        snprintf(buf, n, "%lldm%ss", m, secs);
    else
        snprintf(buf, n, "%ss", secs);
}

static bool in_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    _cleanup_free_ char *copy = osb_xstrdup(path);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        _cleanup_free_ char *p = osb_xasprintf("%s/%s", d, name);
        if (access(p, X_OK) == 0)
            return true;
    }
    return false;
}

/* Looked up on each call (a few stat calls beside a spawn): no state to
 * keep, and a bash installed after start-up is used. */
const char *osb_cmd_shell(void)
{
    return in_path("bash") ? "bash" : "sh";
}

static const char *env_lookup(char *const *envp, const char *name, size_t len)
{
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
            return *envp + len + 1;
    return NULL;
}

static size_t name_len(const char *s)
{
    size_t i = 0;
    if (!(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return 0;
    while (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
           (s[i] >= '0' && s[i] <= '9'))
        i++;
    return i;
}

/* One "$NAME" or "${NAME}" at s (s[0] == '$'): appends the value (or the
 * missing name to `missing`) and returns the bytes consumed, 0 if s is not a
 * variable reference. *full is set when a buffer hit its limit. */
static size_t expand_var(const char *s, char *const *envp, struct osb_buf *out,
                         struct osb_buf *missing, bool *full)
{
    bool braced = s[1] == '{';
    const char *name = s + 1 + braced;
    size_t len = name_len(name);
    if (!len || (braced && name[len] != '}'))
        return 0;
    const char *v = env_lookup(envp, name, len);
    if (v)
        *full |= osb_buf_adds(out, v) < 0;
    else
        *full |=
            (missing->len && osb_buf_adds(missing, ",") < 0) || osb_buf_add(missing, name, len) < 0;
    return 1 + braced + len + braced;
}

static int expand_home(char *const *envp, char **path, struct osb_err *err)
{
    char *p = *path;
    if (!(p[0] == '~' && (p[1] == '\0' || p[1] == '/')))
        return 0;
    const char *home = env_lookup(envp, "HOME", 4);
    if (!home || !*home)
        return osb_err_set(err, OSB_E_INVALID,
                           "cannot resolve working directory %s: $HOME is not defined", p);
    *path = osb_xasprintf("%s%s", home, p + 1);
    free(p);
    return 0;
}

int osb_cmd_expand_path(const char *path, char *const *envp, char **out, struct osb_err *err)
{
    struct osb_buf b, missing;
    osb_buf_init(&b, 1 << 20);
    osb_buf_init(&missing, 1 << 16);
    bool full = false;
    for (const char *s = path; *s && !full;) {
        size_t used = *s == '$' ? expand_var(s, envp, &b, &missing, &full) : 0;
        if (!used) {
            full |= osb_buf_add(&b, s, 1) < 0;
            used = 1;
        }
        s += used;
    }
    if (full) {
        osb_err_set(err, OSB_E_INVALID, "cannot resolve working directory %s: too long", path);
        osb_buf_free(&b);
        osb_buf_free(&missing);
        return -1;
    }
    if (missing.len) {
        osb_err_set(err, OSB_E_INVALID,
                    "cannot resolve working directory %s: path references undefined "
                    "environment variables: %s",
                    path, missing.data);
        osb_buf_free(&b);
        osb_buf_free(&missing);
        return -1;
    }
    osb_buf_free(&missing);
    char *p = osb_buf_steal(&b, NULL);
    if (expand_home(envp, &p, err) < 0) {
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

int osb_cmd_check_dir(const char *path, const char *shown, struct osb_err *err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_INVALID, "working directory does not exist: %s", shown);
        return osb_err_sys(err, "cannot access working directory %s", shown);
    }
    if (!S_ISDIR(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "working directory path is not a directory: %s",
                           shown);
    return 0;
}

gid_t osb_cmd_primary_gid(uid_t uid)
{
    _cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    gid_t gid = 0;
    while (getline(&line, &cap, f) > 0) {
        char *save = NULL, *name = strtok_r(line, ":", &save);
        char *pw = name ? strtok_r(NULL, ":", &save) : NULL;
        char *u = pw ? strtok_r(NULL, ":", &save) : NULL;
        char *g = u ? strtok_r(NULL, ":", &save) : NULL;
        char *end;
        if (!g || strtoul(u, &end, 10) != uid || *end)
            continue;
        unsigned long v = strtoul(g, &end, 10);
        if (!*end) {
            gid = (gid_t)v;
            break;
        }
    }
    free(line);
    return gid;
}

/* Remove the private directory and the logs in it (it holds nothing else;
 * no subdirectories). */
void osb_cmd_tmpdir_remove(struct osb_execd *x)
{
    if (!x->tmpdir)
        return;
    _cleanup_closedir_ DIR *d = opendir(x->tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            unlinkat(dirfd(d), e->d_name, 0);
    rmdir(x->tmpdir);
    free(x->tmpdir);
    x->tmpdir = NULL;
}

const char *osb_cmd_tmpdir(struct osb_execd *x, struct osb_err *err)
{
    if (x->tmpdir)
        return x->tmpdir;
    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/')
        base = "/tmp";
    char *d = osb_xasprintf("%s/.osb-execd-%d", base, (int)getpid());
    if (mkdir(d, 0700) < 0 && errno != EEXIST) {
        osb_err_sys(err, "create temporary directory %s", d);
        free(d);
        return NULL;
    }
    struct stat st;
    /* An existing directory must be ours and private: someone else's would
     * let them read command logs. */
    if (lstat(d, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        osb_err_set(err, OSB_E_SYS, "temporary directory %s is not a private directory", d);
        free(d);
        return NULL;
    }
    x->tmpdir = d;
    return x->tmpdir;
}
