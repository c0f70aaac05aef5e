/* The native runtime (runtime.h) on the server's loop.
 *
 * create: validate, encode the spec into a memfd, posix_spawn the static
 * osb-sandbox-init helper (fd 0 = spec, fd 1 = result pipe), watch the
 * pipe with uv_pipe; the helper's one-line result becomes the callback.
 * The helper does every blocking step (mkdir, cgroups, clone, mounts), so
 * the loop only pays for the spawn.
 *
 * Children: the server is a child subreaper, so each sandbox's PID 1
 * becomes its child once the helper exits. A SIGCHLD uv_signal reaps only
 * pids this runtime started (helpers, sandbox PID 1s) with waitpid(pid),
 * never waitpid(-1), so libuv's own uv_spawn children keep working.
 * Watches use pidfds (uv_poll), which also work for sandboxes re-adopted
 * after a server restart (no longer our children). */
#include "runtime/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/endreport.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "runtime/native/cgroup.h"
#include "runtime/native/fsutil.h"
#include "image/layer.h"
#include "image/ref.h"
#include "image/store.h"
#include "runtime/native/image.h"
#include "runtime/native/logdrain.h"
#include <sys/socket.h>
#include <sys/un.h>

extern char **environ;

/* A helper that has not answered by then is killed and its sandbox torn
 * down: creating takes ~10 ms, so this only catches a wedged kernel. */
#define CREATE_TIMEOUT_MS 30000
#define DEFAULT_PIDS 4096
#define DEFAULT_DISK (1LL << 30)
#define MIN_MEMORY (4LL << 20)
#define MIN_PIDS 24
#define MIN_DISK (1LL << 20)

struct rt_create {
    struct osb_rt *rt;
    struct rt_create *next;
    char id[OSB_RT_ID_MAX + 1];
    pid_t helper;
    uv_pipe_t pipe;
    uv_timer_t timer;
    int open_handles;
    struct osb_buf out;
    osb_rt_create_cb cb;
    void *ud;
    bool finished;            /* EOF or error seen: callback ran or will not */
    bool timed_out, destroyed;
    bool out_full;            /* the helper's result did not fit in out */
};

struct rt_watch {
    struct osb_rt *rt;
    struct rt_watch *next;
    char id[OSB_RT_ID_MAX + 1];
    pid_t pid;
    int pidfd;
    uv_poll_t poll;
    int report_fd;            /* our copy of the report pipe's read end, or -1 */
    uv_poll_t report;         /* initialised only with report_fd >= 0 */
    int open_handles;
    osb_rt_exit_cb cb;
    void *ud;
};

/* The drain of one sandbox's output pipe (logdrain.h). */
struct rt_log {
    struct osb_rt *rt;
    struct rt_log *next;
    char id[OSB_RT_ID_MAX + 1];
    struct osb_logdrain *drain;
};

struct osb_rt {
    uv_loop_t *loop;
    char *state_dir, *sandboxes_dir, *images_dir, *execd_path, *init_path;
    struct osb_cg_plan plan;
    struct osb_img_host host;
    struct osb_istore *store;
    char describe[512];
    uv_signal_t sigchld;
    int sandboxes_fd;         /* O_PATH of sandboxes/: socket paths too long for sun_path */
    pid_t *kids;
    size_t n_kids, cap_kids;
    struct rt_create *creates;
    struct rt_watch *watches;
    struct rt_log *logs;
    int open_handles;
    bool closing;
};

/* ------------------------------------------------------------ lifetime */

static void maybe_free(struct osb_rt *rt)
{
    if (!rt->closing || rt->open_handles > 0)
        return;
    free(rt->state_dir);
    free(rt->sandboxes_dir);
    free(rt->images_dir);
    free(rt->execd_path);
    free(rt->init_path);
    free(rt->kids);
    if (rt->sandboxes_fd >= 0)
        close(rt->sandboxes_fd);
    osb_istore_close(rt->store);
    free(rt);
}

static void on_rt_handle_closed(uv_handle_t *h)
{
    struct osb_rt *rt = h->data;
    rt->open_handles--;
    maybe_free(rt);
}

/* ------------------------------------------------------------ children */

static void kid_add(struct osb_rt *rt, pid_t pid)
{
    if (rt->n_kids == rt->cap_kids) {
        rt->cap_kids = rt->cap_kids ? rt->cap_kids * 2 : 64;
        rt->kids = osb_xrealloc(rt->kids, rt->cap_kids * sizeof *rt->kids);
    }
    rt->kids[rt->n_kids++] = pid;
}

/* waitpid(pid, WNOHANG) if pid is ours; true once it is reaped (or was
 * never ours). */
static bool kid_reap(struct osb_rt *rt, pid_t pid)
{
    for (size_t i = 0; i < rt->n_kids; i++) {
        if (rt->kids[i] != pid)
            continue;
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == 0)
            return false;
        rt->kids[i] = rt->kids[--rt->n_kids];
        return true;
    }
    return true;
}

static void on_sigchld(uv_signal_t *h, int sig)
{
    (void)sig;
    struct osb_rt *rt = h->data;
    for (size_t i = 0; i < rt->n_kids;) {
        pid_t r = waitpid(rt->kids[i], NULL, WNOHANG);
        if (r == rt->kids[i] || (r < 0 && errno == ECHILD))
            rt->kids[i] = rt->kids[--rt->n_kids];
        else
            i++;
    }
}

/* ------------------------------------------------------------ helpers */

static bool valid_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > OSB_RT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
    }
    return true;
}

static int check_id(const char *id, struct osb_err *err)
{
    if (!valid_id(id))
        return osb_err_set(err, OSB_E_INVALID, "sandbox id `%s` must be 1-%d of [a-zA-Z0-9-]",
                           id ? id : "", OSB_RT_ID_MAX);
    return 0;
}

