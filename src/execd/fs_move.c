#include "execd/fs_move.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "execd/fs_atomic.h"
#include "execd/fs_path.h"
#include "execd/fs_tree.h"

static int copy_data(int in, int out, struct osb_err *err)
{
    static const size_t chunk = 1 << 20;
    bool plain = false;
    _cleanup_free_ char *buf = NULL;
    for (;;) {
        ssize_t n;
        if (!plain) {
            n = copy_file_range(in, NULL, out, NULL, chunk, 0);
            if (n < 0 &&
                (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
                plain = true;
                continue;
            }
        } else {
            if (!buf)
                buf = osb_xmalloc(chunk);
            n = read(in, buf, chunk);
            if (n > 0 && osb_fs_write_all(out, buf, (size_t)n) < 0)
                return osb_err_sys(err, "write");
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return osb_err_sys(err, "copy");
        if (n == 0)
            return 0;
    }
}

static int copy_file(const char *src, const char *dest, const struct stat *st, struct osb_err *err)
{
    _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return osb_err_sys(err, "open %s", src);
    struct osb_fs_tmp t;
    if (osb_fs_tmp_create(dest, 0600, &t, err) < 0)
        return -1;
    if (copy_data(in, t.fd, err) < 0) {
        osb_fs_tmp_discard(&t);
        return osb_err_wrap(err, "copy %s to %s", src, dest);
    }
    const struct timespec times[2] = {st->st_atim, st->st_mtim};
    futimens(t.fd, times);
    struct osb_fs_tmp_attrs a = {.set_mode = true,
                                 .mode = st->st_mode & 07777,
                                 .uid = st->st_uid,
                                 .gid = st->st_gid,
                                 .owner_optional = true};
    return osb_fs_tmp_commit(&t, dest, &a, err);
}

static int copy_link(const char *src, const char *dest, struct osb_err *err)
{
    char target[PATH_MAX];
    ssize_t n = readlink(src, target, sizeof target - 1);
    if (n < 0)
        return osb_err_sys(err, "readlink %s", src);
    target[n] = '\0';
    if (symlink(target, dest) < 0)
        return osb_err_sys(err, "symlink %s", dest);
    return 0;
}

/* rename(2) failed with EXDEV: copy, then remove the source. */
static int move_across(const char *src, const char *dest, const struct stat *st,
                       struct osb_err *err)
{
    int rc;
    if (S_ISREG(st->st_mode))
        rc = copy_file(src, dest, st, err);
    else if (S_ISLNK(st->st_mode))
        rc = copy_link(src, dest, err);
    else
        return osb_err_set(err, OSB_E_INTERNAL,
                           "cannot move %s to %s: different filesystems and not a regular file",
                           src, dest);
    if (rc < 0)
        return rc;
    if (unlink(src) < 0)
        return osb_err_sys(err, "remove %s after copying it", src);
    return 0;
}

static int rename_noreplace(const char *src, const char *dest)
{
    int rc = renameat2(AT_FDCWD, src, AT_FDCWD, dest, RENAME_NOREPLACE);
    if (rc < 0 && (errno == EINVAL || errno == ENOSYS))
        rc = rename(src, dest);
    return rc;
}

int osb_fs_move(const char *src, const char *dest, struct osb_err *err)
{
    struct stat st, dst;
    if (lstat(src, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_NOTFOUND, "source path not found: %s", src);
        return osb_err_sys(err, "stat %s", src);
    }
    _cleanup_free_ char *dir = osb_fs_path_dir(dest);
    struct osb_fs_perm none = {.uid = (uid_t)-1, .gid = (gid_t)-1};
    bool created;
    if (osb_fs_tree_mkdirs(dir, &none, &created, err) < 0)
        return osb_err_wrap(err, "create destination directory");
    if (lstat(dest, &dst) == 0)
        return osb_err_set(err, OSB_E_EXISTS, "destination path already exists: %s", dest);
    if (rename_noreplace(src, dest) == 0)
        return 0;
    if (errno == EEXIST)
        return osb_err_set(err, OSB_E_EXISTS, "destination path already exists: %s", dest);
    if (errno == EXDEV)
        return move_across(src, dest, &st, err);
    return osb_err_sys(err, "rename %s to %s", src, dest);
}
