#include "common/fstree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

static int remove_children(int dfd, dev_t dev, const char *path, struct osb_err *err);

static int remove_entry(int dfd, const char *name, dev_t dev, const char *path, struct osb_err *err)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "stat `%s/%s`", path, name);
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
            return osb_err_sys(err, "remove `%s/%s`", path, name);
        return 0;
    }
    if (st.st_dev != dev)
        return osb_err_set(err, OSB_E_INTERNAL, "`%s/%s` is a mount point; not removed", path,
                           name);
    _cleanup_close_ int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
        return osb_err_sys(err, "open `%s/%s`", path, name);
    char subpath[PATH_MAX];
    snprintf(subpath, sizeof subpath, "%s/%s", path, name);
    if (remove_children(sub, dev, subpath, err) < 0)
        return -1;
    if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return osb_err_sys(err, "remove `%s`", subpath);
    return 0;
}

static int remove_children(int dfd, dev_t dev, const char *path, struct osb_err *err)
{
    int d2 = dup(dfd);
    if (d2 < 0)
        return osb_err_sys(err, "dup");
    DIR *d = fdopendir(d2);
    if (!d) {
        close(d2);
        return osb_err_sys(err, "read `%s`", path);
    }
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        r = remove_entry(dfd, e->d_name, dev, path, err);
    }
    closedir(d);
    return r;
}

int osb_fs_remove_tree(const char *path, struct osb_err *err)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "stat `%s`", path);
    if (!S_ISDIR(st.st_mode))
        return unlink(path) < 0 && errno != ENOENT ? osb_err_sys(err, "remove `%s`", path) : 0;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open `%s`", path);
    if (remove_children(fd, st.st_dev, path, err) < 0)
        return -1;
    if (rmdir(path) < 0 && errno != ENOENT)
        return osb_err_sys(err, "remove `%s`", path);
    return 0;
}

void osb_fs_discard_tree(const char *path)
{
    struct osb_err err = {0};
    if (osb_fs_remove_tree(path, &err) < 0)
        osb_err_log("remove `%s`: %s", path, err.msg);
}

ssize_t osb_fs_read(const char *path, char *buf, size_t cap)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = OSB_RETRY(read(fd, buf + len, cap - 1 - len));
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

int osb_fs_create(const char *path, const char *data, size_t len, int replace, struct osb_err *err)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (replace ? O_TRUNC : O_EXCL);
    _cleanup_close_ int fd = open(path, flags, 0644);
    if (fd < 0)
        return osb_err_sys(err, "create `%s`", path);
    size_t off = 0;
    while (off < len) {
        ssize_t n = OSB_RETRY(write(fd, data + off, len - off));
        if (n <= 0)
            return osb_err_sys(err, "write `%s`", path);
        off += (size_t)n;
    }
    return 0;
}

static unsigned long long du_at(int dfd)
{
    int d2 = dup(dfd);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0)
            close(d2);
        return 0;
    }
    unsigned long long sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        sum += (unsigned long long)st.st_blocks * 512;
        if (S_ISDIR(st.st_mode)) {
            _cleanup_close_ int sub =
                openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                sum += du_at(sub);
        }
    }
    closedir(d);
    return sum;
}

unsigned long long osb_fs_du(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? 0 : du_at(fd);
}