static void sandbox_dir(const struct osb_rt *rt, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", rt->sandboxes_dir, id);
}

static void load_set(const struct osb_rt *rt, const char *id, struct osb_cg_set *s)
{
    char dir[PATH_MAX];
    sandbox_dir(rt, id, dir, sizeof dir);
    osb_cg_set_load(&rt->plan, id, dir, s);
}

/* /proc/<pid>/stat: field 22 (start time) and the state letter. */
static bool proc_stat(pid_t pid, uint64_t *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (osb_rtfs_read(path, buf, sizeof buf) <= 0)
        return false;
    char *p = strrchr(buf, ')');
    if (!p || !p[1])
        return false;
    *state = p[2];
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    *start = p ? strtoull(p + 1, NULL, 10) : 0;
    return p != NULL;
}

static char *exe_sibling(const char *name)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return osb_xstrdup(name);
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    return osb_xasprintf("%s/%s", exe, name);
}

/* ------------------------------------------------------------ open/close */

static int make_dirs(struct osb_rt *rt, struct osb_err *err)
{
    if (strpbrk(rt->state_dir, ",:\\\n "))
        return osb_err_set(err, OSB_E_INVALID,
                           "state dir `%s` may not contain ',', ':', '\\', spaces or newlines "
                           "(it is used in overlayfs mount options)",
                           rt->state_dir);
    if (osb_mkdir_p(rt->state_dir, 0700, err) < 0 ||
        osb_mkdir_p(rt->sandboxes_dir, 0700, err) < 0 ||
        osb_mkdir_p(rt->images_dir, 0755, err) < 0)
        return -1;
    /* Sandboxes' overlay lower dirs live under images/: reachable for the
     * sandbox helper, not writable by anyone else. */
    chmod(rt->images_dir, 0755);
    return 0;
}

static int check_binaries(struct osb_rt *rt, struct osb_err *err)
{
    if (access(rt->execd_path, X_OK) < 0)
        return osb_err_sys(err, "execd binary `%s`", rt->execd_path);
    if (access(rt->init_path, X_OK) < 0)
        return osb_err_sys(err, "sandbox init helper `%s`", rt->init_path);
    return 0;
}

static void start_handles(struct osb_rt *rt)
{
    uv_signal_init(rt->loop, &rt->sigchld);
    rt->sigchld.data = rt;
    uv_signal_start(&rt->sigchld, on_sigchld, SIGCHLD);
    uv_unref((uv_handle_t *)&rt->sigchld);
    rt->open_handles = 1;
}

int osb_rt_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                struct osb_err *err)
{
    if (!cfg->state_dir || cfg->state_dir[0] != '/')
        return osb_err_set(err, OSB_E_INVALID, "state dir must be an absolute path");
    struct osb_rt *rt = osb_xcalloc(1, sizeof *rt);
    rt->loop = loop;
    rt->state_dir = osb_xstrdup(cfg->state_dir);
    for (size_t n = strlen(rt->state_dir); n > 1 && rt->state_dir[n - 1] == '/'; n--)
        rt->state_dir[n - 1] = '\0';
    rt->sandboxes_dir = osb_xasprintf("%s/sandboxes", rt->state_dir);
    rt->images_dir = osb_xasprintf("%s/images", rt->state_dir);
    rt->execd_path = cfg->execd_path ? osb_xstrdup(cfg->execd_path) : exe_sibling("execd");
    rt->init_path = cfg->init_path ? osb_xstrdup(cfg->init_path) : exe_sibling("osb-sandbox-init");
    rt->closing = true;
    rt->sandboxes_fd = -1;
    if (geteuid() != 0) {
        osb_err_set(err, OSB_E_UNSUPPORTED, "the native runtime needs root (namespaces, "
                                            "mounts, cgroups)");
        goto fail;
    }
    if (make_dirs(rt, err) < 0 || check_binaries(rt, err) < 0 ||
        osb_cg_plan_init(&rt->plan, rt->state_dir, err) < 0 ||
        osb_img_host_prepare(rt->images_dir, &rt->host, err) < 0 ||
        osb_istore_open(rt->state_dir, &rt->store, err) < 0)
        goto fail;
    rt->sandboxes_fd = open(rt->sandboxes_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rt->sandboxes_fd < 0) {
        osb_err_sys(err, "open `%s`", rt->sandboxes_dir);
        goto fail;
    }
    /* Sandbox PID 1s re-parent to us when their helper exits: we can
     * reap them and learn their exit promptly. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        osb_err_sys(err, "become a child subreaper");
        goto fail;
    }
    snprintf(rt->describe, sizeof rt->describe, "native (%s)", rt->plan.desc);
    rt->closing = false;
    start_handles(rt);
    *out = rt;
    return 0;
fail:
    maybe_free(rt);
    return -1;
}

static void close_create(struct rt_create *c);
static void unlink_watch(struct osb_rt *rt, struct rt_watch *w);
static void close_watch(struct rt_watch *w);
static void close_log(struct osb_rt *rt, const char *id, bool flush);

void osb_rt_close(struct osb_rt *rt)
{
    if (!rt || rt->closing)
        return;
    rt->closing = true;
    while (rt->creates) {
        struct rt_create *c = rt->creates;
        rt->creates = c->next;
        c->finished = true;
        close_create(c);
    }
    while (rt->watches) {
        struct rt_watch *w = rt->watches;
        unlink_watch(rt, w);
        close_watch(w);
    }
    /* Sandboxes outlive the server: execd keeps a reader of each pipe, and
     * a restarted server takes a new one (osb_rt_adopt). */
    while (rt->logs)
        close_log(rt, rt->logs->id, false);
    uv_close((uv_handle_t *)&rt->sigchld, on_rt_handle_closed);
    /* Empty base cgroups go (those with live sandboxes stay: rmdir fails);
     * a runtime still using them recreates them on its next create. */
    for (size_t i = 0; i < rt->plan.n; i++)
        rmdir(rt->plan.bases[i].base);
}

