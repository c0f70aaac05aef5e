/* Create: validate (validate.c), encode the helper's spec (init/spec.h)
 * into a memfd, spawn (spawn.h) the static osb-sandbox-init helper (fd 0 =
 * spec, fd 1 = result pipe, fd 3 = the sandboxes' sysfs), watch the pipe
 * with uv_pipe; the helper's one-line result becomes the callback. The
 * helper does every blocking step (mkdir, cgroups, clone, mounts), so the
 * loop only pays for the spawn. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "runtime/init/spec.h"
#include "runtime/native/spawn.h"
#include "runtime/native/state.h"

/* A helper that has not answered by then is killed and its sandbox torn
 * down: creating takes ~10 ms, so this only catches a wedged kernel. */
#define CREATE_TIMEOUT_MS 30000

/* ------------------------------------------------------------ the helper's spec */

/* The overlay lowerdir: the image's layers top first, ':'-joined, then the
 * host skeleton for the host image. Caller frees. */
static char *lowerdir(const struct osb_nat *rt, const struct osb_sandbox_spec *s)
{
    size_t len = 1;
    for (size_t i = 0; s->layers && s->layers[i]; i++)
        len += strlen(s->layers[i]) + 1;
    char host[PATH_MAX];
    snprintf(host, sizeof host, "%s/%s/rootfs", rt->images_dir, OSB_IMG_HOST);
    len += strlen(host);
    char *out = osb_xcalloc(1, len);
    size_t k = 0;
    for (size_t i = 0; s->layers && s->layers[i]; i++)
        k += (size_t)snprintf(out + k, len - k, "%s%s", k ? ":" : "", s->layers[i]);
    if (s->image_host)
        snprintf(out + k, len - k, "%s%s", k ? ":" : "", host);
    return out;
}

/* The init spec's view of s->volumes (strings borrowed); caller frees. */
static struct osb_init_volume *init_volumes(const struct osb_sandbox_spec *s)
{
    struct osb_init_volume *iv = osb_xcalloc(s->n_volumes + 1, sizeof *iv);
    for (size_t i = 0; i < s->n_volumes; i++) {
        const struct osb_rt_volume *v = &s->volumes[i];
        iv[i] = (struct osb_init_volume){(char *)v->name,
                                         (char *)v->src_root,
                                         (char *)(v->src_rel ? v->src_rel : ""),
                                         (char *)(v->sub_path ? v->sub_path : ""),
                                         (char *)v->dst,
                                         v->read_only};
    }
    return iv;
}

