/* Running runsc. Every command gets the same global flags: runsc keeps
 * none of them from create (docs/internals/gvisor.md). */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/gvisor/state.h"

extern char **environ;

int osb_gv_check_id(const char *id, struct osb_err *err)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > OSB_RT_ID_MAX ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789-") != n)
        return osb_err_set(err, OSB_E_INVALID, "invalid sandbox id `%s`", id ? id : "");
    return 0;
}

/* Once closed and no handle of the backend is open any more. */
void osb_gv_maybe_free(struct osb_gv *rt)
{
    if (!rt->closing || rt->open_handles)
        return;
    free(rt->runsc);
    free(rt->platform);
    free(rt->root_dir);
    free(rt->sandboxes_dir);
    free(rt->execd_path);
    free(rt->host_root);
    free(rt);
}

void osb_gv_dir(const struct osb_gv *rt, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", rt->sandboxes_dir, id);
}

static void read_all(int fd, struct osb_buf *out)
{
    char chunk[4096];
    ssize_t r;
    while ((r = read(fd, chunk, sizeof chunk)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (out && out->len + (size_t)r <= (64u << 10) && osb_buf_add(out, chunk, (size_t)r) < 0)
            break;
    }
}

int osb_gv_runsc(const struct osb_gv *rt, bool network, const char *const *args, int stdio_fd,
                 struct osb_buf *out, struct osb_err *err)
{
    char root[PATH_MAX + 8], platform[64];
    snprintf(root, sizeof root, "--root=%s", rt->root_dir);
    snprintf(platform, sizeof platform, "--platform=%s", rt->platform);
    const char *argv[32] = {rt->runsc, root, platform,
                            network ? "--network=host" : "--network=none", "--host-uds=create"};
    size_t j = 5;
    for (size_t i = 0; args[i] && j < sizeof argv / sizeof argv[0] - 1; i++)
        argv[j++] = args[i];
    argv[j] = NULL;

    int p[2] = {-1, -1};
    if (out && pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    int devnull = stdio_fd >= 0 ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC);
    int io = stdio_fd >= 0 ? stdio_fd : devnull;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, io, 0);
    posix_spawn_file_actions_adddup2(&fa, out ? p[1] : io, 1);
    posix_spawn_file_actions_adddup2(&fa, out ? p[1] : io, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, rt->runsc, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (devnull >= 0)
        close(devnull);
    if (out)
        close(p[1]);
    if (rc != 0) {
        if (out)
            close(p[0]);
        errno = rc;
        return osb_err_sys(err, "spawn %s", rt->runsc);
    }
    if (out) {
        read_all(p[0], out);
        close(p[0]);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return osb_err_sys(err, "waitpid runsc");
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    const char *msg = out && out->len ? out->data : "";
    size_t len = out ? out->len : 0;
    while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
        len--;
    return osb_err_set(err, OSB_E_INTERNAL, "runsc %s failed (status %d): %.*s", args[0],
                       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
                       (int)(len > 400 ? 400 : len), msg + (len > 400 ? len - 400 : 0));
}

int osb_gv_state(const struct osb_gv *rt, const char *id, pid_t *pid, char *status, size_t n,
                 struct osb_err *err)
{
    struct osb_buf out;
    osb_buf_init(&out, 64u << 10);
    const char *args[] = {"state", id, NULL};
    struct osb_err e = {0};
    if (osb_gv_runsc(rt, false, args, -1, &out, &e) < 0) {
        osb_buf_free(&out);
        if (strstr(e.msg, "does not exist") || strstr(e.msg, "not found"))
            return osb_err_set(err, OSB_E_NOTFOUND, "no gvisor sandbox `%s`", id);
        *err = e;
        return -1;
    }
    json_t *j = NULL;
    int rc = osb_json_parse_object(out.data, out.len, false, &j, err);
    osb_buf_free(&out);
    if (rc < 0)
        return -1;
    json_t *p = json_object_get(j, "pid");
    json_t *s = json_object_get(j, "status");
    *pid = json_is_integer(p) ? (pid_t)json_integer_value(p) : 0;
    snprintf(status, n, "%s", json_is_string(s) ? json_string_value(s) : "");
    json_decref(j);
    return 0;
}

/* Runs runsc with only args (no global flags), output into out. */
static int run_plain(const char *runsc, const char *const *args, struct osb_buf *out,
                     struct osb_err *err)
{
    const char *argv[8] = {runsc};
    for (size_t i = 0; args[i] && i < 6; i++)
        argv[i + 1] = args[i];
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    pid_t pid;
    int rc = posix_spawn(&pid, runsc, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc == 0)
        read_all(p[0], out);
    close(p[0]);
    if (rc != 0) {
        errno = rc;
        return osb_err_sys(err, "spawn %s", runsc);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return osb_err_sys(err, "waitpid runsc");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "`%s %s` failed (status %d)", runsc, args[0],
                           WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    if (osb_buf_add(out, "", 1) < 0) /* NUL-terminated */
        return osb_err_set(err, OSB_E_INTERNAL, "`%s %s`: output too long", runsc, args[0]);
    return 0;
}

static bool has_line(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, word, n) == 0 && (l[n] == '\n' || l[n] == '\0'))
            return true;
    return false;
}

static char *find_on_path(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/sbin:/usr/bin"; p && *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/runsc", (int)n, p);
        if (access(buf, X_OK) == 0)
            return osb_xstrdup(buf);
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

int osb_gv_probe(struct osb_gv *rt, const char *runsc, struct osb_err *err)
{
    if (runsc && access(runsc, X_OK) < 0)
        return osb_err_sys(err, "[gvisor] runsc `%s` is not an executable file", runsc);
    rt->runsc = runsc ? osb_xstrdup(runsc) : find_on_path();
    if (!rt->runsc)
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "the gvisor runtime needs runsc on PATH or [gvisor] runsc "
                           "(Debian: apt-get install runsc)");
    struct osb_buf out;
    osb_buf_init(&out, 64u << 10);
    const char *help[] = {"help", "platforms", NULL};
    if (run_plain(rt->runsc, help, &out, err) < 0) {
        osb_buf_free(&out);
        return -1;
    }
    bool known = has_line(out.data, rt->platform);
    if (!known) {
        size_t n = strlen(out.data);
        while (n && out.data[n - 1] == '\n')
            out.data[--n] = '\0';
        for (size_t i = 0; i < n; i++)
            if (out.data[i] == '\n')
                out.data[i] = ' ';
        osb_err_set(err, OSB_E_INVALID,
                    "[gvisor] platform `%s`: %s knows only: %s (docs/internals/gvisor.md)",
                    rt->platform, rt->runsc, out.data);
        osb_buf_free(&out);
        return -1;
    }
    osb_buf_reset(&out);
    const char *ver[] = {"--version", NULL};
    int rc = run_plain(rt->runsc, ver, &out, err);
    const char *v = rc == 0 ? strstr(out.data, "version ") : NULL;
    size_t vn = v ? strcspn(v + 8, "\n") : 0;
    snprintf(rt->describe, sizeof rt->describe, "gvisor (%s %.*s, platform %s)", rt->runsc, (int)vn,
             v ? v + 8 : "", rt->platform);
    osb_buf_free(&out);
    return rc;
}