const char *osb_rt_describe(const struct osb_rt *rt)
{
    return rt->describe;
}

/* ------------------------------------------------------------ create */

static int validate_env(const char *const *env, struct osb_err *err)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i])
            return osb_err_set(err, OSB_E_INVALID, "env entry `%s` is not KEY=VALUE", env[i]);
    }
    return 0;
}

static int validate_hostname(const char *h, struct osb_err *err)
{
    size_t n = strlen(h);
    if (n == 0 || n > 63)
        return osb_err_set(err, OSB_E_INVALID, "hostname must be 1-63 characters");
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return osb_err_set(err, OSB_E_INVALID, "hostname `%s` has character '%c'", h, c);
    }
    return 0;
}

/* ------------------------------------------------------------ volumes */

/* A relative path of plain components: no leading "/", no "..". */
static bool rel_ok(const char *p)
{
    if (!p || !*p)
        return true;
    if (p[0] == '/')
        return false;
    for (const char *c = p; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return false;
        c += len;
        c += *c == '/';
    }
    return true;
}

static int validate_volumes(const struct osb_rt_spec *s, struct osb_err *err)
{
    for (size_t i = 0; i < s->n_volumes; i++) {
        const struct osb_rt_volume *v = &s->volumes[i];
        if (!v->name || !*v->name || !v->src_root || v->src_root[0] != '/')
            return osb_err_set(err, OSB_E_INVALID, "volume %zu: a name and an absolute source "
                               "root are required", i);
        if (!rel_ok(v->src_rel) || !rel_ok(v->sub_path))
            return osb_err_set(err, OSB_E_INVALID, "volume `%s`: source paths must be relative "
                               "without '..'", v->name);
        if (!v->dst || v->dst[0] != '/' || !v->dst[1] || !rel_ok(v->dst + 1))
            return osb_err_set(err, OSB_E_INVALID, "volume `%s`: the mount path must be absolute, "
                               "not '/', without '..'", v->name);
    }
    return 0;
}

/* The init spec's view of s->volumes (strings borrowed); caller frees. */
static struct osb_init_volume *init_volumes(const struct osb_rt_spec *s)
{
    struct osb_init_volume *iv = osb_xcalloc(s->n_volumes + 1, sizeof *iv);
    for (size_t i = 0; i < s->n_volumes; i++) {
        const struct osb_rt_volume *v = &s->volumes[i];
        iv[i] = (struct osb_init_volume){(char *)v->name, (char *)v->src_root,
                                         (char *)(v->src_rel ? v->src_rel : ""),
                                         (char *)(v->sub_path ? v->sub_path : ""), (char *)v->dst,
                                         v->read_only};
    }
    return iv;
}

static int validate_spec(const struct osb_rt_spec *s, struct osb_err *err)
{
    if (check_id(s->id, err) < 0)
        return -1;
    if (!s->entrypoint || !s->entrypoint[0] || !s->entrypoint[0][0])
        return osb_err_set(err, OSB_E_INVALID, "entrypoint must have at least one element");
    if (!s->execd_token || !s->execd_token[0] || strpbrk(s->execd_token, " \t\r\n"))
        return osb_err_set(err, OSB_E_INVALID, "execd token is required (no whitespace)");
    if (s->cpu_millicores < 0 || s->memory_bytes < 0 || s->pids_max < 0 || s->disk_bytes < 0)
        return osb_err_set(err, OSB_E_INVALID, "resource limits must not be negative");
    if (s->netns && (s->netns[0] != '/' || !s->dns || strspn(s->dns, "0123456789.") !=
                                                         strlen(s->dns)))
        return osb_err_set(err, OSB_E_INVALID, "a network slot needs an absolute netns path "
                                               "and an IPv4 nameserver");
    if (s->memory_bytes > 0 && s->memory_bytes < MIN_MEMORY)
        return osb_err_set(err, OSB_E_INVALID, "memory limit below %lld MiB cannot run execd",
                           MIN_MEMORY >> 20);
    if (s->pids_max > 0 && s->pids_max < MIN_PIDS)
        return osb_err_set(err, OSB_E_INVALID,
                           "pids limit below %d cannot run execd (it counts threads)", MIN_PIDS);
    if (s->disk_bytes > 0 && s->disk_bytes < MIN_DISK)
        return osb_err_set(err, OSB_E_INVALID, "disk limit below 1 MiB");
    if (s->hostname && validate_hostname(s->hostname, err) < 0)
        return -1;
    if (validate_volumes(s, err) < 0)
        return -1;
    return validate_env(s->env, err);
}

