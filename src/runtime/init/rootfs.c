/* The sandbox's root filesystem, built by the child inside its own (private)
 * mount namespace, so every mount vanishes with the sandbox and none is
 * ever visible on the host:
 *
 *   <sandbox dir>             tmpfs (size = disk limit): upper/ work/ rootfs/,
 *                             and dev/ mask/ cgroup/ (below)
 *   <sandbox dir>/rootfs      overlay(lower = image, upper, work)
 *   + read-only binds from the host (execd; the host image's /usr, /lib...)
 *   + /dev: a bind of dev/ (nodev) with the host's null zero full random
 *     urandom tty bound in, so device nodes a sandbox makes with CAP_MKNOD
 *     are inert, and dev/shm bound noexec
 *   + /proc, and /sys: a read-only clone of the runtime's one sysfs, of an
 *     empty network namespace (native/sysfs.h) (before pivot_root: see
 *     attach_new)
 *   pivot_root, then /dev/pts, /dev/mqueue, /sys/fs/cgroup
 *   (cgviews.c), Docker's masked and read-only paths,
 *   /etc/hosts|hostname|resolv.conf.
 *
 * Every superblock a sandbox makes costs each memory cgroup on the host a
 * slot in its shrinker table (memory that grows with the square of the
 * sandboxes alive) and each cgroup's removal a walk over all of them, so
 * what needs no filesystem of its own gets none: /dev, /dev/shm, the masks
 * (an empty mask/) and the skeleton of /sys/fs/cgroup (cgroup/) are
 * directories of the writable layer's tmpfs, bound, and /sys is a clone of
 * the runtime's one sysfs.
 *
 * Before pivot_root the image's own paths are untrusted: an image may hold
 * a symlink such as /opt -> /etc aimed at the host. Every path inside the
 * new root is therefore resolved with openat2(RESOLVE_IN_ROOT), which keeps
 * symlinks and ".." inside it; mounts go onto the resulting fds (new mount
 * API, no /proc magic links). After pivot_root the host is unreachable and
 * plain paths are safe.
 *
 * pivot_root stays, though it walks every task on the host (chroot_fs_refs:
 * ~2 ms per 10000 tasks here): MS_MOVE + chroot would leave the host's
 * mounts under the new root in every sandbox's namespace, and with them
 * each network slot's pin and volume claim mounted at the time, which
 * would then outlive their own sandboxes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "runtime/init/init.h"

/* Devices bound from the host into /dev. */
static const char *const devices[] = {"null", "zero", "full", "random", "urandom", "tty"};

/* Docker's masked paths (moby oci/defaults.go) and read-only paths. */
static const char *const masked[] = {
    "/proc/asound",      "/proc/acpi",          "/proc/interrupts", "/proc/kcore",
    "/proc/keys",        "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
    "/proc/sched_debug", "/proc/scsi",          "/sys/firmware",    "/sys/devices/virtual/powercap",
};
static const char *const readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                       "/proc/sysrq-trigger"};

