/* The host-side mounts of a gvisor sandbox beyond its overlay root: the
 * `host` image's read-only binds, the volumes' sources and the hidden
 * home of the writable layer. All are made in the private mount namespace
 * of the child that execs `runsc create`, so runsc's gofer (which copies
 * that namespace) serves them and no host namespace ever holds one.
 *
 * Sources are resolved on the loop thread at create, before the fork: a volume
 * beneath its allowed root with openat2(RESOLVE_BENEATH) (a symlink
 * swapped in since the server's check cannot lead outside), then cloned
 * with open_tree into a detached mount made nosuid, nodev and read-only
 * as asked. The child only attaches those clones: the host image's onto
 * the overlay's own directories (resolved beneath the root, so an image
 * symlink cannot aim one at a host path), a volume's onto the host-only
 * staging entry <dir>/vol/<i> that config.json names as its source.
 *
 * The child also writes the root's /etc/hosts, hostname and resolv.conf
 * (the slot's resolver), as the native helper does: into the overlay,
 * before runsc mounts any volume (one on /etc then hides them rather than
 * having them written into its host directory).
 *
 * The root's own /tmp is bound at <dir>/tmp, which config.json mounts at
 * /tmp: runsc would otherwise put a tmpfs of the Sentry's there, whose
 * files neither count against the disk limit nor reach a snapshot.
 *
 * The writable layer's tmpfs is moved beneath OSB_GV_BIN_DIR in the root
 * and execd's binary directory bound over it, read-only (served with the
 * root, as the host image's binds are): the gofer's namespace keeps
 * only the mounts beneath the root, and a covered mount is one that no
 * path of the gofer (hence of the sandbox) reaches, while a snapshot can
 * still uncover it in a private copy of that namespace (snapshot.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "runtime/gvisor/state.h"

static int open_err(const struct osb_rt_volume *v, const char *what, const char *base,
                    const char *rel, struct osb_err *err)
{
    if (errno == EXDEV || errno == ELOOP)
        return osb_err_set(err, OSB_E_INVALID,
                           "volume `%s`: %s `%s` leads outside `%s` (through a symlink)", v->name,
                           what, rel, base);
    return osb_err_sys(err, "volume `%s`: %s `%s` beneath `%s`", v->name, what, rel, base);
}

/* The volume's source as an O_PATH fd: src_rel beneath src_root, then
 * sub_path beneath that. */
static int open_source(const struct osb_rt_volume *v, struct osb_err *err)
{
    _cleanup_close_ int root = open(v->src_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return osb_err_sys(err, "volume `%s`: open `%s`", v->name, v->src_root);
    const char *rel = v->src_rel ? v->src_rel : "";
    _cleanup_close_ int base = osb_open_beneath(root, rel, O_PATH, NULL);
    if (base < 0)
        return open_err(v, "path", v->src_root, rel, err);
    if (!v->sub_path || !*v->sub_path)
        return osb_steal_fd(&base);
    int fd = osb_open_beneath(base, v->sub_path, O_PATH, NULL);
    return fd >= 0 ? fd : open_err(v, "subPath", rel, v->sub_path, err);
}

/* A detached recursive clone of fd with attrs (always nosuid, nodev). */
static int clone_tree(int fd, bool read_only)
{
    _cleanup_close_ int t =
        open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    if (t < 0)
        return -1;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       (read_only ? MOUNT_ATTR_RDONLY : 0)};
    if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0)
        return -1;
    return osb_steal_fd(&t);
}

/* The volume's clone, and its staging entry (a directory or an empty file,
 * as the source is) under <dir>/vol. */
static int open_volume(const struct osb_rt_volume *v, const char *stage, struct osb_err *err)
{
    _cleanup_close_ int src = open_source(v, err);
    if (src < 0)
        return -1;
    struct stat st;
    if (fstat(src, &st) < 0)
        return osb_err_sys(err, "volume `%s`: stat its source", v->name);
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID,
                           "volume `%s`: the source is neither a directory nor a file", v->name);
    int made = S_ISDIR(st.st_mode) ? mkdir(stage, 0700)
                                   : open(stage, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (made < 0)
        return osb_err_sys(err, "volume `%s`: create `%s`", v->name, stage);
    if (!S_ISDIR(st.st_mode))
        close(made);
    int t = clone_tree(src, v->read_only);
    return t >= 0 ? t : osb_err_sys(err, "volume `%s`: clone its source", v->name);
}

static void etc_files(const struct osb_sandbox_spec *s, struct osb_gv_trees *t)
{
    char name[16];
    snprintf(name, sizeof name, "%.12s", s->hostname ? s->hostname : s->id);
    snprintf(t->hosts, sizeof t->hosts,
             "127.0.0.1\tlocalhost %s\n::1\tlocalhost ip6-localhost ip6-loopback\n", name);
    snprintf(t->hostname, sizeof t->hostname, "%s\n", name);
    if (s->netns && s->dns)
        snprintf(t->resolv, sizeof t->resolv,
                 "# OpenSandbox: the host-side resolver of this sandbox\n"
                 "nameserver %s\noptions timeout:2 attempts:2\n",
                 s->dns);
    else /* Loopback only: no resolver answers, so lookups fail fast. */
        snprintf(t->resolv, sizeof t->resolv,
                 "# OpenSandbox: this sandbox has a loopback-only network\n"
                 "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");
}

