/* pvc claims as loop-mounted ext4 images (claim.h). The loop device is
 * set up with LOOP_CONFIGURE and LO_FLAGS_AUTOCLEAR: it detaches itself
 * once the last mount of its filesystem is gone (ours on the host, and
 * the clones sandboxes hold), so no failure path has to remember it. */
#include "server/claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "common/fstree.h"

#define IMAGE "disk.img"

extern char **environ;

static char *cpath(const char *vdir, const char *claim, const char *leaf)
{
    return osb_xasprintf("%s/%s/%s", vdir, claim, leaf);
}

static bool is_mount_root(const char *path)
{
    struct statx sx;
    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
        return false;
    return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
           (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

void osb_claim_probe(const char *vdir, const char *claim, struct osb_claim_info *ci)
{
    *ci = (struct osb_claim_info){OSB_CLAIM_ABSENT, false, 0};
    _cleanup_free_ char *img = cpath(vdir, claim, IMAGE);
    _cleanup_free_ char *data = cpath(vdir, claim, "data");
    struct stat st;
    if (lstat(img, &st) == 0 && S_ISREG(st.st_mode)) {
        ci->kind = OSB_CLAIM_IMAGE;
        ci->bytes = st.st_size;
        ci->mounted = is_mount_root(data);
    } else if (lstat(data, &st) == 0) {
        ci->kind = OSB_CLAIM_PLAIN;
    }
}

int64_t osb_claim_unallocated(const char *vdir)
{
    _cleanup_closedir_ DIR *d = opendir(vdir);
    struct dirent *e;
    int64_t sum = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue; /* ".", "..", scratch claims (their jobs count them) */
        _cleanup_free_ char *rel = osb_xasprintf("%s/" IMAGE, e->d_name);
        struct stat st;
        if (fstatat(dirfd(d), rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_size > (off_t)st.st_blocks * 512)
            sum += (int64_t)st.st_size - (int64_t)st.st_blocks * 512;
    }
    return sum;
}

/* ------------------------------------------------------------- mkfs */

static const char *mkfs_path(void)
{
    static const char *const cands[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(cands); i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return "mkfs.ext4";
}

/* mkfs.ext4 on the image; its stderr becomes the error. No reserved
 * blocks: the whole size is the sandbox's. */
static int run_mkfs(const char *img, struct osb_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    const char *prog = mkfs_path();
    char *argv[] = {(char *)prog, "-q", "-F", "-m", "0", "-t", "ext4", (char *)img, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return osb_err_sys(err, "run %s", prog);
    }
    char msg[512];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof msg - 1 && (r = OSB_RETRY(read(p[0], msg + n, sizeof msg - 1 - n))) > 0)
        n += (size_t)r;
    close(p[0]); /* mkfs -q says little; more than msg gets EPIPE */
    msg[n] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    int status;
    if (OSB_RETRY(waitpid(pid, &status, 0)) < 0)
        return osb_err_sys(err, "wait for %s", prog);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return osb_err_set(err, OSB_E_SYS, "%s failed (status %d): %s", prog, status,
                           n ? msg : "no message");
    return 0;
}

/* ------------------------------------------------------------- loop */

/* An open loop device already backed by the image fd, or -1. */
static int find_loop(int img, char *dev, size_t cap)
{
    struct stat st;
    if (fstat(img, &st) < 0)
        return -1;
    _cleanup_closedir_ DIR *d = opendir("/sys/block");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "loop", 4) != 0)
            continue;
        snprintf(dev, cap, "/dev/%s", e->d_name);
        int fd = open(dev, O_RDWR | O_CLOEXEC);
        struct loop_info64 li;
        if (fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &li) == 0 && li.lo_device == st.st_dev &&
            li.lo_inode == st.st_ino)
            return fd;
        if (fd >= 0)
            close(fd);
    }
    return -1;
}

/* A free loop device bound to img; other processes race for free
 * devices, so a device taken in between (EBUSY) means asking again. */
