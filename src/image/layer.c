#include "image/layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/xalloc.h"

#define PIPE_SIZE (1 << 20)
#define OPAQUE_XATTR "trusted.overlay.opaque"
/* The same mark as an overlay in a user namespace reads it (userxattr). */
#define OPAQUE_XATTR_USERNS "user.overlay.opaque"
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

/* ------------------------------------------------------------ remove */

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)f;
    int r = type == FTW_DP ? rmdir(p) : unlink(p);
    return r < 0 && errno != ENOENT ? -1 : 0;
}

int osb_layer_remove(const char *dir, struct osb_err *err)
{
    struct stat st;
    if (lstat(dir, &st) < 0)
        return errno == ENOENT ? 0 : osb_err_sys(err, "stat `%s`", dir);
    if (!S_ISDIR(st.st_mode))
        return unlink(dir) < 0 ? osb_err_sys(err, "remove `%s`", dir) : 0;
    /* FTW_MOUNT: never descend into another filesystem. */
    if (nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
        return osb_err_sys(err, "remove `%s`", dir);
    return 0;
}

void osb_layer_discard(const char *dir)
{
    struct osb_err err = {0};
    if (osb_layer_remove(dir, &err) < 0)
        osb_warn("%s", err.msg);
}

/* ------------------------------------------------------------ unpack (child side) */

/* Drop overlayfs's own xattrs: in a lower layer they would steer the
 * overlay (redirects, opaque dirs) in ways the image author chose. Both
 * spellings: an overlay in a user namespace reads user.overlay.*. */
static void strip_overlay_xattrs(struct archive_entry *e)
{
    if (archive_entry_xattr_reset(e) == 0)
        return;
    struct {
        char *name;
        void *val;
        size_t len;
    } keep[64];
    size_t n = 0;
    const char *name;
    const void *val;
    size_t len;
    bool dropped = false;
    while (archive_entry_xattr_next(e, &name, &val, &len) == ARCHIVE_OK) {
        if (strncmp(name, "trusted.overlay.", 16) == 0 || strncmp(name, "user.overlay.", 13) == 0 ||
            n == OSB_ARRAY_LEN(keep)) {
            dropped = true;
            continue;
        }
        keep[n].name = strdup(name);
        keep[n].val = malloc(len ? len : 1);
        if (keep[n].name && keep[n].val) {
            memcpy(keep[n].val, val, len);
            keep[n++].len = len;
        } else {
            free(keep[n].name);
            free(keep[n].val);
        }
    }
    if (dropped) {
        archive_entry_xattr_clear(e);
        for (size_t i = 0; i < n; i++)
            archive_entry_xattr_add_entry(e, keep[i].name, keep[i].val, keep[i].len);
    }
    for (size_t i = 0; i < n; i++) {
        free(keep[i].name);
        free(keep[i].val);
    }
}

static int copy_data(struct archive *in, struct archive *out)
{
    const void *buf;
    size_t size;
    la_int64_t off;
    for (;;) {
        int r = archive_read_data_block(in, &buf, &size, &off);
        if (r == ARCHIVE_EOF)
            return ARCHIVE_OK;
        if (r < ARCHIVE_WARN)
            return r;
        if (archive_write_data_block(out, buf, size, off) < ARCHIVE_WARN)
            return ARCHIVE_FATAL;
    }
}

/* The whiteout's directory, checked as libarchive's SECURE flags would:
 * relative, no "..", no symlink on the way. "" when fine. */
static const char *unsafe_dir(const char *dir)
{
    if (dir[0] == '/')
        return "absolute path";
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    char *save = NULL, path[PATH_MAX] = ".";
    size_t len = 1;
    for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, "..") == 0)
            return "path contains '..'";
        if (strcmp(c, ".") == 0)
            continue;
        len += (size_t)snprintf(path + len, sizeof path - len, "/%s", c);
        struct stat st;
        if (lstat(path, &st) < 0) {
            if (errno == ENOENT && mkdir(path, 0755) == 0)
                continue;
            return "cannot create its directory";
        }
        if (S_ISLNK(st.st_mode))
            return "path goes through a symlink";
        if (!S_ISDIR(st.st_mode))
            return "parent is not a directory";
    }
    return "";
}

