/* Create on the thread pool: the bundle, then a child in a private mount
 * namespace mounts the writable tmpfs and the overlay root and execs
 * `runsc create`, whose gofer inherits that namespace (so the mounts live
 * exactly as long as the sandbox, and none is left on the host), with the
 * host image's binds and the volumes' sources (mounts.c) attached; then
 * `runsc start` and a wait for execd's socket. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fstree.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "runtime/gvisor/state.h"

struct osb_gv_create {
    struct osb_gv *rt;
    struct osb_gv_create *next;
    uv_work_t work;
    char id[OSB_RT_ID_MAX + 1];
    char dir[PATH_MAX];
    char *lower; /* overlay lowerdir= value */
    int64_t disk;
    bool network;
    struct osb_gv_trees trees;
    bool report;   /* not keep_running: execd reports the entrypoint's end */
    int report_fd; /* during build: the report FIFO, runsc create's stdin */
    osb_rt_create_cb cb;
    void *ud;
    struct osb_rt_handle h;
    struct osb_err err;
    int rc;
    bool destroyed;
};

static int copy_file(const char *src, const char *dst, struct osb_err *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return osb_err_sys(err, "open %s", src);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return osb_err_sys(err, "create %s", dst);
    }
    ssize_t n;
    while ((n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0)) > 0)
        ;
    int rc = n < 0 ? osb_err_sys(err, "copy %s", src) : 0;
    close(in);
    close(out);
    return rc;
}

/* The forked child: only system calls until exec (the parent has
 * threads). */
static void child_exec(const char *dir, const char *tmpfs_opts, const char *ovl_opts,
                       const struct osb_gv_trees *trees, char *const *argv, int log_fd, int in_fd)
{
    char rw[PATH_MAX + 8], upper[PATH_MAX + 16], work[PATH_MAX + 16], root[PATH_MAX + 8];
    snprintf(rw, sizeof rw, "%s/rw", dir);
    snprintf(upper, sizeof upper, "%s/rw/upper", dir);
    snprintf(work, sizeof work, "%s/rw/work", dir);
    snprintf(root, sizeof root, "%s/rootfs", dir);
    const char *step = "stdio";
    if (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0 ||
        (step = "unshare", unshare(CLONE_NEWNS)) < 0 ||
        (step = "private mounts", mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) < 0 ||
        (step = "tmpfs", mount("tmpfs", rw, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_opts)) < 0 ||
        (step = "upper dir", mkdir(upper, 0755)) < 0 ||
        (step = "work dir", mkdir(work, 0700)) < 0 ||
        (step = "overlay", mount("overlay", root, "overlay", MS_NODEV, ovl_opts)) < 0 ||
        (step = osb_gv_trees_attach(trees, dir)) != NULL) {
        dprintf(2, "gvisor: preparing the root (%s): %s\n", step, strerror(errno));
        _exit(126);
    }
    int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
    if (in >= 0)
        dup2(in, 0);
    execv(argv[0], argv);
    dprintf(2, "gvisor: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static int run_create(struct osb_gv_create *c, int log_fd, struct osb_err *err)
{
    const struct osb_gv *rt = c->rt;
    char tmpfs_opts[64], ovl_opts[PATH_MAX * 4], rootf[PATH_MAX + 8], plat[64], bundle[PATH_MAX];
    snprintf(tmpfs_opts, sizeof tmpfs_opts, "size=%lld,mode=0755", (long long)c->disk);
    int w =
        snprintf(ovl_opts, sizeof ovl_opts, "lowerdir=%s,upperdir=%s/rw/upper,workdir=%s/rw/work",
                 c->lower, c->dir, c->dir);
    if (w < 0 || (size_t)w >= sizeof ovl_opts)
        return osb_err_set(err, OSB_E_INVALID, "too many image layers for one overlay mount");
    snprintf(rootf, sizeof rootf, "--root=%s", rt->root_dir);
    snprintf(plat, sizeof plat, "--platform=%s", rt->platform);
    snprintf(bundle, sizeof bundle, "--bundle=%s", c->dir);
    /* The Sentry and the gofer inherit create's debug flags; runsc names
     * each file by command and time (this version has no %ID%). */
    char debug[PATH_MAX + 32];
    snprintf(debug, sizeof debug, "--debug-log=%s/debug/", c->dir);
    char *argv[12] = {rt->runsc, rootf, plat, c->network ? "--network=host" : "--network=none",
                      "--host-uds=create"};
    size_t n = 5;
    if (rt->debug) {
        argv[n++] = "--debug";
        argv[n++] = debug;
    }
    argv[n++] = "create";
    argv[n++] = bundle;
    argv[n++] = c->id;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        return osb_err_sys(err, "fork");
    if (pid == 0)
        child_exec(c->dir, tmpfs_opts, ovl_opts, &c->trees, argv, log_fd, c->report_fd);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return osb_err_sys(err, "waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char tail[512];
        osb_gv_log_tail(log_fd, tail, sizeof tail);
        return osb_err_set(err, OSB_E_INTERNAL, "runsc create failed: %s", tail);
    }
    return 0;
}

static uint64_t start_time_of(pid_t pid)
{
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    ssize_t n = osb_fs_read(p, buf, sizeof buf);
    char *rp = n > 0 ? strrchr(buf, ')') : NULL;
    if (!rp)
        return 0;
    /* field 22; after ")" come fields 3.. */
    char *s = rp + 2;
    for (int f = 3; f < 22 && s; f++) {
        s = strchr(s, ' ');
        s = s ? s + 1 : NULL;
    }
    return s ? strtoull(s, NULL, 10) : 0;
}

/* execd binds its socket once it runs; connect() proves it listens. */
static int wait_socket(struct osb_gv_create *c, struct osb_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", c->h.sock_path);
    struct timespec t0, now, pause = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return osb_err_sys(err, "socket");
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        close(fd);
        if (rc == 0)
            return 0;
        if (kill(c->h.pid, 0) < 0)
            return osb_err_set(err, OSB_E_INTERNAL,
                               "the gvisor sandbox `%s` exited before execd "
                               "listened (see its log)",
                               c->id);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 60)
            return osb_err_set(err, OSB_E_INTERNAL,
                               "execd in gvisor sandbox `%s` did not listen "
                               "within 60 s",
                               c->id);
        nanosleep(&pause, NULL);
    }
}

