/* The host-wide claim of a uid/gid range (idclaim.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
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

/* What the scan looks for: the range to claim, and whose it is. */
struct want {
    const char *dir, *state_dir;
    uint32_t first, count;
};

/* The "<pid> <state dir>" a claim holds; pid 0 when unreadable. */
static void read_owner(int fd, int *pid, char *sdir, size_t n)
{
    char buf[PATH_MAX + 32];
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    buf[k > 0 ? k : 0] = '\0';
    char *sp = strchr(buf, ' '), *nl = strchr(buf, '\n');
    *pid = 0;
    sdir[0] = '\0';
    if (!sp || !nl || nl < sp || sscanf(buf, "%d ", pid) != 1)
        return;
    *nl = '\0';
    snprintf(sdir, n, "%s", sp + 1);
}

/* A lock held although the server that wrote the claim is gone: a child
 * it forked had not yet exec'd (so closed the fd) when it died. That
 * claim is this state dir's own if it names it (the server's lock on the
 * state dir says no other server runs there). */
static bool left_by_predecessor(int pid, const char *sdir, const struct want *w)
{
    return pid > 0 && strcmp(sdir, w->state_dir) == 0 && kill(pid, 0) < 0 && errno == ESRCH;
}

static int remove_claim(int dirfd, const char *name, const char *why, const struct want *w,
                        struct osb_err *err)
{
    osb_info("native: removing `%s/%s`, the uid range claim of %s", w->dir, name, why);
    if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
        return osb_err_sys(err, "remove the claim `%s/%s`", w->dir, name);
    return 0;
}

/* One entry of the directory: a stale claim is removed; a live one that
 * overlaps the range wanted is the error. */
static int check_entry(int dirfd, const char *name, const struct want *w, struct osb_err *err)
{
    uint32_t b, m;
    if (!parse_name(name, &b, &m))
        return 0;
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open `%s/%s`", w->dir, name);
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return remove_claim(dirfd, name, "a server that is gone", w, err);
    if (errno != EWOULDBLOCK)
        return osb_err_sys(err, "flock `%s/%s`", w->dir, name);
    if (!overlap(w->first, w->count, b, m))
        return 0;
    int pid;
    char sdir[PATH_MAX];
    read_owner(fd, &pid, sdir, sizeof sdir);
    if (left_by_predecessor(pid, sdir, w))
        return remove_claim(dirfd, name, "this state dir's previous server", w, err);
    char who[PATH_MAX + 64] = "pid unknown";
    if (pid > 0)
        snprintf(who, sizeof who, "pid %d, state dir `%s`", pid, sdir);
    return osb_err_set(err, OSB_E_EXISTS,
                       "[native] userns_range \"%" PRIu32 ":%" PRIu32 "\" overlaps \"%" PRIu32
                       ":%" PRIu32 "\", the range another opensandbox-server on this host holds "
                       "(%s; claim `%s/%s`): give each server on a host its own userns_range, "
                       "ranges that do not overlap",
                       w->first, w->count, b, m, who, w->dir, name);
}

static int scan(int dirfd, const struct want *w, struct osb_err *err)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return osb_err_sys(err, "open `%s`", w->dir);
    }
    _cleanup_closedir_ DIR *dd = d;
    struct dirent *e;
    while ((e = readdir(dd)))
        if (check_entry(dirfd, e->d_name, w, err) < 0)
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
    if (n < 0 || (size_t)n >= sizeof buf || flock(fd, LOCK_EX | LOCK_NB) < 0 ||
        write(fd, buf, (size_t)n) != n) {
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
    struct want w = {.dir = dir, .state_dir = state_dir, .first = first, .count = count};
    if (scan(dirfd, &w, err) < 0)
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
