/* Volumes (host directories and server-managed claims) in the sandbox.
 *
 * The source is resolved on the host, before pivot_root, beneath the root
 * the server allowed: openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 * relative to an O_PATH fd of that root, so neither "..", an absolute
 * symlink nor a symlink to "/" planted inside it can select anything
 * outside (the kernel answers EXDEV). The server checked the same paths
 * when it accepted the request; this second resolution is the one that
 * counts, since the host's directory may have changed since.
 *
 * The source fd is cloned with open_tree into a detached mount (recursive,
 * so mounts beneath it come along) and made nosuid, nodev and, on request,
 * read-only. With a user namespace the helper's parent does this (the
 * child is no longer host root and may not walk the host's paths) and
 * idmaps the clone with the sandbox's namespace: uid N inside reads and
 * writes the volume as uid N on the host, root included, as Kubernetes
 * user namespaces do (hence nosuid,nodev always). The clones are attached only after the root is complete
 * (/proc, /dev, /etc files written): a volume mounted on /etc then hides
 * the generated hosts file instead of having it written into the host's
 * directory. Targets are resolved inside the new root like every other
 * mount (RESOLVE_IN_ROOT), so an image symlink such as /opt -> /etc
 * cannot aim a volume at a host path. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "runtime/init/init.h"

static int open_err(const struct osb_init_volume *v, const char *what, const char *base,
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
static int open_source(const struct osb_init_volume *v, struct osb_err *err)
{
    _cleanup_close_ int root = open(v->src_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return osb_err_sys(err, "volume `%s`: open `%s`", v->name, v->src_root);
    _cleanup_close_ int base = osb_open_beneath(root, v->src_rel, O_PATH, NULL);
    if (base < 0)
        return open_err(v, "path", v->src_root, v->src_rel, err);
    if (!v->sub_path || !*v->sub_path)
        return osb_steal_fd(&base);
    int fd = osb_open_beneath(base, v->sub_path, O_PATH, NULL);
    return fd >= 0 ? fd : open_err(v, "subPath", v->src_rel, v->sub_path, err);
}

int osb_init_volume_clone(const struct osb_init_volume *v, int usernsfd, struct osb_err *err)
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
    _cleanup_close_ int t =
        open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    if (t < 0)
        return osb_err_sys(err, "volume `%s`: clone its source", v->name);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       (v->read_only ? MOUNT_ATTR_RDONLY : 0)};
    if (usernsfd >= 0) {
        a.attr_set |= MOUNT_ATTR_IDMAP;
        a.userns_fd = (uint64_t)usernsfd;
    }
    if (mount_setattr(t, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) {
        /* A filesystem without idmapped mounts (or one already idmapped):
         * the request picked it, so a 400 that says so. */
        if (usernsfd >= 0 && (errno == EINVAL || errno == EPERM || errno == EOPNOTSUPP))
            return osb_err_set(err, OSB_E_INVALID,
                               "volume `%s`: its filesystem cannot be idmapped for the sandbox's "
                               "user namespace (%s); use a volume on another filesystem, or "
                               "[native] user_namespaces = false",
                               v->name, strerror(errno));
        return osb_err_sys(err, "volume `%s`: set its mount attributes", v->name);
    }
    return osb_steal_fd(&t);
}

int osb_init_volumes_open(const struct osb_init_spec *s, int *fds, struct osb_err *err)
{
    for (size_t i = 0; i < s->n_volumes; i++)
        fds[i] = -1;
    for (size_t i = 0; i < s->n_volumes; i++)
        if ((fds[i] = osb_init_volume_clone(&s->volumes[i], -1, err)) < 0)
            return -1;
    return 0;
}

static int attach_one(int rootfd, const struct osb_init_volume *v, int tree, struct osb_err *err)
{
    struct stat st;
    if (fstat(tree, &st) < 0)
        return osb_err_sys(err, "volume `%s`: stat its source", v->name);
    _cleanup_close_ int target = S_ISDIR(st.st_mode) ? osb_init_target_dir(rootfd, v->dst, err)
                                                     : osb_init_target_file(rootfd, v->dst, err);
    if (target < 0)
        return osb_err_wrap(err, "volume `%s`: mount path `%s`", v->name, v->dst);
    if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return osb_err_sys(err, "volume `%s`: mount it on `%s`", v->name, v->dst);
    return 0;
}

/* qsort over indices: a parent's mount path sorts before its children's. */
static const struct osb_init_spec *sort_spec;

static int by_dst(const void *a, const void *b)
{
    return strcmp(sort_spec->volumes[*(const size_t *)a].dst,
                  sort_spec->volumes[*(const size_t *)b].dst);
}

int osb_init_volumes_attach(const struct osb_init_spec *s, const int *fds, struct osb_err *err)
{
    if (s->n_volumes == 0)
        return 0;
    _cleanup_close_ int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return osb_err_sys(err, "open the sandbox root");
    _cleanup_free_ size_t *order = malloc(s->n_volumes * sizeof *order);
    if (!order)
        return osb_err_sys(err, "allocate");
    for (size_t i = 0; i < s->n_volumes; i++)
        order[i] = i;
    sort_spec = s;
    qsort(order, s->n_volumes, sizeof *order, by_dst);
    for (size_t k = 0; k < s->n_volumes; k++)
        if (attach_one(rootfd, &s->volumes[order[k]], fds[order[k]], err) < 0)
            return -1;
    return 0;
}
