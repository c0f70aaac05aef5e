/* Snapshots: freeze the sandbox, hand the caller's copy function a
 * descriptor of its writable layer on the thread pool, rewrite the copy
 * into the form every mode restores from (idshift.h), thaw. The layer is
 * reached through a descriptor execd keeps for it (OSB_SANDBOX_LAYER_FD),
 * taken with pidfd_getfd: no path reaches it once the old root is gone. */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fstree.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/init/spec.h"
#include "runtime/idshift.h"
#include "runtime/native/state.h"

struct nat_snap {
    uv_work_t work;
    struct osb_nat *rt;
    char id[OSB_RT_ID_MAX + 1];
    int upper;
    uint32_t userns; /* the sandbox's range, or 0 */
    char *dst;
    osb_rt_copy_fn copy;
    int rc;
    struct osb_err err;
    osb_rt_snapshot_cb cb;
    void *ud;
};

/* A copy of the O_PATH fd execd keeps of the writable layer. pidfd_open
 * first, then the liveness check: the pidfd pins the process the handle
 * names, so the fd cannot come from a recycled pid. */
static int take_upper(struct osb_nat *rt, const char *id, const struct osb_rt_handle *h,
                      struct osb_err *err)
{
    _cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, h->pid, 0);
    if (pfd < 0 || !osb_nat_alive(&rt->base, id, h))
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

/* The sandbox's range from its record, not the pool: a sandbox made in
 * the other mode before a restart keeps the mode it was made in. */
static uint32_t range_of(const struct osb_nat *rt, const char *id)
{
    char path[PATH_MAX], buf[64];
    snprintf(path, sizeof path, "%s/%s/%s", rt->sandboxes_dir, id, OSB_SANDBOX_USERNS);
    unsigned long long first;
    if (osb_fs_read(path, buf, sizeof buf) <= 0 || sscanf(buf, "%llu", &first) != 1 ||
        first > UINT32_MAX)
        return 0;
    return (uint32_t)first;
}

static void snap_work(uv_work_t *w)
{
    struct nat_snap *sn = w->data;
    sn->rc = sn->copy(sn->upper, sn->dst, &sn->err);
    if (sn->rc == 0)
        sn->rc = osb_idshift_layer(sn->dst, sn->userns, &sn->err);
}

static void snap_done(uv_work_t *w, int status)
{
    struct nat_snap *sn = w->data;
    struct osb_nat *rt = sn->rt;
    close(sn->upper);
    if (status < 0 && sn->rc == 0)
        sn->rc = osb_err_set(&sn->err, OSB_E_INTERNAL, "snapshot of `%s` cancelled", sn->id);
    /* The sandbox may be gone meanwhile: thawing it then fails harmlessly. */
    if (osb_nat_set_frozen(rt, sn->id, false, NULL) < 0)
        osb_debug("snapshot of sandbox %s: not thawed (gone meanwhile)", sn->id);
    rt->open_handles--;
    if (!rt->closing)
        sn->cb(sn->ud, sn->rc < 0 ? &sn->err : NULL);
    free(sn->dst);
    free(sn);
    osb_nat_maybe_free(rt);
}

int osb_nat_snapshot(struct osb_rt *base, const char *id, const struct osb_rt_handle *h,
                     const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                     struct osb_err *err)
{
    struct osb_nat *rt = osb_nat_of(base);
    if (rt->closing)
        return osb_err_set(err, OSB_E_INTERNAL, "the runtime is closing");
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    int upper = take_upper(rt, id, h, err);
    if (upper < 0)
        return -1;
    if (osb_nat_set_frozen(rt, id, true, err) < 0) {
        close(upper);
        return -1;
    }
    struct nat_snap *sn = osb_xcalloc(1, sizeof *sn);
    sn->rt = rt;
    snprintf(sn->id, sizeof sn->id, "%s", id);
    sn->upper = upper;
    sn->userns = range_of(rt, id);
    sn->dst = osb_xstrdup(dst_dir);
    sn->copy = copy;
    sn->cb = cb;
    sn->ud = ud;
    sn->work.data = sn;
    rt->open_handles++;
    uv_queue_work(rt->loop, &sn->work, snap_work, snap_done);
    return 0;
}