/* OCI whiteouts into overlayfs's spelling. 1 if e was one (handled). */
static int whiteout(struct archive_entry *e, char *msg, size_t n)
{
    const char *path = archive_entry_pathname(e);
    if (!path)
        return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strncmp(base, WH_PREFIX, 4) != 0)
        return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const char *why = unsafe_dir(dir);
    if (*why) {
        snprintf(msg, n, "entry `%s` refused: %s", path, why);
        return -1;
    }
    if (strcmp(base, WH_OPAQUE) == 0) {
        if (lsetxattr(dir, OPAQUE_XATTR, "y", 1, 0) < 0 ||
            lsetxattr(dir, OPAQUE_XATTR_USERNS, "y", 1, 0) < 0) {
            snprintf(msg, n, "entry `%s`: set %s: %s", path, OPAQUE_XATTR, strerror(errno));
            return -1;
        }
        return 1;
    }
    if (strncmp(base, ".wh..wh.", 8) == 0) /* aufs bookkeeping: ignore */
        return 1;
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/%s", dir, base + 4);
    if (strcmp(base + 4, "") == 0 || strcmp(base + 4, ".") == 0 || strcmp(base + 4, "..") == 0) {
        snprintf(msg, n, "entry `%s` refused: bad whiteout name", path);
        return -1;
    }
    struct osb_err rm = {0};
    if (osb_layer_remove(target, &rm) < 0) {
        snprintf(msg, n, "entry `%s`: replace with a whiteout: %s", path, rm.msg);
        return -1;
    }
    if (mknod(target, S_IFCHR | 0000, makedev(0, 0)) < 0) {
        snprintf(msg, n, "entry `%s`: create whiteout: %s", path, strerror(errno));
        return -1;
    }
    return 1;
}

static int extract_entry(struct archive *in, struct archive *out, struct archive_entry *e,
                         char *msg, size_t n)
{
    int w = whiteout(e, msg, n);
    if (w != 0)
        return w < 0 ? -1 : 0;
    strip_overlay_xattrs(e);
    const char *path = archive_entry_pathname(e);
    int r = archive_write_header(out, e);
    if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
        r = archive_entry_size(e) > 0 ? copy_data(in, out) : ARCHIVE_OK;
    if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
        r = archive_write_finish_entry(out);
    if (r >= ARCHIVE_WARN)
        return 0;
    const char *why =
        archive_error_string(out) ? archive_error_string(out) : archive_error_string(in);
    snprintf(msg, n, "entry `%s` refused: %s", path ? path : "?", why ? why : "unknown error");
    return -1;
}

/* Runs in the chroot()ed child: extract everything from fd into ".". */
static int extract(int fd, char *msg, size_t n)
{
    struct archive *in = archive_read_new(), *out = archive_write_disk_new();
    archive_read_support_format_tar(in);
    archive_read_support_format_gnutar(in);
    archive_read_support_filter_all(in);
    archive_write_disk_set_options(
        out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_TIME |
                 ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                 ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    int r = archive_read_open_fd(in, fd, 1 << 20);
    if (r != ARCHIVE_OK) {
        snprintf(msg, n, "not a readable tar stream: %s", archive_error_string(in));
        goto done;
    }
    struct archive_entry *e;
    while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        if (extract_entry(in, out, e, msg, n) < 0) {
            r = ARCHIVE_FATAL;
            goto done;
        }
    }
    if (r != ARCHIVE_EOF)
        snprintf(msg, n, "corrupt tar stream: %s", archive_error_string(in));
    else if (archive_write_close(out) != ARCHIVE_OK) {
        snprintf(msg, n, "finish: %s", archive_error_string(out));
        r = ARCHIVE_FATAL;
    } else
        r = ARCHIVE_OK;
done:
    archive_read_free(in);
    archive_write_free(out);
    return r == ARCHIVE_OK ? 0 : -1;
}

/* Child: stdin is the tar stream, stdout the error channel. Draining
 * what follows the end-of-archive keeps the writer from EPIPE. */