static int build(struct osb_gv_create *c, struct osb_err *err)
{
    char status[32];
    snprintf(c->h.log_path, sizeof c->h.log_path, "%s/log", c->dir);
    int log_fd = osb_gv_fifo(c->dir, OSB_GV_LOG_FIFO, err);
    if (log_fd < 0)
        return -1;
    c->report_fd = c->report ? osb_gv_fifo(c->dir, OSB_GV_REPORT_FIFO, err) : -1;
    int rc = c->report && c->report_fd < 0 ? -1 : run_create(c, log_fd, err);
    close(log_fd);
    if (c->report_fd >= 0)
        close(c->report_fd);
    const char *start[] = {"start", c->id, NULL};
    struct osb_buf out;
    osb_buf_init(&out, 64u << 10);
    if (rc == 0)
        rc = osb_gv_runsc(c->rt, c->network, start, -1, &out, err);
    osb_buf_free(&out);
    if (rc == 0)
        rc = osb_gv_state(c->rt, c->id, &c->h.pid, status, sizeof status, err);
    if (rc == 0)
        c->h.start_time = start_time_of(c->h.pid);
    return rc == 0 && wait_socket(c, err) == 0 ? osb_gv_lock_sock_dir(c->dir, err) : -1;
}

static void work_cb(uv_work_t *w)
{
    struct osb_gv_create *c = w->data;
    c->rc = build(c, &c->err);
}

static void unlink_create(struct osb_gv_create *c)
{
    for (struct osb_gv_create **p = &c->rt->creates; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            return;
        }
}

static void after_cb(uv_work_t *w, int status)
{
    struct osb_gv_create *c = w->data;
    struct osb_gv *rt = c->rt;
    unlink_create(c);
    rt->open_handles--;
    if (status < 0 && c->rc == 0)
        c->rc = osb_err_set(&c->err, OSB_E_INTERNAL, "create of `%s` cancelled", c->id);
    if (c->rc == 0 && (c->destroyed || rt->closing))
        c->rc = osb_err_set(&c->err, OSB_E_NOTFOUND,
                            "sandbox `%s` was deleted while it was "
                            "being created",
                            c->id);
    if (c->rc == 0 && !rt->closing)
        c->rc = osb_gv_attach_log(rt, c->id, &c->h, &c->err);
    if (c->rc < 0)
        osb_gv_teardown(rt, c->id, false);
    if (!rt->closing)
        c->cb(c->ud, c->rc == 0 ? &c->h : NULL, c->rc == 0 ? NULL : &c->err);
    osb_gv_trees_close(&c->trees);
    free(c->lower);
    free(c);
}