int osb_gv_trees_open(const struct osb_gv *rt, const struct osb_sandbox_spec *s, const char *dir,
                      struct osb_gv_trees *t, struct osb_err *err)
{
    *t = (struct osb_gv_trees){.bin = -1};
    etc_files(s, t);
    t->vol = osb_xcalloc(s->n_volumes + 1, sizeof *t->vol);
    for (size_t i = 0; s->image_host && i < rt->host.n_binds; i++) {
        _cleanup_close_ int src = open(rt->host.binds[i].src, O_PATH | O_DIRECTORY | O_CLOEXEC);
        t->host[i] = src < 0 ? -1 : clone_tree(src, true);
        if (t->host[i] < 0)
            return osb_err_sys(err, "bind the host's `%s`", rt->host.binds[i].src);
        /* the overlay's directory, relative to its root */
        t->host_dst[i] = rt->host.binds[i].dst + 1;
        t->n_host = i + 1;
    }
    char bin[PATH_MAX + 8];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    _cleanup_close_ int b = open(bin, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (b < 0 || (t->bin = clone_tree(b, true)) < 0)
        return osb_err_sys(err, "clone `%s`", bin);
    for (size_t i = 0; i < s->n_volumes; i++) {
        char stage[PATH_MAX + 32];
        snprintf(stage, sizeof stage, "%s/vol/%zu", dir, i);
        if ((t->vol[i] = open_volume(&s->volumes[i], stage, err)) < 0)
            return -1;
        t->n_vol = i + 1;
    }
    return 0;
}

void osb_gv_trees_close(struct osb_gv_trees *t)
{
    for (size_t i = 0; i < t->n_host; i++)
        close(t->host[i]);
    for (size_t i = 0; i < t->n_vol; i++)
        close(t->vol[i]);
    if (t->bin >= 0)
        close(t->bin);
    free(t->vol);
    *t = (struct osb_gv_trees){.bin = -1};
}

/* A regular file name in etcfd with data, replacing whatever is there. */
static int write_etc(int etcfd, const char *name, const char *data)
{
    struct stat st;
    if (fstatat(etcfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) &&
        unlinkat(etcfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
        return -1;
    _cleanup_close_ int fd =
        openat(etcfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    size_t n = strlen(data);
    return fd >= 0 && write(fd, data, n) == (ssize_t)n ? 0 : -1;
}

static int attach_at(int tree, int dirfd, const char *rel)
{
    _cleanup_close_ int target = osb_open_beneath(dirfd, rel, O_PATH | O_DIRECTORY, NULL);
    if (target < 0)
        return -1;
    return move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}
/* The root's own dir rel (made 01777 if missing) bound at <dir>/<stage>,
 * which config.json mounts back at /rel: runsc would otherwise put the
 * Sentry's memory there (its own /tmp tmpfs, /dev/shm in its /dev), bound
 * by nothing but the memory limit and missing from snapshots. */
static int stage_root_dir(int rootfd, const char *rel, const char *dir, const char *stage)
{
    char to[PATH_MAX];
    _cleanup_close_ int fd = osb_mkdir_beneath(rootfd, rel, 01777, NULL);
    _cleanup_close_ int tree =
        fd < 0 ? -1 : open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    snprintf(to, sizeof to, "%s/%s", dir, stage);
    return tree < 0 ? -1 : move_mount(tree, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH);
}


const char *osb_gv_trees_attach(const struct osb_gv_trees *t, const char *dir)
{
    char root[PATH_MAX + 8], rw[PATH_MAX + 8], stage[PATH_MAX + 32];
    snprintf(root, sizeof root, "%s/rootfs", dir);
    snprintf(rw, sizeof rw, "%s/rw", dir);
    _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return "open the root";
    for (size_t i = 0; i < t->n_host; i++)
        if (attach_at(t->host[i], rootfd, t->host_dst[i]) < 0)
            return "bind the host image's directories";
    _cleanup_close_ int etc = osb_mkdir_beneath(rootfd, "etc", 0755, NULL);
    if (etc < 0 || write_etc(etc, "hosts", t->hosts) < 0 ||
        write_etc(etc, "hostname", t->hostname) < 0 || write_etc(etc, "resolv.conf", t->resolv) < 0)
        return "write /etc/hosts, hostname and resolv.conf";
    for (size_t i = 0; i < t->n_vol; i++) {
        snprintf(stage, sizeof stage, "%s/vol/%zu", dir, i);
        if (move_mount(t->vol[i], "", AT_FDCWD, stage, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return "attach a volume's source";
    }
    _cleanup_close_ int dev = osb_mkdir_beneath(rootfd, "dev", 0755, NULL);
    if (dev < 0 || stage_root_dir(rootfd, "tmp", dir, "tmp") < 0 ||
        stage_root_dir(rootfd, "dev/shm", dir, "shm") < 0)
        return "bind the root's /tmp and /dev/shm";
    _cleanup_close_ int cover = osb_mkdir_beneath(rootfd, OSB_GV_BIN_DIR + 1, 0755, NULL);
    if (cover < 0 || move_mount(AT_FDCWD, rw, cover, "", MOVE_MOUNT_T_EMPTY_PATH) < 0 ||
        move_mount(t->bin, "", cover, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return "hide the writable layer";
    return NULL;
}

int osb_gv_host_open(struct osb_gv *rt, const char *state_dir, struct osb_err *err)
{
    char images[PATH_MAX];
    snprintf(images, sizeof images, "%s/images", state_dir);
    if (osb_mkdir_p(images, 0755, err) < 0 || osb_img_host_prepare(images, &rt->host, err) < 0)
        return -1;
    rt->host_root = osb_xasprintf("%s/%s/rootfs", images, OSB_IMG_HOST);
    return 0;
}