static void __attribute__((noreturn)) child_main(const char *dir)
{
    char msg[600] = "";
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    umask(0);
    if (chdir(dir) < 0 || chroot(".") < 0)
        snprintf(msg, sizeof msg, "enter `%s`: %s", dir, strerror(errno));
    else if (extract(0, msg, sizeof msg) == 0) {
        char sink[1 << 14];
        while (OSB_RETRY(read(0, sink, sizeof sink)) > 0)
            ;
        _exit(0);
    }
    ssize_t w = write(1, msg, strlen(msg));
    (void)w;
    _exit(1);
}

/* ------------------------------------------------------------ writer */

struct osb_layer_writer {
    char *dir;
    pid_t pid;
    int data_fd; /* -1 once closed */
    int msg_fd;
};

/* fork + chroot(dir) + extract from in_fd. Every other descriptor is
 * closed in the child: a sibling pull's pipe end held there would keep
 * that pull from ever seeing EOF. */
static int spawn(const char *dir, int in_fd, int msg_w, pid_t *pid, struct osb_err *err)
{
    pid_t p = fork();
    if (p < 0)
        return osb_err_sys(err, "fork");
    if (p == 0) {
        int a = fcntl(in_fd, F_DUPFD, 3), b = fcntl(msg_w, F_DUPFD, 3);
        if (a < 0 || b < 0 || dup2(a, 0) < 0 || dup2(b, 1) < 0)
            _exit(1);
        close_range(3, ~0U, 0);
        child_main(dir);
    }
    *pid = p;
    return 0;
}

static int start(const char *dir, int in_fd, struct osb_layer_writer *w, struct osb_err *err)
{
    int m[2];
    if (mkdir(dir, 0755) < 0)
        return osb_err_sys(err, "create layer `%s`", dir);
    if (pipe2(m, O_CLOEXEC) < 0) {
        rmdir(dir);
        return osb_err_sys(err, "pipe");
    }
    int r = spawn(dir, in_fd, m[1], &w->pid, err);
    close(m[1]);
    if (r < 0) {
        close(m[0]);
        rmdir(dir);
        return -1;
    }
    w->msg_fd = m[0];
    w->dir = osb_xstrdup(dir);
    return 0;
}

/* Wait for the child; its message becomes err. Removes dir on failure. */
static int finish(struct osb_layer_writer *w, struct osb_err *err)
{
    if (w->data_fd >= 0)
        close(w->data_fd);
    w->data_fd = -1;
    char msg[600];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof msg - 1 &&
           (n = OSB_RETRY(read(w->msg_fd, msg + len, sizeof msg - 1 - len))) > 0)
        len += (size_t)n;
    msg[len] = '\0';
    close(w->msg_fd);
    int status = 0;
    OSB_RETRY(waitpid(w->pid, &status, 0));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    osb_layer_discard(w->dir);
    return osb_err_set(err, OSB_E_INVALID, "%s", len ? msg : "the unpacking process died");
}