static int check_spec(const struct osb_sandbox_spec *s, struct osb_err *err)
{
    if (osb_gv_check_id(s->id, err) < 0)
        return -1;
    if (!s->layers || (!s->layers[0] && !s->image_host) || !s->entrypoint || !s->entrypoint[0] ||
        !s->execd_token)
        return osb_err_set(err, OSB_E_INVALID, "spec of `%s` lacks layers, entrypoint or token",
                           s->id);
    for (size_t i = 0; s->layers[i]; i++)
        if (strpbrk(s->layers[i], ",:\\\n"))
            return osb_err_set(err, OSB_E_INVALID, "layer path `%s` cannot be an overlay lower dir",
                               s->layers[i]);
    return 0;
}

/* The overlay's lowerdir= value, top layer first (checked for ',' and ':'
 * by check_spec), then the host image's skeleton when it lies beneath. */
static char *join_layers(char *const *layers, const char *host)
{
    size_t n = 1 + (host ? strlen(host) + 1 : 0);
    for (size_t i = 0; layers[i]; i++)
        n += strlen(layers[i]) + 1;
    char *out = osb_xmalloc(n);
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; layers[i]; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", i ? ":" : "", layers[i]);
    if (host)
        snprintf(out + k, n - k, "%s%s", k ? ":" : "", host);
    return out;
}

static int prepare_dir(struct osb_gv *rt, const struct osb_sandbox_spec *s, const char *dir,
                       struct osb_err *err)
{
    static const char *const subs[] = {"sock", "bin", "rootfs", "rw", "vol", "tmp", "shm"};
    if (mkdir(dir, 0700) < 0)
        return errno == EEXIST ? osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` exists", s->id)
                               : osb_err_sys(err, "mkdir %s", dir);
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/%s", dir, subs[i]);
        if (mkdir(p, 0755) < 0)
            return osb_err_sys(err, "mkdir %s", p);
    }
    char bin[PATH_MAX + 16];
    snprintf(bin, sizeof bin, "%s/bin/execd", dir);
    if (copy_file(rt->execd_path, bin, err) < 0)
        return -1;
    return osb_gv_write_bundle(rt, s, dir, err);
}

int osb_gv_create(struct osb_rt *base, const struct osb_sandbox_spec *s, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err)
{
    struct osb_gv *rt = osb_gv_of(base);
    if (check_spec(s, err) < 0)
        return -1;
    struct osb_gv_create *c = osb_xcalloc(1, sizeof *c);
    c->rt = rt;
    c->trees = (struct osb_gv_trees){.bin = -1};
    snprintf(c->id, sizeof c->id, "%s", s->id);
    osb_gv_dir(rt, s->id, c->dir, sizeof c->dir);
    snprintf(c->h.sock_path, sizeof c->h.sock_path, "%s/sock/" OSB_GV_SOCK_NAME, c->dir);
    if (strlen(c->h.sock_path) >= sizeof((struct sockaddr_un *)0)->sun_path) {
        free(c);
        return osb_err_set(err, OSB_E_INVALID, "state dir too long for execd's socket path");
    }
    if (prepare_dir(rt, s, c->dir, err) < 0 ||
        osb_gv_trees_open(rt, s, c->dir, &c->trees, err) < 0) {
        osb_gv_trees_close(&c->trees);
        if (err->code != OSB_E_EXISTS)
            osb_fs_discard_tree(c->dir);
        free(c);
        return -1;
    }
    c->lower = join_layers(s->layers, s->image_host ? rt->host_root : NULL);
    c->disk = s->disk_bytes ? s->disk_bytes : OSB_LIMIT_DEFAULT_DISK;
    c->network = s->netns != NULL;
    c->report = !s->keep_running;
    c->cb = cb;
    c->ud = ud;
    c->work.data = c;
    c->next = rt->creates;
    rt->creates = c;
    rt->open_handles++;
    uv_queue_work(rt->loop, &c->work, work_cb, after_cb);
    return 0;
}

bool osb_gv_cancel_create(struct osb_gv *rt, const char *id)
{
    for (struct osb_gv_create *c = rt->creates; c; c = c->next)
        if (strcmp(c->id, id) == 0) {
            c->destroyed = true;
            return true;
        }
    return false;
}
