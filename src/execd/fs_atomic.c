#include "execd/fs_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/random.h"
#include "common/xalloc.h"
#include "execd/fs_path.h"

/* Unique enough for O_EXCL retries from several threads at once, with no
 * shared counter: 40 random bits. */
static uint64_t tmp_suffix(void)
{
    uint64_t x;
    osb_random_bytes(&x, sizeof x);
    return x & 0xFFFFFFFFFFull;
}

static int create_named(const char *dir, const char *base, mode_t mode, struct osb_fs_tmp *t,
                        struct osb_err *err)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        char *p = osb_xasprintf("%s%s.%s.osb-%010llx", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                                base, (unsigned long long)tmp_suffix());
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd >= 0) {
            t->fd = fd;
            t->path = p;
            return 0;
        }
        int e = errno;
        free(p);
        if (e != EEXIST) {
            errno = e;
            return osb_err_sys(err, "create temporary file in %s", dir);
        }
    }
    return osb_err_set(err, OSB_E_INTERNAL, "create temporary file in %s: too many collisions",
                       dir);
}

int osb_fs_tmp_create(const char *target, mode_t mode, struct osb_fs_tmp *t, struct osb_err *err)
{
    *t = (struct osb_fs_tmp){.fd = -1};
    _cleanup_free_ char *dir = osb_fs_path_dir(target);
    _cleanup_free_ char *base = osb_fs_path_base(target);
    /* Keep the name short of NAME_MAX: the suffix adds 16 bytes. */
    if (strlen(base) > 200)
        base[200] = '\0';
    return create_named(dir, base, mode, t, err);
}

int osb_fs_tmp_create_in(const char *dir, mode_t mode, struct osb_fs_tmp *t, struct osb_err *err)
{
    *t = (struct osb_fs_tmp){.fd = -1};
    return create_named(dir, "upload", mode, t, err);
}

int osb_fs_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int apply_attrs(struct osb_fs_tmp *t, const struct osb_fs_tmp_attrs *a, struct osb_err *err)
{
    /* chown first: it clears set-id bits that the chmod may want to set. */
    if ((a->uid != (uid_t)-1 || a->gid != (gid_t)-1) && fchown(t->fd, a->uid, a->gid) < 0 &&
        !(a->owner_optional && errno == EPERM))
        return osb_err_sys(err, "chown %s", t->path);
    if (a->set_mode && fchmod(t->fd, a->mode) < 0)
        return osb_err_sys(err, "chmod %s", t->path);
    return 0;
}

/* Make the rename durable; some filesystems refuse fsync on directories,
 * which is not worth failing the request for. */
static void sync_dir(const char *target)
{
    _cleanup_free_ char *dir = osb_fs_path_dir(target);
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        fsync(fd);
}

int osb_fs_tmp_commit(struct osb_fs_tmp *t, const char *target, const struct osb_fs_tmp_attrs *a,
                      struct osb_err *err)
{
    int rc = apply_attrs(t, a, err);
    if (rc == 0 && fsync(t->fd) < 0)
        rc = osb_err_sys(err, "fsync %s", t->path);
    if (rc == 0 && close(osb_steal_fd(&t->fd)) < 0)
        rc = osb_err_sys(err, "close %s", t->path);
    if (rc == 0 && rename(t->path, target) < 0)
        rc = osb_err_sys(err, "rename %s to %s", t->path, target);
    if (rc < 0) {
        osb_fs_tmp_discard(t);
        return rc;
    }
    free(osb_steal_ptr(&t->path));
    sync_dir(target);
    return 0;
}

void osb_fs_tmp_discard(struct osb_fs_tmp *t)
{
    if (t->fd >= 0)
        close(osb_steal_fd(&t->fd));
    if (t->path) {
        unlink(t->path);
        free(osb_steal_ptr(&t->path));
    }
}