int osb_layer_begin(const char *dir, struct osb_layer_writer **out, struct osb_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    (void)fcntl(p[1], F_SETPIPE_SZ, PIPE_SIZE); /* fewer wake-ups; best effort */
    struct osb_layer_writer *w = osb_xcalloc(1, sizeof *w);
    w->data_fd = p[1];
    int r = start(dir, p[0], w, err);
    close(p[0]);
    if (r < 0) {
        close(p[1]);
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

/* SIGPIPE blocked for this thread only, and a pending one consumed, so
 * a dead unpacker is an EPIPE here, not the death of the server. */
static ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t n = OSB_RETRY(write(fd, data, len));
    if (n < 0 && errno == EPIPE) {
        struct timespec zero = {0, 0};
        int e = errno;
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
            ;
        errno = e;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return n;
}

int osb_layer_write(struct osb_layer_writer *w, const void *data, size_t len, struct osb_err *err)
{
    const char *p = data;
    while (len > 0 && w->data_fd >= 0) {
        ssize_t n = write_nosigpipe(w->data_fd, p, len);
        if (n < 0 && errno == EPIPE) {
            /* The unpacker quit: its reason is the error. */
            int r = finish(w, err);
            w->pid = -1;
            if (r == 0) {
                osb_layer_discard(w->dir);
                osb_err_set(err, OSB_E_INVALID, "data after the end of the tar stream");
            }
            return -1;
        }
        if (n < 0)
            return osb_err_sys(err, "write to the unpacker");
        p += n;
        len -= (size_t)n;
    }
    return w->data_fd >= 0 ? 0 : osb_err_set(err, OSB_E_INVALID, "layer writer already closed");
}

static void writer_free(struct osb_layer_writer *w)
{
    free(w->dir);
    free(w);
}

int osb_layer_commit(struct osb_layer_writer *w, struct osb_err *err)
{
    int r = w->pid > 0 ? finish(w, err) : osb_err_set(err, OSB_E_INVALID, "unpacking failed");
    if (w->pid <= 0)
        osb_layer_discard(w->dir);
    writer_free(w);
    return r;
}

void osb_layer_abort(struct osb_layer_writer *w)
{
    if (!w)
        return;
    if (w->pid > 0) {
        kill(w->pid, SIGKILL);
        finish(w, NULL);
    }
    osb_layer_discard(w->dir);
    writer_free(w);
}

int osb_layer_from_file(const char *dir, const char *tar_path, struct osb_err *err)
{
    _cleanup_close_ int fd = open(tar_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", tar_path);
    struct osb_layer_writer w = {.data_fd = -1};
    if (start(dir, fd, &w, err) < 0)
        return -1;
    int r = finish(&w, err);
    free(w.dir);
    return r;
}

/* ------------------------------------------------------------ copy_tree */

struct link_seen {
    dev_t dev;
    ino_t ino;
    char *path; /* relative to the destination root */
};

struct copy_ctx {
    int dst_root;
    dev_t dev;
    struct link_seen *links;
    size_t n_links, cap_links;
    char path[PATH_MAX]; /* relative path of the current entry */
};

/* Mount-specific overlay xattrs: meaningless once copied elsewhere. */
static bool xattr_skipped(const char *name)
{
    static const char *const skip[] = {"trusted.overlay.origin", "trusted.overlay.impure",
                                       "trusted.overlay.nlink", "trusted.overlay.upper",
                                       "trusted.overlay.uuid"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(skip); i++)
        if (strcmp(name, skip[i]) == 0)
            return true;
    return false;
}

static int copy_xattrs(int sdir, int ddir, const char *name, struct osb_err *err)
{
    char sp[64 + NAME_MAX], dp[64 + NAME_MAX], list[65536], val[65536];
    snprintf(sp, sizeof sp, "/proc/self/fd/%d/%s", sdir, name);
    snprintf(dp, sizeof dp, "/proc/self/fd/%d/%s", ddir, name);
    ssize_t n = llistxattr(sp, list, sizeof list);
    if (n < 0)
        return errno == ENOTSUP ? 0 : osb_err_sys(err, "list xattrs of `%s`", name);
    for (char *k = list; k < list + n; k += strlen(k) + 1) {
        if (xattr_skipped(k))
            continue;
        ssize_t vl = lgetxattr(sp, k, val, sizeof val);
        if (vl < 0)
            return osb_err_sys(err, "read xattr %s of `%s`", k, name);
        if (lsetxattr(dp, k, val, (size_t)vl, 0) < 0)
            return osb_err_sys(err, "set xattr %s on `%s`", k, name);
    }
    return 0;
}

static int copy_meta(int sdir, int ddir, const char *name, const struct stat *st,
                     struct osb_err *err)
{
    /* chown first: it drops file capabilities (security.capability). */
    if (fchownat(ddir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
        return osb_err_sys(err, "chown `%s`", name);
    if (copy_xattrs(sdir, ddir, name, err) < 0)
        return -1;
    /* After chown, which clears setuid bits. */
    if (!S_ISLNK(st->st_mode) && fchmodat(ddir, name, st->st_mode & 07777, 0) < 0)
        return osb_err_sys(err, "chmod `%s`", name);
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    if (utimensat(ddir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
        return osb_err_sys(err, "set times of `%s`", name);
    return 0;
}

static int copy_file(int sdir, int ddir, const char *name, struct osb_err *err)
{
    _cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0)
        return osb_err_sys(err, "open `%s`", name);
    _cleanup_close_ int out =
        openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return osb_err_sys(err, "create `%s`", name);
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return osb_err_sys(err, "copy `%s`", name);
        char buf[65536];
        while ((n = OSB_RETRY(read(in, buf, sizeof buf))) > 0)
            for (ssize_t o = 0, w; o < n; o += w)
                if ((w = OSB_RETRY(write(out, buf + o, (size_t)(n - o)))) <= 0)
                    return osb_err_sys(err, "write `%s`", name);
        return n < 0 ? osb_err_sys(err, "read `%s`", name) : 0;
    }
}

/* 1 when name was made as a hard link to an entry copied before. */
static int copy_hardlink(struct copy_ctx *c, int ddir, const char *name, const struct stat *st,
                         struct osb_err *err)
{
    if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
        return 0;
    for (size_t i = 0; i < c->n_links; i++)
        if (c->links[i].dev == st->st_dev && c->links[i].ino == st->st_ino)
            return linkat(c->dst_root, c->links[i].path, ddir, name, 0) < 0
                       ? osb_err_sys(err, "link `%s`", c->path)
                       : 1;
    if (c->n_links == c->cap_links) {
        c->cap_links = c->cap_links ? 2 * c->cap_links : 64;
        c->links = osb_xrealloc(c->links, c->cap_links * sizeof *c->links);
    }
    c->links[c->n_links++] = (struct link_seen){st->st_dev, st->st_ino, osb_xstrdup(c->path)};
    return 0;
}

static int copy_dir(struct copy_ctx *c, int sdir, int ddir, struct osb_err *err);

static int copy_entry(struct copy_ctx *c, int sdir, int ddir, const char *name, struct osb_err *err)
{
    struct stat st;
    if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return osb_err_sys(err, "stat `%s`", c->path);
    if (st.st_dev != c->dev)
        return osb_err_set(err, OSB_E_INVALID, "`%s` is on another filesystem", c->path);
    int h = copy_hardlink(c, ddir, name, &st, err);
    if (h != 0)
        return h < 0 ? -1 : 0;
    int r = 0;
    if (S_ISDIR(st.st_mode)) {
        if (mkdirat(ddir, name, 0700) < 0)
            return osb_err_sys(err, "create `%s`", c->path);
        _cleanup_close_ int s2 =
            openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int d2 =
            openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s2 < 0 || d2 < 0)
            return osb_err_sys(err, "open `%s`", c->path);
        r = copy_dir(c, s2, d2, err);
    } else if (S_ISREG(st.st_mode)) {
        r = copy_file(sdir, ddir, name, err);
    } else if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(sdir, name, target, sizeof target - 1);
        if (n < 0)
            return osb_err_sys(err, "read link `%s`", c->path);
        target[n] = '\0';
        r = symlinkat(target, ddir, name) < 0 ? osb_err_sys(err, "symlink `%s`", c->path) : 0;
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
        r = mknodat(ddir, name, st.st_mode, st.st_rdev) < 0
                ? osb_err_sys(err, "create `%s`", c->path)
                : 0;
    } else {
        return 0; /* sockets are not content */
    }
    return r < 0 ? -1 : copy_meta(sdir, ddir, name, &st, err);
}

static int copy_dir(struct copy_ctx *c, int sdir, int ddir, struct osb_err *err)
{
    int fd = dup(sdir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return osb_err_sys(err, "read `%s`", c->path);
    }
    size_t len = strlen(c->path);
    struct dirent *e;
    int r = 0;
    while (r == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(c->path + len, sizeof c->path - len, "%s%s", len ? "/" : "", e->d_name);
        r = copy_entry(c, sdir, ddir, e->d_name, err);
        c->path[len] = '\0';
    }
    closedir(d);
    return r;
}

int osb_layer_copy_tree(int src_dirfd, const char *dir, struct osb_err *err)
{
    struct stat st;
    if (fstat(src_dirfd, &st) < 0)
        return osb_err_sys(err, "stat the source of `%s`", dir);
    if (mkdir(dir, 0700) < 0)
        return osb_err_sys(err, "create layer `%s`", dir);
    struct copy_ctx c = {.dev = st.st_dev, .dst_root = -1};
    int r = (c.dst_root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0
                ? osb_err_sys(err, "open `%s`", dir)
                : copy_dir(&c, src_dirfd, c.dst_root, err);
    if (r == 0)
        r = copy_xattrs(src_dirfd, c.dst_root, ".", err);
    if (r == 0 && (fchown(c.dst_root, st.st_uid, st.st_gid) < 0 ||
                   fchmod(c.dst_root, st.st_mode & 07777) < 0))
        r = osb_err_sys(err, "set owner and mode of `%s`", dir);
    if (c.dst_root >= 0)
        close(c.dst_root);
    for (size_t i = 0; i < c.n_links; i++)
        free(c.links[i].path);
    free(c.links);
    if (r < 0) {
        osb_layer_discard(dir);
        return osb_err_wrap(err, "copy into layer `%s`", dir);
    }
    return 0;
}

/* ------------------------------------------------------------ size */

/* fts rather than nftw: it walks without a callback, so the hard links
 * seen live in this call, not in thread-local statics, and it copes with
 * deep trees without running out of descriptors. */
static bool du_link_seen(struct link_seen **links, size_t *n, size_t *cap, const struct stat *st)
{
    for (size_t i = 0; i < *n; i++)
        if ((*links)[i].ino == st->st_ino && (*links)[i].dev == st->st_dev)
            return true;
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *links = osb_xrealloc(*links, *cap * sizeof **links);
    }
    (*links)[(*n)++] = (struct link_seen){st->st_dev, st->st_ino, NULL};
    return false;
}

int osb_layer_size(const char *dir, unsigned long long *bytes, struct osb_err *err)
{
    char *const roots[] = {(char *)dir, NULL};
    FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_XDEV, NULL);
    if (!fts)
        return osb_err_sys(err, "measure `%s`", dir);
    struct link_seen *links = NULL;
    size_t n = 0, cap = 0;
    unsigned long long total = 0;
    dev_t dev = 0;
    int r = 0;
    FTSENT *e = NULL;
    while (r == 0 && (e = fts_read(fts))) {
        if (e->fts_info == FTS_DP)
            continue; /* a directory again, after its contents */
        if (e->fts_info == FTS_NS || e->fts_info == FTS_ERR) {
            /* An entry that vanished under us is not counted; a root that
             * cannot be read is an error, as it is for nftw. */
            if (e->fts_level == FTS_ROOTLEVEL) {
                errno = e->fts_errno;
                r = -1;
            }
            continue;
        }
        const struct stat *st = e->fts_statp;
        if (e->fts_level == FTS_ROOTLEVEL)
            dev = st->st_dev;
        if (st->st_dev != dev) { /* a mount inside: neither counted nor entered */
            fts_set(fts, e, FTS_SKIP);
            continue;
        }
        if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && du_link_seen(&links, &n, &cap, st))
            continue;
        total += (unsigned long long)st->st_blocks * 512;
    }
    if (r == 0 && !e && errno != 0) /* fts_read ends with errno 0, or fails */
        r = -1;
    int saved = errno;
    fts_close(fts);
    free(links);
    errno = saved;
    if (r != 0)
        return osb_err_sys(err, "measure `%s`", dir);
    *bytes = total;
    return 0;
}

/* ------------------------------------------------------------ to_tar */

struct tar_ctx {
    struct archive *a;
    struct archive_entry_linkresolver *lr;
    char root[PATH_MAX];
};

static int tar_fail(struct tar_ctx *c, const char *rel, struct osb_err *err)
{
    return osb_err_set(err, OSB_E_INTERNAL, "write `%s` to the tar: %s", rel,
                       archive_error_string(c->a));
}

static int tar_empty(struct tar_ctx *c, const char *rel, struct osb_err *err)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, 0);
    int r = archive_write_header(c->a, e) < ARCHIVE_WARN ? tar_fail(c, rel, err) : 0;
    archive_entry_free(e);
    return r;
}

