/* The sandbox's read-only view of its cgroups at /sys/fs/cgroup, as
 * Docker gives one: tools inside (execd's /metrics among them) see the
 * sandbox's limits and usage. The layout mirrors the host's, one entry per
 * hierarchy in /proc/self/cgroup ("N:ctrl:/path" lines for v1, "0::/path"
 * for v2).
 *
 * Each entry is a bind of the sandbox's own cgroup directory, cloned on
 * the host side (before the cgroup namespace and pivot_root) and attached
 * after: a fresh cgroup mount per hierarchy would make the kernel compare
 * it with every cgroup superblock on the host and (v1) drain the whole v2
 * hierarchy's offline cgroups, so each create cost grew with the number of
 * sandboxes alive. A bind makes no superblock. Best effort: a hierarchy
 * that cannot be cloned is left out, and readers fall back to /proc. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/init/init.h"

/* A detached read-only clone of the host dir, or -1. */
static int clone_ro(const char *dir, long magic)
{
    struct statfs sf;
    if (statfs(dir, &sf) < 0 || (long)sf.f_type != magic)
        return -1;
    int t = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return -1;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       MOUNT_ATTR_NOEXEC};
    if (mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
        close(t);
        return -1;
    }
    return t;
}

/* One /proc/self/cgroup line: its hierarchy's mount dir on the host
 * (/sys/fs/cgroup/<ctrls>, or unified/ or the top for v2) and the view's
 * name in the sandbox ("" for v2 alone at the top). */
static void add_line(struct osb_init_cgviews *v, const char *ctrls, const char *path)
{
    if (v->n == OSB_ARRAY_LEN(v->view) || strncmp(ctrls, "name=", 5) == 0)
        return;
    struct osb_init_cgview *e = &v->view[v->n];
    char dir[PATH_MAX];
    e->v2 = ctrls[0] == '\0';
    snprintf(e->name, sizeof e->name, "%s", e->v2 ? "unified" : ctrls);
    snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s%s", e->name, path);
    e->tree = clone_ro(dir, e->v2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC);
    if (e->tree < 0 && e->v2) {
        snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", path);
        e->tree = clone_ro(dir, CGROUP2_SUPER_MAGIC);
    }
    if (e->tree >= 0)
        v->n++;
}

void osb_init_cgviews_clone(struct osb_init_cgviews *v)
{
    v->n = 0;
    _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return;
    char line[PATH_MAX + 256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b)
            continue;
        *b = '\0';
        add_line(v, a + 1, b + 1);
    }
}

/* After pivot_root: v2 alone at the top, else the skeleton with one
 * directory per hierarchy. */
void osb_init_cgviews_attach(struct osb_init_cgviews *v, int skel)
{
    bool v1 = false;
    for (int i = 0; i < v->n; i++)
        v1 |= !v->view[i].v2;
    if (!v1) {
        if (v->n == 1)
            move_mount(v->view[0].tree, "", AT_FDCWD, "/sys/fs/cgroup", MOVE_MOUNT_F_EMPTY_PATH);
    } else if (skel >= 0 &&
               move_mount(skel, "", AT_FDCWD, "/sys/fs/cgroup", MOVE_MOUNT_F_EMPTY_PATH) == 0) {
        _cleanup_close_ int top = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
        for (int i = 0; top >= 0 && i < v->n; i++)
            move_mount(v->view[i].tree, "", top, v->view[i].name, MOVE_MOUNT_F_EMPTY_PATH);
    }
    if (skel >= 0)
        close(skel);
    osb_init_cgviews_close(v);
}

void osb_init_cgviews_close(struct osb_init_cgviews *v)
{
    for (int i = 0; i < v->n; i++)
        close(v->view[i].tree);
    v->n = 0;
}