/* The helper's spec: the validated spec plus every path it needs. */
static char *encode_spec(struct osb_nat *rt, const struct osb_sandbox_spec *s, uint32_t userns,
                         size_t *len)
{
    char dir[PATH_MAX], hostname[16];
    osb_nat_sandbox_dir(rt, s->id, dir, sizeof dir);
    snprintf(hostname, sizeof hostname, "%.12s", s->id);
    struct osb_cg_set set;
    osb_cg_set_for(&rt->plan, s->id, &set);
    struct osb_init_cgroup cgs[OSB_CG_NROLES];
    for (size_t i = 0; i < set.n; i++)
        cgs[i] = (struct osb_init_cgroup){set.role[i], set.dir[i], rt->plan.bases[i].home};
    _cleanup_free_ char *lower = lowerdir(rt, s);
    struct osb_init_spec is = {
        .id = s->id,
        .dir = dir,
        .image = s->image ? s->image : OSB_IMG_HOST,
        .lower = lower,
        .execd = rt->execd_path,
        .hostname = s->hostname ? s->hostname : hostname,
        .token = s->execd_token,
        .entrypoint = s->entrypoint,
        .keep_running = s->keep_running,
        .background = s->background,
        .workdir = s->workdir,
        .user = s->user,
        .netns = s->netns,
        .dns = s->dns,
        .env = s->env,
        .binds = s->image_host ? rt->host.binds : NULL,
        .n_binds = s->image_host ? rt->host.n_binds : 0,
        .cgroups = cgs,
        .n_cgroups = set.n,
        .memory_bytes = s->memory_bytes,
        .cpu_millicores = s->cpu_millicores,
        .pids_max = s->pids_max ? s->pids_max : OSB_LIMIT_DEFAULT_PIDS,
        .disk_bytes = s->disk_bytes ? s->disk_bytes : OSB_LIMIT_DEFAULT_DISK,
    };
    _cleanup_free_ struct osb_init_volume *vols = init_volumes(s);
    is.volumes = vols;
    is.n_volumes = s->n_volumes;
    is.userns_first = userns;
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

/* fd 0 the spec, 1 the result pipe, 2 the server's stderr (where the
 * helper's trace goes, when the server has one), 3 the sandboxes' sysfs. */
static pid_t spawn_helper(struct osb_nat *rt, int spec_fd, int result_fd, struct osb_err *err)
{
    struct osb_nat_fdmap map[4] = {
        {spec_fd, 0}, {result_fd, 1}, {rt->sysfs_fd, OSB_INIT_SYSFS_FD}, {2, 2}};
    size_t n = fcntl(2, F_GETFD) < 0 ? 3 : 4;
    if (!rt->spawn_stack)
        rt->spawn_stack = osb_xmalloc(OSB_NAT_SPAWN_STACK);
    return osb_nat_spawn(rt->init_path, map, n, rt->spawn_stack, err);
}

/* ------------------------------------------------------------ the helper's result */

static void on_create_closed(uv_handle_t *h)
{
    struct osb_nat_create *c = h->data;
    if (--c->open_handles > 0)
        return;
    osb_buf_free(&c->out);
    struct osb_nat *rt = c->rt;
    free(c);
    rt->open_handles--;
    osb_nat_maybe_free(rt);
}

void osb_nat_close_create(struct osb_nat_create *c)
{
    uv_close((uv_handle_t *)&c->pipe, on_create_closed);
    uv_close((uv_handle_t *)&c->timer, on_create_closed);
}

static void unlink_create(struct osb_nat *rt, struct osb_nat_create *c)
{
    for (struct osb_nat_create **p = &rt->creates; *p; p = &(*p)->next)
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

static void finish_create(struct osb_nat_create *c)
{
    struct osb_nat *rt = c->rt;
    struct osb_rt_handle h = {0};
    struct osb_err err = {0};
    c->finished = true;
    unlink_create(rt, c);
    osb_nat_close_create(c);
    int r = parse_result(c->out.data ? c->out.data : "", &h, &err);
    if (c->destroyed)
        r = osb_err_set(&err, OSB_E_NOTFOUND, "sandbox `%s` was destroyed while being created",
                        c->id);
    else if (c->timed_out)
        r = osb_err_set(&err, OSB_E_INTERNAL, "creating sandbox `%s` took over %d ms", c->id,
                        CREATE_TIMEOUT_MS);
    if (r == 0) {
        osb_nat_kid_add(rt, h.pid, false);
        osb_nat_fill_paths(rt, c->id, &h);
        r = osb_nat_attach_log(rt, c->id, &h, &err);
    }
    if (r == 0) {
        c->cb(c->ud, &h, NULL);
        return;
    }
    /* The helper cleans up after itself on a reported error; anything
     * else (crash, timeout, destroy) may have left pieces. */
    if (err.code != OSB_E_EXISTS)
        osb_nat_destroy_quiet(rt, c->id);
    osb_err_wrap(&err, "create sandbox `%s`", c->id);
    c->cb(c->ud, NULL, &err);
}

static void on_result_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    struct osb_nat_create *c = h->data;
    *buf = uv_buf_init(c->chunk, sizeof c->chunk);
}

static void on_result_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct osb_nat_create *c = s->data;
    if (n > 0) {
        /* A helper does not write 64 KiB: it is broken; its EOF follows. */
        if (osb_buf_add(&c->out, buf->base, (size_t)n) < 0)
            kill(c->helper, SIGKILL);
        return;
    }
    if (n == 0 || c->finished)
        return;
    uv_read_stop(s);
    osb_nat_kid_reap(c->rt, c->helper);
    finish_create(c);
}

static void on_create_timeout(uv_timer_t *t)
{
    struct osb_nat_create *c = t->data;
    c->timed_out = true;
    kill(c->helper, SIGKILL);
}

static void start_create(struct osb_nat *rt, const struct osb_sandbox_spec *spec, pid_t helper,
                         int result_fd, osb_rt_create_cb cb, void *ud)
{
    struct osb_nat_create *c = osb_xcalloc(1, sizeof *c);
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
}

/* Spawn the helper with the encoded spec; *result_fd: its result pipe. */
static pid_t start_helper(struct osb_nat *rt, const struct osb_sandbox_spec *spec, uint32_t userns,
                          int *result_fd, struct osb_err *err)
{
    size_t len;
    _cleanup_free_ char *enc = encode_spec(rt, spec, userns, &len);
    if (!enc)
        return osb_err_set(err, OSB_E_INVALID, "sandbox `%s`: the spec is too large", spec->id);
    _cleanup_close_ int spec_fd = spec_memfd(enc, len, err);
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
    *result_fd = p[0];
    return pid;
}

int osb_nat_create(struct osb_rt *base, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                   void *ud, struct osb_err *err)
{
    struct osb_nat *rt = osb_nat_of(base);
    char dir[PATH_MAX];
    int c_fd = -1;
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    if (osb_nat_validate(spec, err) < 0)
        return -1;
    osb_nat_sandbox_dir(rt, spec->id, dir, sizeof dir);
    if (access(dir, F_OK) == 0 || osb_nat_find_create(rt, spec->id))
        return osb_err_set(err, OSB_E_EXISTS, "sandbox `%s` already exists", spec->id);
    if (osb_cg_ensure_bases(&rt->plan, err) < 0)
        return -1;
    uint32_t userns = 0;
    if (rt->userns && osb_idr_alloc(&rt->idr, spec->id, &userns, err) < 0)
        return osb_err_wrap(err, "sandbox `%s`", spec->id);
    pid_t pid = start_helper(rt, spec, userns, &c_fd, err);
    if (pid < 0) {
        osb_idr_release(&rt->idr, spec->id);
        return -1;
    }
    osb_nat_kid_add(rt, pid, true); /* it exits once it reported */
    start_create(rt, spec, pid, c_fd, cb, ud);
    return 0;
}