static void tar_xattrs(struct archive_entry *e, const char *path)
{
    char list[65536], val[65536];
    ssize_t n = llistxattr(path, list, sizeof list);
    for (char *k = list; n > 0 && k < list + n; k += strlen(k) + 1) {
        if (strncmp(k, "trusted.overlay.", 16) == 0 || strncmp(k, "user.overlay.", 13) == 0)
            continue;
        ssize_t vl = lgetxattr(path, k, val, sizeof val);
        if (vl >= 0)
            archive_entry_xattr_add_entry(e, k, val, (size_t)vl);
    }
}

static int tar_data(struct tar_ctx *c, const char *path, const char *rel, struct osb_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", path);
    char buf[1 << 16];
    ssize_t n;
    while ((n = OSB_RETRY(read(fd, buf, sizeof buf))) > 0)
        if (archive_write_data(c->a, buf, (size_t)n) < 0)
            return tar_fail(c, rel, err);
    return n < 0 ? osb_err_sys(err, "read `%s`", path) : 0;
}

static int tar_entry(struct tar_ctx *c, const char *path, const char *rel, const struct stat *st,
                     struct osb_err *err)
{
    struct archive_entry *e = archive_entry_new(), *spare = NULL;
    archive_entry_copy_stat(e, st);
    archive_entry_set_pathname(e, rel);
    if (S_ISLNK(st->st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        archive_entry_set_symlink(e, target);
    }
    tar_xattrs(e, path);
    archive_entry_linkify(c->lr, &e, &spare);
    int r = 0;
    if (e) {
        bool data = S_ISREG(st->st_mode) && !archive_entry_hardlink(e) && st->st_size > 0;
        if (archive_write_header(c->a, e) < ARCHIVE_WARN)
            r = tar_fail(c, rel, err);
        else if (data)
            r = tar_data(c, path, rel, err);
        archive_entry_free(e);
    }
    archive_entry_free(spare);
    return r;
}

static int tar_dir(struct tar_ctx *c, const char *rel, struct osb_err *err);

static int tar_one(struct tar_ctx *c, const char *rel, struct osb_err *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", c->root, rel);
    struct stat st;
    if (lstat(path, &st) < 0)
        return osb_err_sys(err, "stat `%s`", path);
    if (S_ISSOCK(st.st_mode))
        return 0;
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
        char wh[PATH_MAX];
        const char *slash = strrchr(rel, '/');
        snprintf(wh, sizeof wh, "%.*s%s" WH_PREFIX "%s", slash ? (int)(slash - rel) : 0, rel,
                 slash ? "/" : "", slash ? slash + 1 : rel);
        return tar_empty(c, wh, err);
    }
    if (tar_entry(c, path, rel, &st, err) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return 0;
    char v[4];
    ssize_t n = lgetxattr(path, OPAQUE_XATTR, v, sizeof v);
    if (n == 1 && v[0] == 'y') {
        char wh[PATH_MAX];
        snprintf(wh, sizeof wh, "%s/" WH_OPAQUE, rel);
        if (tar_empty(c, wh, err) < 0)
            return -1;
    }
    return tar_dir(c, rel, err);
}

static int tar_dir(struct tar_ctx *c, const char *rel, struct osb_err *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", c->root, *rel ? "/" : "", rel);
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0)
        return osb_err_sys(err, "read `%s`", path);
    int r = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (r == 0 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name);
            r = tar_one(c, sub, err);
        }
        free(names[i]);
    }
    free(names);
    return r;
}

int osb_layer_to_tar(const char *dir, int fd, struct osb_err *err)
{
    struct tar_ctx c = {.a = archive_write_new(), .lr = archive_entry_linkresolver_new()};
    snprintf(c.root, sizeof c.root, "%s", dir);
    archive_write_set_format_pax_restricted(c.a);
    archive_entry_linkresolver_set_strategy(c.lr, archive_format(c.a));
    archive_write_set_bytes_in_last_block(c.a, 1);
    int r = archive_write_open_fd(c.a, fd) != ARCHIVE_OK ? tar_fail(&c, dir, err) : 0;
    if (r == 0)
        r = tar_dir(&c, "", err);
    if (r == 0 && archive_write_close(c.a) != ARCHIVE_OK)
        r = tar_fail(&c, dir, err);
    archive_entry_linkresolver_free(c.lr);
    archive_write_free(c.a);
    return r;
}
