/* The host-wide claim of a uid/gid range (idclaim.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "runtime/native/idclaim.h"

void osb_idclaim_init(struct osb_idclaim *c)
{
    c->dirfd = c->fd = -1;
    c->name[0] = '\0';
}

/* "<start>-<count>" as take() names it; anything else is not a claim. */
static bool parse_name(const char *name, uint32_t *first, uint32_t *count)
{
    unsigned long long a, n;
    int end = 0;
    if (name[0] < '0' || name[0] > '9' || sscanf(name, "%llu-%llu%n", &a, &n, &end) != 2 ||
        name[end] || a > UINT32_MAX || n > UINT32_MAX)
        return false;
    *first = (uint32_t)a;
    *count = (uint32_t)n;
    return true;
}

static bool overlap(uint32_t a, uint32_t n, uint32_t b, uint32_t m)
{
    return (uint64_t)a < (uint64_t)b + m && (uint64_t)b < (uint64_t)a + n;
}

/* What a live claim says about its server: "pid 123, state dir /x". */
static void describe_owner(int fd, char *out, size_t n)
{
    char buf[PATH_MAX + 32], dir[PATH_MAX];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    int pid;
    buf[k > 0 ? k : 0] = '\0';
    if (sscanf(buf, "%d %4095s", &pid, dir) == 2)
        snprintf(out, n, "pid %d, state dir `%s`", pid, dir);
    else
        snprintf(out, n, "pid unknown");
}

/* One entry of the directory: a stale claim is removed; a live one that
 * overlaps [first, first + count) is the error. */
static int check_entry(int dirfd, const char *name, const char *dir, uint32_t first, uint32_t count,
                       struct osb_err *err)
{
    uint32_t b, m;
    if (!parse_name(name, &b, &m))
        return 0;
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open `%s/%s`", dir, name);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        osb_info("native: removing `%s/%s`, the uid range claim of a server that is gone", dir,
                 name);
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
            return osb_err_sys(err, "remove the stale claim `%s/%s`", dir, name);
        return 0;
    }
    if (errno != EWOULDBLOCK)
        return osb_err_sys(err, "flock `%s/%s`", dir, name);
    if (!overlap(first, count, b, m))
        return 0;
    char who[PATH_MAX + 64];
    describe_owner(fd, who, sizeof who);
    return osb_err_set(err, OSB_E_EXISTS,
                       "[native] userns_range \"%" PRIu32 ":%" PRIu32 "\" overlaps \"%" PRIu32
                       ":%" PRIu32 "\", the range another opensandbox-server on this host holds "
                       "(%s; claim `%s/%s`): give each server on a host its own userns_range, "
                       "ranges that do not overlap",
                       first, count, b, m, who, dir, name);
}

static int scan(int dirfd, const char *dir, uint32_t first, uint32_t count, struct osb_err *err)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return osb_err_sys(err, "open `%s`", dir);
    }
    _cleanup_closedir_ DIR *dd = d;
    struct dirent *e;
    while ((e = readdir(dd)))
        if (check_entry(dirfd, e->d_name, dir, first, count, err) < 0)
            return -1;
    return 0;
}

/* Our file, locked before the directory lock is let go: nobody sees it
 * unlocked, so nobody takes it for stale. */
static int create(struct osb_idclaim *c, const char *dir, const char *state_dir,
                  struct osb_err *err)
{
    _cleanup_close_ int fd =
        openat(c->dirfd, c->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return osb_err_sys(err, "create `%s/%s`", dir, c->name);
    char buf[PATH_MAX + 32];
    int n = snprintf(buf, sizeof buf, "%d %s\n", (int)getpid(), state_dir);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0 || write(fd, buf, (size_t)n) != n) {
        osb_err_sys(err, "claim `%s/%s`", dir, c->name);
        unlinkat(c->dirfd, c->name, 0);
        return -1;
    }
    c->fd = osb_steal_fd(&fd);
    return 0;
}

int osb_idclaim_take(struct osb_idclaim *c, const char *dir, uint32_t first, uint32_t count,
                     const char *state_dir, struct osb_err *err)
{
    if (osb_mkdir_p(dir, 0700, err) < 0)
        return -1;
    _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return osb_err_sys(err, "open `%s`", dir);
    if (OSB_RETRY(flock(dirfd, LOCK_EX)) < 0)
        return osb_err_sys(err, "lock `%s`", dir);
    if (scan(dirfd, dir, first, count, err) < 0)
        return -1; /* closing dirfd lets the directory lock go */
    snprintf(c->name, sizeof c->name, "%" PRIu32 "-%" PRIu32, first, count);
    c->dirfd = dirfd;
    if (create(c, dir, state_dir, err) < 0) {
        c->dirfd = -1;
        return -1;
    }
    flock(dirfd, LOCK_UN);
    c->dirfd = osb_steal_fd(&dirfd);
    return 0;
}

void osb_idclaim_drop(struct osb_idclaim *c)
{
    if (c->fd < 0)
        return;
    /* Under the directory lock: a scan never sees the file half gone. */
    if (OSB_RETRY(flock(c->dirfd, LOCK_EX)) == 0)
        unlinkat(c->dirfd, c->name, 0);
    close(c->fd);
    close(c->dirfd);
    osb_idclaim_init(c);
}