static int new_loop(int img, char *dev, size_t cap, struct osb_err *err)
{
    _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return osb_err_sys(err, "open /dev/loop-control");
    struct loop_config lc = {.fd = (unsigned)img, .info = {.lo_flags = LO_FLAGS_AUTOCLEAR}};
    for (int tries = 0; tries < 64; tries++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0)
            return osb_err_sys(err, "find a free loop device");
        snprintf(dev, cap, "/dev/loop%d", n);
        int fd = open(dev, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
            return osb_err_sys(err, "open %s", dev);
        if (fd >= 0 && ioctl(fd, LOOP_CONFIGURE, &lc) == 0)
            return fd;
        int en = errno;
        if (fd >= 0)
            close(fd);
        if (en != EBUSY && en != ENOENT) {
            errno = en;
            return osb_err_sys(err, "set up %s", dev);
        }
    }
    return osb_err_set(err, OSB_E_SYS, "no free loop device after 64 tries");
}

int osb_claim_attach(const char *vdir, const char *claim, struct osb_err *err)
{
    _cleanup_free_ char *img = cpath(vdir, claim, IMAGE);
    _cleanup_free_ char *data = cpath(vdir, claim, "data");
    if (is_mount_root(data))
        return 0;
    _cleanup_close_ int ifd = open(img, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (ifd < 0)
        return osb_err_sys(err, "open %s", img);
    char dev[64];
    _cleanup_close_ int lfd = find_loop(ifd, dev, sizeof dev);
    if (lfd < 0 && (lfd = new_loop(ifd, dev, sizeof dev, err)) < 0)
        return -1;
    if (mount(dev, data, "ext4", MS_NOSUID | MS_NODEV, NULL) < 0)
        return osb_err_sys(err, "mount %s (%s) on %s", img, dev, data);
    return 0;
}

int osb_claim_detach(const char *vdir, const char *claim, struct osb_err *err)
{
    _cleanup_free_ char *data = cpath(vdir, claim, "data");
    if (!is_mount_root(data))
        return 0;
    if (umount2(data, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
        return osb_err_sys(err, "unmount %s", data);
    return 0;
}

/* ------------------------------------------------------------- make */

/* The image and its filesystem in dir (a fresh scratch directory). */
static int make_image(const char *dir, int64_t bytes, struct osb_err *err)
{
    _cleanup_free_ char *data = osb_xasprintf("%s/data", dir);
    _cleanup_free_ char *img = osb_xasprintf("%s/" IMAGE, dir);
    if (mkdir(data, 0755) < 0)
        return osb_err_sys(err, "create %s", data);
    _cleanup_close_ int fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return osb_err_sys(err, "create %s", img);
    if (ftruncate(fd, bytes) < 0)
        return osb_err_sys(err, "size %s", img);
    return run_mkfs(img, err);
}

int osb_claim_make(const char *vdir, const char *claim, int64_t bytes, struct osb_err *err)
{
    if (osb_mkdir_p(vdir, 0700, err) < 0)
        return -1;
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.new-%s", vdir, claim);
    _cleanup_free_ char *dst = osb_xasprintf("%s/%s", vdir, claim);
    if (osb_fs_remove_tree(tmp, err) < 0)
        return -1;
    if (mkdir(tmp, 0700) < 0)
        return osb_err_sys(err, "create %s", tmp);
    if (make_image(tmp, bytes, err) < 0 ||
        (rename(tmp, dst) < 0 && osb_err_sys(err, "rename %s to %s", tmp, dst) < 0)) {
        osb_fs_discard_tree(tmp);
        return -1;
    }
    if (osb_claim_attach(vdir, claim, err) < 0) {
        osb_fs_discard_tree(dst);
        return -1;
    }
    /* A claim starts empty, as a fresh directory did: mkfs's lost+found
     * would be the first thing every sandbox sees (e2fsck recreates it
     * when it needs one). */
    _cleanup_free_ char *lf = cpath(vdir, claim, "data/lost+found");
    rmdir(lf);
    return 0;
}