void osb_gv_teardown(const struct osb_gv *rt, const char *id, bool keep_log)
{
    struct osb_err err = {0};
    const char *kill_args[] = {"kill", "--all", id, "KILL", NULL};
    if (osb_gv_runsc(rt, false, kill_args, -1, NULL, &err) < 0)
        osb_debug("gvisor: %s: %s", id, err.msg); /* often: not running */
    const char *del_args[] = {"delete", "--force", id, NULL};
    struct osb_buf out;
    osb_buf_init(&out, 64u << 10);
    if (osb_gv_runsc(rt, false, del_args, -1, &out, &err) < 0 && !strstr(err.msg, "does not exist"))
        osb_warn("gvisor: %s: %s", id, err.msg);
    osb_buf_free(&out);
    char dir[PATH_MAX];
    osb_gv_dir(rt, id, dir, sizeof dir);
    osb_gv_unlock_sock_dir(dir);
    if (!keep_log) {
        osb_fs_discard_tree(dir);
        return;
    }
    static const char *const parts[] = {
        "config.json", "rootfs", "rw",  "sock",          "bin",
        "vol",         "tmp",    "shm", OSB_GV_LOG_FIFO, OSB_GV_REPORT_FIFO};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/%s", dir, parts[i]);
        osb_fs_discard_tree(p);
    }
}