/* openat2 confined to rootfd; sets errno. */
static int open_in_root(int rootfd, const char *path, int flags)
{
    while (*path == '/')
        path++;
    if (!*path)
        path = ".";
    struct open_how how = {.flags = (unsigned)(flags | O_CLOEXEC),
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    return (int)OSB_RETRY(syscall(SYS_openat2, rootfd, path, &how, sizeof how));
}

/* mkdir -p inside the root; returns an O_PATH fd of the directory. Each
 * missing component is made with mkdirat() on its parent's resolved fd, so
 * nothing is created outside the root. */
static int ensure_dir(int rootfd, const char *path, mode_t mode, struct osb_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    int parent = -1;
    for (char *c = p;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char save = *c;
        *c = '\0';
        if (c != p) {
            int fd = open_in_root(rootfd, p, O_PATH | O_DIRECTORY);
            if (fd < 0 && errno == ENOENT) {
                const char *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
                if (mkdirat(parent >= 0 ? parent : rootfd, name, mode) < 0 && errno != EEXIST) {
                    osb_err_sys(err, "create directory `%s`", p);
                    goto fail;
                }
                fd = open_in_root(rootfd, p, O_PATH | O_DIRECTORY);
            }
            if (fd < 0) {
                osb_err_sys(err, "open directory `%s`", p);
                goto fail;
            }
            if (parent >= 0)
                close(parent);
            parent = fd;
        }
        *c = save;
        if (!save)
            break;
    }
    return parent >= 0 ? parent : open_in_root(rootfd, ".", O_PATH | O_DIRECTORY);
fail:
    if (parent >= 0)
        close(parent);
    return -1;
}

/* An O_PATH fd of a regular file inside the root, created if missing. */
static int ensure_file(int rootfd, const char *path, struct osb_err *err)
{
    int fd = open_in_root(rootfd, path, O_PATH);
    if (fd >= 0 || errno != ENOENT)
        return fd >= 0 ? fd : osb_err_sys(err, "open `%s`", path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : dir;
    if (slash)
        *slash = '\0';
    _cleanup_close_ int d = ensure_dir(rootfd, slash ? dir : "", 0755, err);
    if (d < 0)
        return -1;
    _cleanup_close_ int f =
        openat(d, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f < 0 && errno != EEXIST)
        return osb_err_sys(err, "create `%s`", path);
    fd = open_in_root(rootfd, path, O_PATH);
    return fd >= 0 ? fd : osb_err_sys(err, "open `%s`", path);
}

/* Attach a clone of host path src onto target fd with the given mount
 * attributes (MOUNT_ATTR_*). */
static int bind_fd(const char *src, int target, unsigned attrs, struct osb_err *err)
{
    _cleanup_close_ int t = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "clone mount of `%s`", src);
    struct mount_attr a = {.attr_set = attrs};
    if (attrs && mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
        return osb_err_sys(err, "set attributes of the bind of `%s`", src);
    if (move_mount(t, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach the bind of `%s`", src);
    return 0;
}

/* tree: a detached mount of src made by the parent (attributes set), or
 * -1 to clone src here. */
static int bind_ro(int rootfd, const char *src, const char *dst, int tree, struct osb_err *err)
{
    struct stat st;
    if ((tree >= 0 ? fstat(tree, &st) : stat(src, &st)) < 0)
        return osb_err_sys(err, "bind source `%s`", src);
    _cleanup_close_ int t =
        S_ISDIR(st.st_mode) ? ensure_dir(rootfd, dst, 0755, err) : ensure_file(rootfd, dst, err);
    if (t < 0)
        return osb_err_wrap(err, "bind `%s`", src);
    if (tree < 0)
        return bind_fd(src, t, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
    if (move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach the bind of `%s`", src);
    return 0;
}

/* A detached tmpfs mount with the given options; attach with move_mount. */
static int new_tmpfs(const char *size, const char *mode, unsigned attrs, struct osb_err *err)
{
    _cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return osb_err_sys(err, "open tmpfs");
    if (fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
        fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0 ||
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return osb_err_sys(err, "configure tmpfs");
    int m = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
    return m >= 0 ? m : osb_err_sys(err, "mount tmpfs");
}

static int bind_device(int devfd, const char *name, struct osb_err *err)
{
    char src[64];
    snprintf(src, sizeof src, "/dev/%s", name);
    _cleanup_close_ int f =
        openat(devfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f < 0)
        return osb_err_sys(err, "create /dev/%s", name);
    _cleanup_close_ int t = openat(devfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "open /dev/%s", name);
    return bind_fd(src, t, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
}

/* A detached clone of top/<name> (an existing directory of the writable
 * layer's tmpfs): nosuid, nodev, and attrs. */
static int clone_dir(int top, const char *name, unsigned attrs, struct osb_err *err)
{
    int t = open_tree(top, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "clone the layer's %s directory", name);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | attrs};
    if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
        close(t);
        return osb_err_sys(err, "set attributes of the layer's %s directory", name);
    }
    return t;
}

/* The same of a new empty top/<name>. */
static int layer_dir(int top, const char *name, unsigned attrs, struct osb_err *err)
{
    if (mkdirat(top, name, 0755) < 0)
        return osb_err_sys(err, "create the layer's %s directory", name);
    return clone_dir(top, name, attrs, err);
}

#define RO_NOEXEC (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC)

/* /dev/shm: a directory of the same tmpfs (no superblock of its own; its
 * files count against the disk limit), bound noexec as Docker mounts it. */
static int setup_shm(int dev, struct osb_err *err)
{
    if (mkdirat(dev, "shm", 0755) < 0 || fchmodat(dev, "shm", 01777, 0) < 0)
        return osb_err_sys(err, "create /dev/shm");
    _cleanup_close_ int shm = clone_dir(dev, "shm", MOUNT_ATTR_NOEXEC, err);
    if (shm < 0)
        return -1;
    if (move_mount(shm, "", dev, "shm", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach /dev/shm");
    return 0;
}

/* /dev: a directory of the writable layer's tmpfs (no superblock of its
 * own), bound nodev, so only the bound host devices work. */
static int setup_dev(int rootfd, int top, struct osb_err *err)
{
    _cleanup_close_ int target = ensure_dir(rootfd, "/dev", 0755, err);
    if (target < 0)
        return -1;
    _cleanup_close_ int dev = layer_dir(top, "dev", 0, err);
    if (dev < 0)
        return -1;
    if (move_mount(dev, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach /dev");
    for (size_t i = 0; i < OSB_ARRAY_LEN(devices); i++)
        if (bind_device(dev, devices[i], err) < 0)
            return -1;
    static const char *const dirs[] = {"pts", "mqueue"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(dirs); i++)
        if (mkdirat(dev, dirs[i], 0755) < 0)
            return osb_err_sys(err, "create /dev/%s", dirs[i]);
    if (setup_shm(dev, err) < 0)
        return -1;
    static const char *const links[][2] = {
        {"ptmx", "pts/ptmx"},          {"fd", "/proc/self/fd"},       {"stdin", "/proc/self/fd/0"},
        {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"core", "/proc/kcore"}};
    for (size_t i = 0; i < OSB_ARRAY_LEN(links); i++)
        if (symlinkat(links[i][1], dev, links[i][0]) < 0)
            return osb_err_sys(err, "create /dev/%s", links[i][0]);
    return 0;
}

/* A path naming fd (a magic link): the child may not be able to walk the
 * host path to it (in a user namespace it is not host root), and a
 * detached mount has no other. */
static void fd_path(int fd, char *out, size_t n)
{
    snprintf(out, n, "/proc/self/fd/%d", fd);
}

/* The parent's idmapped layers are detached mounts of the host's user
 * namespace, which overlayfs may not clone for us: attached under
 * top/lower/<i> they become mounts of our namespace (and go with the old
 * root at pivot_root). */
static int idmapped_lowers(int fs, int top, const struct osb_init_trees *t, struct osb_err *err)
{
    if (mkdirat(top, "lower", 0700) < 0)
        return osb_err_sys(err, "create the layers' directory");
    _cleanup_close_ int dir = openat(top, "lower", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return osb_err_sys(err, "open the layers' directory");
    for (size_t i = 0; i < t->n_lower; i++) {
        char name[32], p[32];
        snprintf(name, sizeof name, "%zu", i);
        if (mkdirat(dir, name, 0700) < 0 ||
            move_mount(t->lower[i], "", dir, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return osb_err_sys(err, "attach idmapped layer %zu", i);
        fd_path(t->lower[i], p, sizeof p);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", p, 0) < 0)
            return osb_err_sys(err, "overlay layer %zu (idmapped)", i);
    }
    /* trusted.* xattrs are host root's only: in a user namespace overlayfs
     * keeps its own (whiteouts, opaque dirs) in user.overlay.* instead. */
    if (fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
        return osb_err_sys(err, "overlay option userxattr");
    return 0;
}

/* The layers, top first: the parent's idmapped mounts if there are any
 * (t->lower), else s->lower's paths. One "lowerdir+" per layer (Linux
 * 6.8+) has no limit on the number of layers, where the classic option
 * string must fit in a page; older kernels fall back to that string. */
static int overlay_lowers(int fs, int top, const struct osb_init_spec *s,
                          const struct osb_init_trees *t, struct osb_err *err)
{
    if (t->n_lower)
        return idmapped_lowers(fs, top, t, err);
    _cleanup_free_ char *lowers = osb_xstrdup(s->lower);
    char *save = NULL;
    for (char *l = strtok_r(lowers, ":", &save); l; l = strtok_r(NULL, ":", &save))
        if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", l, 0) < 0) {
            if (errno != EINVAL)
                return osb_err_sys(err, "overlay layer `%s`", l);
            if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", s->lower, 0) < 0)
                return osb_err_sys(err, "overlay layers `%s`", s->lower);
            return 0;
        }
    return 0;
}

/* The overlay on top/rootfs, upper and work in the tmpfs top. */
static int mount_overlay(const struct osb_init_spec *s, int top, const struct osb_init_trees *t,
                         struct osb_err *err)
{
    _cleanup_close_ int upper = openat(top, OSB_SANDBOX_UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_close_ int work = openat(top, "work", O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_close_ int root = openat(top, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (upper < 0 || work < 0 || root < 0)
        return osb_err_sys(err, "open the writable layer's directories");
    _cleanup_close_ int fs = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fs < 0)
        return osb_err_sys(err, "open overlayfs");
    if (overlay_lowers(fs, top, s, t, err) < 0)
        return -1;
    char up[32], wk[32];
    fd_path(upper, up, sizeof up);
    fd_path(work, wk, sizeof wk);
    if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", up, 0) < 0 ||
        fsconfig(fs, FSCONFIG_SET_STRING, "workdir", wk, 0) < 0 ||
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return osb_err_sys(err, "create the overlay root (layers %s)", s->lower);
    _cleanup_close_ int m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
    if (m < 0)
        return osb_err_sys(err, "mount the overlay root");
    if (move_mount(m, "", root, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach the overlay root");
    return 0;
}

int osb_init_sysfs_clone(struct osb_err *err)
{
    int m = open_tree(OSB_INIT_SYSFS_FD, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (m < 0)
        return osb_err_sys(err, "clone the runtime's sysfs (fd %d)", OSB_INIT_SYSFS_FD);
    return m;
}

/* proc and sysfs go in before pivot_root: in a user namespace the kernel
 * lets a new one be mounted only while a full one is visible (the host's,
 * until the old root is detached). made: a mount to attach (the clone of
 * the runtime's sysfs, read-only), or -1 for a new one of our own
 * namespaces (proc). */
static int attach_new(int rootfd, const char *dir, const char *type, int made, struct osb_err *err)
{
    _cleanup_close_ int m = made;
    if (m < 0) {
        _cleanup_close_ int fs = fsopen(type, FSOPEN_CLOEXEC);
        if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
            return osb_err_sys(err, "create %s", type);
        m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (m < 0)
            return osb_err_sys(err, "mount %s", type);
    }
    _cleanup_close_ int target = ensure_dir(rootfd, dir, 0555, err);
    if (target < 0)
        return -1;
    if (move_mount(m, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach %s on `%s`", type, dir);
    return 0;
}

/* The mask and, with v1 views, the cgroup skeleton (one directory each). */
static int layer_dirs(int top, const struct osb_init_cgviews *cg, struct osb_init_layerdirs *ld,
                      struct osb_err *err)
{
    ld->mask = layer_dir(top, "mask", RO_NOEXEC, err);
    if (ld->mask < 0)
        return -1;
    bool v1 = false;
    for (int i = 0; i < cg->n; i++)
        v1 |= !cg->view[i].v2;
    if (!v1)
        return 0;
    if (mkdirat(top, "cgroup", 0755) < 0)
        return osb_err_sys(err, "create the layer's cgroup directory");
    _cleanup_close_ int d = openat(top, "cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return osb_err_sys(err, "open the layer's cgroup directory");
    for (int i = 0; i < cg->n; i++)
        if (mkdirat(d, cg->view[i].name, 0555) < 0)
            return osb_err_sys(err, "create the cgroup view `%s`", cg->view[i].name);
    ld->cgroup = clone_dir(top, "cgroup", RO_NOEXEC, err);
    return ld->cgroup < 0 ? -1 : 0;
}

int osb_init_rootfs_prepare(const struct osb_init_spec *s, int dirfd,
                            const struct osb_init_trees *t, const struct osb_init_cgviews *cg,
                            int *rootfd, int *layerfd, struct osb_init_layerdirs *ld,
                            struct osb_err *err)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return osb_err_sys(err, "make mounts private");
    char size[32];
    snprintf(size, sizeof size, "%lld", (long long)s->disk_bytes);
    /* Over the sandbox dir itself (the log is already open); by fd, as the
     * child in a user namespace may not walk the host path. */
    _cleanup_close_ int top = new_tmpfs(size, "0755", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
    if (top < 0)
        return osb_err_wrap(err, "the writable layer (%s bytes)", size);
    if (move_mount(top, "", dirfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "attach the writable layer on `%s`", s->dir);
    static const char *const sub[] = {OSB_SANDBOX_UPPER, "work", "rootfs"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(sub); i++)
        if (mkdirat(top, sub[i], 0755) < 0)
            return osb_err_sys(err, "create %s/%s", s->dir, sub[i]);
    if (mount_overlay(s, top, t, err) < 0)
        return -1;
    *layerfd = openat(top, OSB_SANDBOX_UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*layerfd < 0)
        return osb_err_sys(err, "open the writable layer");
    *rootfd = openat(top, "rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*rootfd < 0)
        return osb_err_sys(err, "open the new root");
    for (size_t i = 0; i < s->n_binds; i++)
        if (bind_ro(*rootfd, s->binds[i].src, s->binds[i].dst, t->bind ? t->bind[i] : -1, err) < 0)
            return -1;
    if (bind_ro(*rootfd, s->execd, OSB_SANDBOX_EXECD, t->execd, err) < 0)
        return -1;
    if (attach_new(*rootfd, "/proc", "proc", -1, err) < 0 ||
        attach_new(*rootfd, "/sys", "sysfs", t->sysfs, err) < 0)
        return -1;
    if (layer_dirs(top, cg, ld, err) < 0)
        return -1;
    return setup_dev(*rootfd, top, err);
}

/* pivot_root(".", "."): the old root ends up stacked on the new one and is
 * detached right away (runc's trick; needs no put_old directory). */
int osb_init_rootfs_pivot(int rootfd, struct osb_err *err)
{
    if (fchdir(rootfd) < 0)
        return osb_err_sys(err, "enter the new root");
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return osb_err_sys(err, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0)
        return osb_err_sys(err, "detach the old root");
    if (chdir("/") < 0)
        return osb_err_sys(err, "chdir /");
    return 0;
}

static int mnt(const char *src, const char *dst, const char *type, unsigned long flags,
               const char *data, struct osb_err *err)
{
    if (mount(src, dst, type, flags, data) < 0)
        return osb_err_sys(err, "mount %s on `%s`", type ? type : src ? src : "(remount)", dst);
    return 0;
}

/* A masked directory: an empty read-only tmpfs over it. All of them are
 * binds of the first, one superblock per sandbox rather than one each
 * (the kernel walks every superblock's lists whenever a cgroup goes).
 * first: the path of the one mounted, "" until then. */
static int mask_dir(const char *path, int mask, char *first, size_t n, struct osb_err *err)
{
    if (!*first) {
        snprintf(first, n, "%s", path);
        if (move_mount(mask, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return osb_err_sys(err, "mask `%s`", path);
        return 0;
    }
    _cleanup_close_ int t = open_tree(AT_FDCWD, first, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return osb_err_sys(err, "clone the mask of `%s`", first);
    if (move_mount(t, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return osb_err_sys(err, "mask `%s`", path);
    return 0;
}

static int mask_paths(int mask, struct osb_err *err)
{
    char first[64] = "";
    for (size_t i = 0; i < OSB_ARRAY_LEN(masked); i++) {
        struct stat st;
        if (lstat(masked[i], &st) < 0)
            continue;
        int r = S_ISDIR(st.st_mode) ? mask_dir(masked[i], mask, first, sizeof first, err)
                                    : mnt("/dev/null", masked[i], NULL, MS_BIND, NULL, err);
        if (r < 0)
            return -1;
    }
    for (size_t i = 0; i < OSB_ARRAY_LEN(readonly); i++) {
        if (access(readonly[i], F_OK) < 0)
            continue;
        if (mnt(readonly[i], readonly[i], NULL, MS_BIND | MS_REC, NULL, err) < 0 ||
            mnt(NULL, readonly[i], NULL,
                MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
            return -1;
    }
    return 0;
}

/* Replaces whatever the image has at /etc/<name> (a symlink into /run,
 * say) with a plain file. Safe after pivot_root: nothing outside exists. */
static int write_etc(const char *name, const char *data, struct osb_err *err)
{
    char p[64];
    snprintf(p, sizeof p, "/etc/%s", name);
    struct stat st;
    if (lstat(p, &st) == 0 && !S_ISREG(st.st_mode) && unlink(p) < 0)
        return osb_err_sys(err, "replace `%s`", p);
    _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return osb_err_sys(err, "create `%s`", p);
    size_t n = strlen(data);
    if (OSB_RETRY(write(fd, data, n)) != (ssize_t)n)
        return osb_err_sys(err, "write `%s`", p);
    return 0;
}

static int write_etc_files(const struct osb_init_spec *s, struct osb_err *err)
{
    char hosts[512], hostname[128];
    snprintf(hosts, sizeof hosts,
             "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", s->hostname);
    snprintf(hostname, sizeof hostname, "%s\n", s->hostname);
    if (osb_mkdir_p("/etc", 0755, err) < 0)
        return -1;
    char resolv[160];
    if (s->dns)
        snprintf(resolv, sizeof resolv,
                 "# OpenSandbox: the host-side resolver of this sandbox\n"
                 "nameserver %s\noptions timeout:2 attempts:2\n",
                 s->dns);
    else /* Loopback only: no resolver answers, so lookups fail fast. */
        snprintf(resolv, sizeof resolv,
                 "# OpenSandbox: this sandbox has a loopback-only network\n"
                 "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
    return write_etc("hosts", hosts, err) < 0 || write_etc("hostname", hostname, err) < 0 ||
                   write_etc("resolv.conf", resolv, err) < 0
               ? -1
               : 0;
}

int osb_init_rootfs_finish(const struct osb_init_spec *s, struct osb_init_cgviews *cg,
                           struct osb_init_layerdirs *ld, struct osb_err *err)
{
    const unsigned long nsd = MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (mnt("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620,gid=5", err) < 0 ||
        mnt("mqueue", "/dev/mqueue", "mqueue", nsd, NULL, err) < 0)
        return -1;
    osb_init_cgviews_attach(cg, ld->cgroup);
    ld->cgroup = -1;
    int r = mask_paths(ld->mask, err);
    close(ld->mask);
    ld->mask = -1;
    if (r < 0 || write_etc_files(s, err) < 0)
        return -1;
    if (osb_mkdir_p(OSB_SANDBOX_RUNDIR, 0755, err) < 0)
        return -1;
    struct stat st;
    if (lstat("/tmp", &st) < 0 && (mkdir("/tmp", 01777) < 0 || chmod("/tmp", 01777) < 0))
        return osb_err_sys(err, "create /tmp");
    return 0;
}

/* Exported for volumes.c: the same confined creation of mount targets. */
int osb_init_target_dir(int rootfd, const char *path, struct osb_err *err)
{
    return ensure_dir(rootfd, path, 0755, err);
}

int osb_init_target_file(int rootfd, const char *path, struct osb_err *err)
{
    return ensure_file(rootfd, path, err);
}