static struct rt_create *find_create(struct osb_rt *rt, const char *id)
{
    for (struct rt_create *c = rt->creates; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

/* The helper's spec: the validated request plus every path it needs. */
static char *encode_spec(struct osb_rt *rt, const struct osb_rt_spec *s, const char *lower,
                         bool host, size_t *len)
{
    char dir[PATH_MAX], hostname[16];
    sandbox_dir(rt, s->id, dir, sizeof dir);
    snprintf(hostname, sizeof hostname, "%.12s", s->id);
    struct osb_cg_set set;
    osb_cg_set_for(&rt->plan, s->id, &set);
    struct osb_init_cgroup cgs[OSB_CG_NROLES];
    for (size_t i = 0; i < set.n; i++)
        cgs[i] = (struct osb_init_cgroup){set.role[i], set.dir[i], rt->plan.bases[i].home};
    struct osb_init_spec is = {
        .id = (char *)s->id, .dir = dir, .image = (char *)s->image, .lower = (char *)lower,
        .execd = rt->execd_path, .hostname = s->hostname ? (char *)s->hostname : hostname,
        .token = (char *)s->execd_token, .entrypoint = (char **)s->entrypoint,
        .keep_running = s->keep_running,
        .workdir = (char *)s->workdir, .user = (char *)s->user,
        .netns = (char *)s->netns, .dns = (char *)s->dns,
        .env = (char **)s->env, .binds = host ? rt->host.binds : NULL,
        .n_binds = host ? rt->host.n_binds : 0, .cgroups = cgs, .n_cgroups = set.n,
        .memory_bytes = s->memory_bytes, .cpu_millicores = s->cpu_millicores,
        .pids_max = s->pids_max ? s->pids_max : DEFAULT_PIDS,
        .disk_bytes = s->disk_bytes ? s->disk_bytes : DEFAULT_DISK,
    };
    _cleanup_free_ struct osb_init_volume *vols = init_volumes(s);
    is.volumes = vols;
    is.n_volumes = s->n_volumes;
    return osb_init_spec_encode(&is, len);
}

static int spec_memfd(const char *data, size_t len, struct osb_err *err)
{
    int fd = memfd_create("osb-sandbox-spec", MFD_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "memfd_create");
    size_t off = 0;
    while (off < len) {
        ssize_t n = OSB_RETRY(write(fd, data + off, len - off));
        if (n <= 0) {
            close(fd);
            return osb_err_sys(err, "write the sandbox spec");
        }
        off += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        close(fd);
        return osb_err_sys(err, "rewind the sandbox spec");
    }
    return fd;
}

/* posix_spawn (vfork-like, no copy of the server's memory) with default
 * signal dispositions and an empty mask: the server ignores SIGPIPE and
 * libuv may block signals; a sandbox must not inherit either. */
static pid_t spawn_helper(struct osb_rt *rt, int spec_fd, int result_fd, struct osb_err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, spec_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, result_fd, 1);
    posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETSID);
    char *argv[] = {rt->init_path, NULL};
    pid_t pid;
    int r = posix_spawn(&pid, rt->init_path, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (r != 0) {
        errno = r;
        return osb_err_sys(err, "start `%s`", rt->init_path);
    }
    return pid;
}

static void on_create_closed(uv_handle_t *h)
{
    struct rt_create *c = h->data;
    if (--c->open_handles > 0)
        return;
    osb_buf_free(&c->out);
    struct osb_rt *rt = c->rt;
    free(c);
    rt->open_handles--;
    maybe_free(rt);
}

static void close_create(struct rt_create *c)
{
    uv_close((uv_handle_t *)&c->pipe, on_create_closed);
    uv_close((uv_handle_t *)&c->timer, on_create_closed);
}

static void unlink_create(struct osb_rt *rt, struct rt_create *c)
{
    for (struct rt_create **p = &rt->creates; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            return;
        }
}

/* "ok <pid> <start>" / "error <code> <errno> <message>" */
static int parse_result(const char *line, struct osb_rt_handle *h, struct osb_err *err)
{
    int pid;
    uint64_t start;
    if (sscanf(line, "ok %d %" SCNu64, &pid, &start) == 2 && pid > 0) {
        h->pid = pid;
        h->start_time = start;
        return 0;
    }
    int code, sys, off = 0;
    if (sscanf(line, "error %d %d %n", &code, &sys, &off) == 2 && off > 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", line + off);
        msg[strcspn(msg, "\n")] = '\0';
        osb_err_set(err, code > 0 && code <= OSB_E_INTERNAL ? (enum osb_errc)code : OSB_E_INTERNAL,
                    "%s", msg);
        err->sys_errno = sys;
        return -1;
    }
    return osb_err_set(err, OSB_E_INTERNAL, "sandbox helper exited without a result");
}

/* The host-only socket the helper bound (<sandbox dir>/execd.sock): the
 * sandbox cannot see or replace it. Through the runtime's own descriptor
 * of sandboxes/ when the plain path is too long for sun_path ("self" is
 * the process that connects: this server). */
static void fill_paths(struct osb_rt *rt, const char *id, struct osb_rt_handle *h)
{
    struct sockaddr_un sa;
    int n = snprintf(h->sock_path, sizeof h->sock_path, "%s/%s/%s", rt->sandboxes_dir, id,
                     OSB_SANDBOX_CTL_SOCK);
    if (n < 0 || (size_t)n >= sizeof sa.sun_path)
        snprintf(h->sock_path, sizeof h->sock_path, "/proc/self/fd/%d/%s/%s", rt->sandboxes_fd,
                 id, OSB_SANDBOX_CTL_SOCK);
    snprintf(h->log_path, sizeof h->log_path, "%s/%s/%s", rt->sandboxes_dir, id,
             OSB_SANDBOX_LOG);
}

static struct rt_log *find_log(struct osb_rt *rt, const char *id)
{
    for (struct rt_log *l = rt->logs; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

static void on_log_closed(void *ud)
{
    struct osb_rt *rt = ud;
    rt->open_handles--;
    maybe_free(rt);
}

/* flush: the sandbox stops but its log stays (diagnostics read it), so
 * what it wrote last is taken out of the pipe first. */
static void close_log(struct osb_rt *rt, const char *id, bool flush)
{
    for (struct rt_log **p = &rt->logs; *p; p = &(*p)->next) {
        struct rt_log *l = *p;
        if (strcmp(l->id, id) != 0)
            continue;
        *p = l->next;
        if (flush)
            osb_logdrain_flush(l->drain);
        osb_logdrain_close(l->drain, on_log_closed, rt);
        free(l);
        return;
    }
}

/* A copy of the read end of the sandbox's output pipe, which execd keeps
 * at OSB_SANDBOX_LOG_FD for us (taken with pidfd_getfd, as the layer fd):
 * the same way at create and after a restart. pidfd first, liveness
 * second, so a recycled pid cannot hand us another process's fd. */
static int take_log_pipe(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                         struct osb_err *err)
{
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (pfd < 0 || !osb_rt_alive(rt, id, h))
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` is not running", id);
    int fd = (int)syscall(SYS_pidfd_getfd, pfd, OSB_SANDBOX_LOG_FD, 0);
    if (fd < 0)
        return osb_err_sys(err, "take the output pipe of sandbox `%s`", id);
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || fl < 0 || (fl & O_ACCMODE) != O_RDONLY) {
        close(fd);
        return osb_err_set(err, OSB_E_INTERNAL,
                           "sandbox `%s`: its output pipe handle is not a pipe's read end", id);
    }
    return fd;
}

static int attach_log(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                      struct osb_err *err)
{
    if (find_log(rt, id))
        return 0;
    int fd = take_log_pipe(rt, id, h, err);
    struct osb_logdrain *d;
    if (fd < 0 || osb_logdrain_open(rt->loop, fd, h->log_path, OSB_RT_LOG_MAX_BYTES,
                                    OSB_RT_LOG_KEEP_BYTES, &d, err) < 0)
        return -1;
    struct rt_log *l = osb_xcalloc(1, sizeof *l);
    l->rt = rt;
    snprintf(l->id, sizeof l->id, "%s", id);
    l->drain = d;
    l->next = rt->logs;
    rt->logs = l;
    rt->open_handles++;
    return 0;
}

int osb_rt_adopt(struct osb_rt *rt, const char *id, struct osb_rt_handle *h, struct osb_err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    fill_paths(rt, id, h);
    return attach_log(rt, id, h, err);
}

static void destroy_quiet(struct osb_rt *rt, const char *id);

static void finish_create(struct rt_create *c)
{
    struct osb_rt *rt = c->rt;
    struct osb_rt_handle h = {0};
    struct osb_err err = {0};
    c->finished = true;
    unlink_create(rt, c);
    close_create(c);
    int r = parse_result(c->out.data ? c->out.data : "", &h, &err);
    if (c->destroyed)
        r = osb_err_set(&err, OSB_E_NOTFOUND, "sandbox `%s` was destroyed while being created",
                        c->id);
    else if (c->timed_out)
        r = osb_err_set(&err, OSB_E_INTERNAL, "creating sandbox `%s` took over %d ms", c->id,
                        CREATE_TIMEOUT_MS);
    else if (c->out_full)
        r = osb_err_set(&err, OSB_E_INTERNAL, "the helper's result for `%s` exceeds %zu bytes",
                        c->id, c->out.max);
    if (r == 0) {
        kid_add(rt, h.pid);
        fill_paths(rt, c->id, &h);
        r = attach_log(rt, c->id, &h, &err);
    }
    if (r == 0) {
        c->cb(c->ud, &h, NULL);
        return;
    }
    /* The helper cleans up after itself on a reported error; anything
     * else (crash, timeout, destroy) may have left pieces. */
    if (err.code != OSB_E_EXISTS)
        destroy_quiet(rt, c->id);
    osb_err_wrap(&err, "create sandbox `%s`", c->id);
    c->cb(c->ud, NULL, &err);
}

static void on_result_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    static char chunk[4096];
    *buf = uv_buf_init(chunk, sizeof chunk);
}

static void on_result_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct rt_create *c = s->data;
    if (n > 0) {
        if (osb_buf_add(&c->out, buf->base, (size_t)n) < 0)
            c->out_full = true;
        return;
    }
    if (n == 0 || c->finished)
        return;
    uv_read_stop(s);
    kid_reap(c->rt, c->helper);
    finish_create(c);
}

static void on_create_timeout(uv_timer_t *t)
{
    struct rt_create *c = t->data;
    c->timed_out = true;
    kill(c->helper, SIGKILL);
}

static int start_create(struct osb_rt *rt, const struct osb_rt_spec *spec, pid_t helper,
                        int result_fd, osb_rt_create_cb cb, void *ud)
{
    struct rt_create *c = osb_xcalloc(1, sizeof *c);
    c->rt = rt;
    snprintf(c->id, sizeof c->id, "%s", spec->id);
    c->helper = helper;
    c->cb = cb;
    c->ud = ud;
    osb_buf_init(&c->out, 64 * 1024);
    uv_pipe_init(rt->loop, &c->pipe, 0);
    uv_pipe_open(&c->pipe, result_fd);
    c->pipe.data = c;
    uv_timer_init(rt->loop, &c->timer);
    c->timer.data = c;
    uv_timer_start(&c->timer, on_create_timeout, CREATE_TIMEOUT_MS, 0);
    c->open_handles = 2;
    rt->open_handles++;
    c->next = rt->creates;
    rt->creates = c;
    uv_read_start((uv_stream_t *)&c->pipe, on_result_alloc, on_result_read);
    return 0;
}

/* Snapshots stack on their base image, which may itself be a snapshot. */
#define MAX_IMAGE_CHAIN 32

/* The overlay lowerdir of an image: its layers top first, ':'-joined,
 * then its base's, down to a pulled/imported image or the host skeleton
 * (*host: the host's program dirs get bound in). Caller frees. */
static char *image_lowers(struct osb_rt *rt, const char *image, bool *host, char *stored,
                          size_t stored_n, struct osb_err *err)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 20);
    char name[256];
    snprintf(name, sizeof name, "%s", image ? image : OSB_IMG_HOST);
    *host = false;
    struct osb_ref ref;
    if (strcmp(name, OSB_IMG_HOST) != 0 && osb_istore_name_check(name, NULL) < 0 &&
        osb_ref_parse(name, &ref, NULL) < 0) {
        osb_buf_free(&b);
        osb_err_set(err, OSB_E_INVALID, "`%.200s` is not an image name or reference", name);
        return NULL;
    }
    bool full = false;
    for (int depth = 0; depth < MAX_IMAGE_CHAIN; depth++) {
        if (depth == 0 && stored_n)
            snprintf(stored, stored_n, "%s", name);
        if (strcmp(name, OSB_IMG_HOST) == 0) {
            full = osb_buf_addf(&b, "%s%s/%s/rootfs", b.len ? ":" : "", rt->images_dir,
                                OSB_IMG_HOST) < 0;
            if (full)
                break;
            *host = true;
            return osb_buf_steal(&b, NULL);
        }
        struct osb_image im;
        if (osb_istore_get(rt->store, name, &im, err) < 0) {
            osb_buf_free(&b);
            return NULL;
        }
        if (depth == 0 && stored_n) /* the canonical name, for in-use checks */
            snprintf(stored, stored_n, "%s", im.name);
        size_t n = 0;
        while (im.layers && im.layers[n])
            n++;
        int rc = 0;
        for (size_t i = n; i-- > 0;)
            rc |= osb_buf_addf(&b, "%s%s", b.len ? ":" : "", im.layers[i]);
        snprintf(name, sizeof name, "%s", im.base);
        osb_image_free(&im);
        full = rc < 0;
        if (full)
            break;
        if (!name[0])
            return osb_buf_steal(&b, NULL);
    }
    if (full) {
        osb_err_set(err, OSB_E_INVALID, "image `%s`: its layer paths exceed %zu bytes", image,
                    b.max);
        osb_buf_free(&b);
        return NULL;
    }
    osb_buf_free(&b);
    osb_err_set(err, OSB_E_INVALID, "image `%s`: its chain of bases is longer than %d", image,
                MAX_IMAGE_CHAIN);
    return NULL;
}

int osb_rt_create(struct osb_rt *rt, const struct osb_rt_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err)
{
    char dir[PATH_MAX];
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    if (validate_spec(spec, err) < 0)
        return -1;
    sandbox_dir(rt, spec->id, dir, sizeof dir);
    if (access(dir, F_OK) == 0 || find_create(rt, spec->id))
        return osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` already exists", spec->id);
    bool host;
    char stored[256];
    _cleanup_free_ char *lower = image_lowers(rt, spec->image, &host, stored, sizeof stored, err);
    if (!lower || osb_cg_ensure_bases(&rt->plan, err) < 0)
        return -1;
    struct osb_rt_spec s = *spec;
    s.image = stored;
    size_t len;
    _cleanup_free_ char *json = encode_spec(rt, &s, lower, host, &len);
    _cleanup_close_ int spec_fd = spec_memfd(json, len, err);
    if (spec_fd < 0)
        return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    pid_t pid = spawn_helper(rt, spec_fd, p[1], err);
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    kid_add(rt, pid);
    return start_create(rt, &s, pid, p[0], cb, ud);
}

/* ------------------------------------------------------------ watch */

static void on_watch_closed(uv_handle_t *h)
{
    struct rt_watch *w = h->data;
    struct osb_rt *rt = w->rt;
    if (--w->open_handles > 0)
        return;
    close(w->pidfd);
    if (w->report_fd >= 0)
        close(w->report_fd);
    free(w);
    rt->open_handles--;
    maybe_free(rt);
}

static void unlink_watch(struct osb_rt *rt, struct rt_watch *w)
{
    for (struct rt_watch **p = &rt->watches; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void close_watch(struct rt_watch *w)
{
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
    if (w->report_fd >= 0) {
        uv_poll_stop(&w->report);
        uv_close((uv_handle_t *)&w->report, on_watch_closed);
    }
}

/* What the report pipe holds: nothing yet (EAGAIN: 1), or the end. The
 * pipe's content is untrusted: one bounded read, parsed strictly. */
static int read_report(struct rt_watch *w, struct osb_rt_end *end)
{
    *end = (struct osb_rt_end){.how = OSB_RT_END_PID1_EXITED};
    if (w->report_fd < 0)
        return 0;
    char buf[OSB_ENDREPORT_MAX + 1];
    ssize_t n = OSB_RETRY(read(w->report_fd, buf, sizeof buf));
    if (n < 0 && errno == EAGAIN)
        return 1;
    if (n <= 0)
        return 0;
    end->how = osb_endreport_parse(buf, (size_t)n, &end->report) == 0 ? OSB_RT_END_REPORTED
                                                                      : OSB_RT_END_BAD_REPORT;
    return 0;
}

static void finish_watch(struct rt_watch *w, const struct osb_rt_end *end)
{
    struct osb_rt *rt = w->rt;
    kid_reap(rt, w->pid);
    unlink_watch(rt, w);
    char id[sizeof w->id];
    snprintf(id, sizeof id, "%s", w->id);
    osb_rt_exit_cb cb = w->cb;
    void *ud = w->ud;
    close_watch(w);
    cb(ud, id, end);
}

/* PID 1 is gone; a report it wrote first is still in the pipe. */
static void on_pidfd(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct rt_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        end.how = OSB_RT_END_PID1_EXITED;
    finish_watch(w, &end);
}

/* A line (or EOF: execd gone without one, its pidfd fires too). */
static void on_report(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    struct rt_watch *w = p->data;
    struct osb_rt_end end;
    if (read_report(w, &end) > 0)
        return;
    finish_watch(w, &end);
}

static void cancel_watches(struct osb_rt *rt, const char *id)
{
    for (struct rt_watch *w = rt->watches, *next; w; w = next) {
        next = w->next;
        if (strcmp(w->id, id) == 0) {
            unlink_watch(rt, w);
            close_watch(w);
        }
    }
}

bool osb_rt_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h)
{
    (void)rt;
    (void)id;
    uint64_t start;
    char state;
    if (!h || h->pid <= 0 || !proc_stat(h->pid, &start, &state))
        return false;
    return start == h->start_time && state != 'Z' && state != 'X';
}

/* A copy of the read end of execd's report pipe (OSB_SANDBOX_REPORT_FD),
 * non-blocking; -1 when there is none (a sandbox started before execd had
 * one: only its exit is seen then) or it is not a pipe's read end. */
static int take_report(int pidfd)
{
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, OSB_SANDBOX_REPORT_FD, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode) || fl < 0 || (fl & O_ACCMODE) != O_RDONLY ||
        fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int osb_rt_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (fd < 0 && errno != ESRCH)
        return osb_err_sys(err, "pidfd_open %d", (int)h->pid);
    /* Checked after opening the pidfd: if the pid was reused in between,
     * the start time tells. */
    if (fd < 0 || !osb_rt_alive(rt, id, h)) {
        if (fd >= 0)
            close(fd);
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` is not running (pid %d)", id,
                           (int)h->pid);
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct rt_watch *w = osb_xcalloc(1, sizeof *w);
    w->rt = rt;
    snprintf(w->id, sizeof w->id, "%s", id);
    w->pid = h->pid;
    w->pidfd = fd;
    w->cb = cb;
    w->ud = ud;
    uv_poll_init(rt->loop, &w->poll, fd);
    w->poll.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_pidfd);
    w->open_handles = 1;
    w->report_fd = take_report(fd);
    if (w->report_fd >= 0) {
        uv_poll_init(rt->loop, &w->report, w->report_fd);
        w->report.data = w;
        uv_poll_start(&w->report, UV_READABLE, on_report);
        w->open_handles++;
    }
    rt->open_handles++;
    w->next = rt->watches;
    rt->watches = w;
    return 0;
}

/* ------------------------------------------------------------ pause, destroy */

static int set_frozen(struct osb_rt *rt, const char *id, bool freeze, struct osb_err *err)
{
    struct osb_cg_set s;
    if (check_id(id, err) < 0)
        return -1;
    load_set(rt, id, &s);
    if (!osb_cg_exists(&s))
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` not found", id);
    if (osb_cg_freeze(&s, freeze, err) < 0)
        return osb_err_wrap(err, "%s `%s`", freeze ? "pause" : "resume", id);
    return 0;
}

int osb_rt_pause(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return set_frozen(rt, id, true, err);
}

int osb_rt_resume(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    return set_frozen(rt, id, false, err);
}

/* ------------------------------------------------------------ snapshot */

struct rt_snap {
    uv_work_t work;
    struct osb_rt *rt;
    char id[OSB_RT_ID_MAX + 1];
    int upper;
    char *dst;
    int rc;
    struct osb_err err;
    osb_rt_snapshot_cb cb;
    void *ud;
};

/* A copy of the O_PATH fd execd keeps of the writable layer. pidfd_open
 * first, then the liveness check: the pidfd pins the process the handle
 * names, so the fd cannot come from a recycled pid. */
static int take_upper(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                      struct osb_err *err)
{
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (pfd < 0 || !osb_rt_alive(rt, id, h))
        return osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` is not running", id);
    _cleanup_close_ int path = (int)syscall(SYS_pidfd_getfd, pfd, OSB_SANDBOX_LAYER_FD, 0);
    if (path < 0)
        return osb_err_sys(err, "take the writable layer of sandbox `%s`", id);
    /* execd holds an O_PATH handle; reading the directory needs a real one. */
    int fd = openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open the writable layer of sandbox `%s`", id);
    struct statfs sf;
    struct stat st;
    if (fstatfs(fd, &sf) < 0 || sf.f_type != TMPFS_MAGIC || fstat(fd, &st) < 0 ||
        !S_ISDIR(st.st_mode)) {
        close(fd);
        return osb_err_set(err, OSB_E_INTERNAL,
                           "sandbox `%s`: its writable layer handle is not a tmpfs directory", id);
    }
    return fd;
}

static void snap_work(uv_work_t *w)
{
    struct rt_snap *sn = w->data;
    sn->rc = osb_layer_copy_tree(sn->upper, sn->dst, &sn->err);
}

static void snap_done(uv_work_t *w, int status)
{
    struct rt_snap *sn = w->data;
    struct osb_rt *rt = sn->rt;
    close(sn->upper);
    if (status < 0 && sn->rc == 0)
        sn->rc = osb_err_set(&sn->err, OSB_E_INTERNAL, "snapshot of `%s` cancelled", sn->id);
    /* The sandbox may be gone meanwhile: thawing it then fails harmlessly. */
    set_frozen(rt, sn->id, false, NULL);
    rt->open_handles--;
    if (!rt->closing)
        sn->cb(sn->ud, sn->rc < 0 ? &sn->err : NULL);
    free(sn->dst);
    free(sn);
    maybe_free(rt);
}

int osb_rt_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_snapshot_cb cb, void *ud, struct osb_err *err)
{
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    int upper = take_upper(rt, id, h, err);
    if (upper < 0)
        return -1;
    if (set_frozen(rt, id, true, err) < 0) {
        close(upper);
        return -1;
    }
    struct rt_snap *sn = osb_xcalloc(1, sizeof *sn);
    sn->rt = rt;
    snprintf(sn->id, sizeof sn->id, "%s", id);
    sn->upper = upper;
    sn->dst = osb_xstrdup(dst_dir);
    sn->cb = cb;
    sn->ud = ud;
    sn->work.data = sn;
    rt->open_handles++;
    uv_queue_work(rt->loop, &sn->work, snap_work, snap_done);
    return 0;
}

/* A helper still building this sandbox: stop it first so that it cannot
 * create anything after we cleaned up. */
static void stop_helper(struct osb_rt *rt, const char *id)
{
    struct rt_create *c = find_create(rt, id);
    if (!c)
        return;
    c->destroyed = true;
    kill(c->helper, SIGKILL);
    if (OSB_RETRY(waitpid(c->helper, NULL, 0)) == c->helper)
        for (size_t i = 0; i < rt->n_kids; i++)
            if (rt->kids[i] == c->helper) {
                rt->kids[i] = rt->kids[--rt->n_kids];
                break;
            }
}

/* Everything in the sandbox dir but its log. */
static int remove_all_but_log(const char *dir, struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open `%s`", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, OSB_SANDBOX_LOG) == 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (osb_rtfs_remove_tree(path, err) < 0)
            return -1;
    }
    return 0;
}

static int destroy_id(struct osb_rt *rt, const char *id, bool keep_log, struct osb_err *err)
{
    char dir[PATH_MAX];
    struct osb_cg_set s;
    cancel_watches(rt, id);
    close_log(rt, id, keep_log);
    stop_helper(rt, id);
    sandbox_dir(rt, id, dir, sizeof dir);
    osb_cg_set_load(&rt->plan, id, dir, &s);
    if (osb_cg_kill(&s, err) < 0 || osb_cg_remove(&s, err) < 0 ||
        (keep_log ? remove_all_but_log(dir, err) : osb_rtfs_remove_tree(dir, err)) < 0)
        return osb_err_wrap(err, "%s sandbox `%s`", keep_log ? "stop" : "destroy", id);
    /* Reap PID 1 now if it is already gone; SIGCHLD catches it otherwise. */
    on_sigchld(&rt->sigchld, SIGCHLD);
    return 0;
}

static void destroy_quiet(struct osb_rt *rt, const char *id)
{
    struct osb_err err = {0};
    if (destroy_id(rt, id, false, &err) < 0)
        osb_warn("%s", err.msg);
}

int osb_rt_destroy(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    return destroy_id(rt, id, false, err);
}

int osb_rt_stop(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    if (check_id(id, err) < 0)
        return -1;
    return destroy_id(rt, id, true, err);
}

/* ------------------------------------------------------------ orphans */

static bool known_id(const char *const *known, const char *id)
{
    for (size_t i = 0; known && known[i]; i++)
        if (strcmp(known[i], id) == 0)
            return true;
    return false;
}

static int destroy_unknown_in(struct osb_rt *rt, const char *dir, const char *const *known,
                              struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return 0;
    int r = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || !valid_id(e->d_name) || known_id(known, e->d_name) ||
            find_create(rt, e->d_name))
            continue;
        osb_info("removing orphaned sandbox %s", e->d_name);
        struct osb_err one = {0};
        if (destroy_id(rt, e->d_name, false, &one) < 0) {
            if (r == 0 && err)
                *err = one;
            r = -1;
        }
    }
    return r;
}

int osb_rt_cleanup_orphans(struct osb_rt *rt, const char *const *known, struct osb_err *err)
{
    int r = destroy_unknown_in(rt, rt->sandboxes_dir, known, err);
    for (size_t i = 0; i < rt->plan.n; i++)
        if (destroy_unknown_in(rt, rt->plan.bases[i].base, known, err) < 0)
            r = -1;
    return r;
}

/* ------------------------------------------------------------ stats */

int osb_rt_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out, struct osb_err *err)
{
    struct osb_cg_set s;
    struct osb_cg_stats st;
    if (check_id(id, err) < 0)
        return -1;
    load_set(rt, id, &s);
    if (osb_cg_stats(&s, &st, err) < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` not found", id);
    *out = (struct osb_rt_stats){st.memory_bytes, st.cpu_usage_ns, st.pids};
    return 0;
}

/* ------------------------------------------------------------ images */

struct osb_istore *osb_rt_images(struct osb_rt *rt)
{
    return rt->store;
}

bool osb_rt_image_in_use(struct osb_rt *rt, const char *name, char *by, size_t n)
{
    /* Sandbox records hold the stored name ("docker.io/library/x:1"). */
    struct osb_image im;
    if (strcmp(name, OSB_IMG_HOST) != 0 && osb_istore_get(rt->store, name, &im, NULL) == 0) {
        bool used = osb_img_user_of(rt->sandboxes_dir, im.name, by, n);
        osb_image_free(&im);
        return used;
    }
    return osb_img_user_of(rt->sandboxes_dir, name, by, n);
}

static bool in_use_cb(void *ud, const char *name)
{
    return osb_rt_image_in_use(ud, name, NULL, 0);
}

int osb_rt_image_import(struct osb_rt *rt, const char *name, const char *tar_path,
                        struct osb_err *err)
{
    if (strcmp(name, OSB_IMG_HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "`host` is the built-in image's name");
    return osb_istore_import(rt->store, name, tar_path, err);
}

int osb_rt_image_remove(struct osb_rt *rt, const char *name, struct osb_err *err)
{
    if (strcmp(name, OSB_IMG_HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "the built-in `host` image cannot be removed");
    char by[OSB_RT_ID_MAX + 1];
    if (osb_rt_image_in_use(rt, name, by, sizeof by))
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` is in use by sandbox `%s`", name, by);
    return osb_istore_remove(rt->store, name, in_use_cb, rt, err);
}

int osb_rt_image_list(struct osb_rt *rt, struct osb_rt_image *out, size_t max,
                      struct osb_err *err)
{
    if (max == 0)
        return 0;
    out[0] = (struct osb_rt_image){.name = OSB_IMG_HOST};
    char host[PATH_MAX];
    struct stat st;
    snprintf(host, sizeof host, "%s/%s", rt->images_dir, OSB_IMG_HOST);
    if (stat(host, &st) == 0)
        out[0].created_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    struct osb_image *ims;
    size_t n, k = 1;
    if (osb_istore_list(rt->store, &ims, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (k < max) {
            snprintf(out[k].name, sizeof out[k].name, "%s", ims[i].name);
            out[k].size_bytes = ims[i].size_bytes;
            out[k].created_ms = ims[i].created_ms;
            k++;
        }
        osb_image_free(&ims[i]);
    }
    free(ims);
    return (int)k;
}

bool osb_rt_image_exists(struct osb_rt *rt, const char *name)
{
    bool host;
    char *lower = image_lowers(rt, name, &host, NULL, 0, NULL);
    free(lower);
    return lower != NULL;
}
