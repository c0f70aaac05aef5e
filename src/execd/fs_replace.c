#include "execd/fs_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "execd/fs_atomic.h"

#define CHUNK (256 * 1024)

struct replacer {
    int out;
    const char *old, *rep;
    size_t oldlen, replen;
    int64_t count;
};

/* Scan buf[0..have): write everything up to the last byte that cannot
 * start a match any more, replacing matches. Returns bytes consumed. */
static ssize_t scan(struct replacer *r, const char *buf, size_t have, bool eof)
{
    size_t pos = 0;
    const char *m;
    while ((m = memmem(buf + pos, have - pos, r->old, r->oldlen))) {
        size_t at = (size_t)(m - buf);
        if (osb_fs_write_all(r->out, buf + pos, at - pos) < 0 ||
            osb_fs_write_all(r->out, r->rep, r->replen) < 0)
            return -1;
        r->count++;
        pos = at + r->oldlen;
    }
    /* A match may still begin in the last oldlen-1 bytes. */
    size_t keep = eof ? 0 : (have - pos < r->oldlen - 1 ? have - pos : r->oldlen - 1);
    size_t upto = have - keep;
    if (osb_fs_write_all(r->out, buf + pos, upto - pos) < 0)
        return -1;
    return (ssize_t)upto;
}

int osb_fs_replace_fd(int in, int out, const char *old, size_t oldlen, const char *rep,
                      size_t replen, int64_t *count, struct osb_err *err)
{
    struct replacer r = {.out = out, .old = old, .rep = rep, .oldlen = oldlen, .replen = replen};
    _cleanup_free_ char *buf = osb_xmalloc(CHUNK + oldlen);
    size_t have = 0;
    for (;;) {
        ssize_t n = read(in, buf + have, CHUNK);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return osb_err_sys(err, "read");
        }
        have += (size_t)n;
        ssize_t used = scan(&r, buf, have, n == 0);
        if (used < 0)
            return osb_err_sys(err, "write");
        memmove(buf, buf + used, have - (size_t)used);
        have -= (size_t)used;
        if (n == 0)
            break;
    }
    *count = r.count;
    return 0;
}

/* Open path for reading without blocking on a FIFO; must be a regular file. */
static int open_regular(const char *path, struct stat *st, struct osb_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_NOTFOUND, "file not found: %s", path);
        return osb_err_sys(err, "open %s", path);
    }
    if (fstat(fd, st) < 0) {
        close(fd);
        return osb_err_sys(err, "stat %s", path);
    }
    if (S_ISDIR(st->st_mode)) {
        close(fd);
        errno = EISDIR;
        return osb_err_sys(err, "read %s", path);
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return osb_err_set(err, OSB_E_INVALID, "not a regular file: %s", path);
    }
    fcntl(fd, F_SETFL, 0);
    return fd;
}

int osb_fs_replace_file(const char *path, const char *old, size_t oldlen, const char *rep,
                        size_t replen, int64_t *count, struct osb_err *err)
{
    struct stat st;
    _cleanup_close_ int in = open_regular(path, &st, err);
    if (in < 0)
        return -1;
    /* Rewrite the symlink's target, not the link. */
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real)
        return osb_err_sys(err, "resolve %s", path);
    struct osb_fs_tmp t;
    if (osb_fs_tmp_create(real, 0600, &t, err) < 0)
        return -1;
    if (osb_fs_replace_fd(in, t.fd, old, oldlen, rep, replen, count, err) < 0) {
        osb_fs_tmp_discard(&t);
        return osb_err_wrap(err, "replace in %s", path);
    }
    if (*count == 0) {
        osb_fs_tmp_discard(&t);
        return 0;
    }
    struct osb_fs_tmp_attrs a = {.set_mode = true,
                                 .mode = st.st_mode & 07777,
                                 .uid = st.st_uid,
                                 .gid = st.st_gid,
                                 .owner_optional = true};
    return osb_fs_tmp_commit(&t, real, &a, err);
}
