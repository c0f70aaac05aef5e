#include "runtime/native/image.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/timeutil.h"
#include "runtime/native/fsutil.h"

int osb_img_name_check(const char *name, struct osb_err *err)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0)
        return osb_err_set(err, OSB_E_INVALID, "image name is empty");
    if (n > OSB_IMG_NAME_MAX)
        return osb_err_set(err, OSB_E_INVALID, "image name longer than %d characters",
                           OSB_IMG_NAME_MAX);
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` must start with a lower-case letter or digit", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("._:/-", c);
        if (!ok)
            return osb_err_set(err, OSB_E_INVALID,
                               "image name `%s` has character '%c'; allowed: a-z 0-9 . _ : / -",
                               name, c);
    }
    if (strstr(name, "..") || strstr(name, "//") || name[n - 1] == '/' || strstr(name, "/."))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` has an empty, hidden or \"..\" path component", name);
    return 0;
}

/* On disk '/' is spelled '+' and ':' '@' (neither is allowed in names;
 * ':' would split overlayfs's lowerdir). */
static void dir_of(const char *images_dir, const char *name, char *out, size_t n)
{
    int len = snprintf(out, n, "%s/", images_dir);
    for (const char *c = name; *c && len + 1 < (int)n; c++)
        out[len++] = *c == '/' ? '+' : *c == ':' ? '@' : *c;
    out[len < (int)n ? len : (int)n - 1] = '\0';
}

int osb_img_lower(const char *images_dir, const char *name, char *out, size_t n,
                  struct osb_err *err)
{
    if (osb_img_name_check(name, err) < 0)
        return -1;
    char dir[PATH_MAX];
    dir_of(images_dir, name, dir, sizeof dir);
    snprintf(out, n, "%s/rootfs", dir);
    struct stat st;
    if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode))
        return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", name);
    return 0;
}

/* ------------------------------------------------------------ import */

/* Drop overlayfs's own xattrs: in a lower layer they would steer the
 * overlay (redirects, opaque dirs) in ways the image author chose. */
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
        if (strncmp(name, "trusted.overlay.", 16) == 0 || n == OSB_ARRAY_LEN(keep)) {
            dropped = true;
            continue;
        }
        keep[n].name = strdup(name);
        keep[n].val = malloc(len ? len : 1);
        if (keep[n].name && keep[n].val) {
            memcpy(keep[n].val, val, len);
            keep[n++].len = len;
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

/* Runs in the chroot()ed child: extract everything from fd into ".";
 * on failure writes the reason to msg. */
static int extract(int fd, char *msg, size_t n)
{
    struct archive *in = archive_read_new(), *out = archive_write_disk_new();
    archive_read_support_format_all(in);
    archive_read_support_filter_all(in);
    archive_write_disk_set_options(
        out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_TIME |
                 ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                 ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    int r = archive_read_open_fd(in, fd, 65536);
    if (r != ARCHIVE_OK) {
        snprintf(msg, n, "not a readable archive: %s", archive_error_string(in));
        goto done;
    }
    struct archive_entry *e;
    while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        strip_overlay_xattrs(e);
        const char *path = archive_entry_pathname(e);
        r = archive_write_header(out, e);
        if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
            r = archive_entry_size(e) > 0 ? copy_data(in, out) : ARCHIVE_OK;
        if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
            r = archive_write_finish_entry(out);
        if (r < ARCHIVE_WARN) {
            snprintf(msg, n, "entry `%s` refused: %s", path ? path : "?",
                     archive_error_string(out) ? archive_error_string(out)
                                               : archive_error_string(in));
            goto done;
        }
    }
    if (r != ARCHIVE_EOF)
        snprintf(msg, n, "corrupt archive: %s", archive_error_string(in));
    else
        r = ARCHIVE_OK;
done:
    archive_read_free(in);
    archive_write_free(out);
    return r == ARCHIVE_OK ? 0 : -1;
}

/* fork + chroot(root) + extract: even a libarchive bug cannot write
 * outside the new image. */
static int extract_confined(int fd, const char *root, struct osb_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return osb_err_sys(err, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return osb_err_sys(err, "fork");
    }
    if (pid == 0) {
        char msg[400] = "";
        close(p[0]);
        umask(0);
        if (chdir(root) < 0 || chroot(".") < 0)
            snprintf(msg, sizeof msg, "enter `%s`: %s", root, strerror(errno));
        else if (extract(fd, msg, sizeof msg) == 0)
            _exit(0);
        ssize_t w = write(p[1], msg, strlen(msg));
        (void)w;
        _exit(1);
    }
    close(p[1]);
    char msg[400];
    ssize_t n = OSB_RETRY(read(p[0], msg, sizeof msg - 1));
    close(p[0]);
    int status = 0;
    OSB_RETRY(waitpid(pid, &status, 0));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    msg[n > 0 ? n : 0] = '\0';
    return osb_err_set(err, OSB_E_INVALID, "%s", n > 0 ? msg : "the extracting process died");
}

int osb_img_import(const char *images_dir, const char *name, const char *tar_path,
                   struct osb_err *err)
{
    if (osb_img_name_check(name, err) < 0)
        return -1;
    if (strcmp(name, OSB_IMG_HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "`host` is the built-in image's name");
    char dir[PATH_MAX], tmp[PATH_MAX], root[PATH_MAX], meta[PATH_MAX];
    dir_of(images_dir, name, dir, sizeof dir);
    if (access(dir, F_OK) == 0)
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` already exists", name);
    _cleanup_close_ int fd = open(tar_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", tar_path);
    snprintf(tmp, sizeof tmp, "%s/.import-XXXXXX", images_dir);
    if (!mkdtemp(tmp))
        return osb_err_sys(err, "create a directory in `%s`", images_dir);
    snprintf(root, sizeof root, "%s/rootfs", tmp);
    int r = mkdir(root, 0755) < 0 ? osb_err_sys(err, "create `%s`", root)
                                  : extract_confined(fd, root, err);
    if (r == 0) {
        char line[64];
        snprintf(line, sizeof line, "%llu %lld\n", osb_rtfs_du(root), (long long)osb_now_ms());
        snprintf(meta, sizeof meta, "%s/meta", tmp);
        r = osb_rtfs_create(meta, line, strlen(line), 0, err);
    }
    if (r == 0 && chmod(tmp, 0755) < 0)
        r = osb_err_sys(err, "chmod `%s`", tmp);
    if (r == 0 && rename(tmp, dir) < 0)
        r = errno == EEXIST || errno == ENOTEMPTY
                ? osb_err_set(err, OSB_E_EXISTS, "image `%s` already exists", name)
                : osb_err_sys(err, "install `%s`", dir);
    if (r < 0) {
        osb_rtfs_remove_tree(tmp, NULL);
        return osb_err_wrap(err, "import image `%s` from `%s`", name, tar_path);
    }
    return 0;
}

/* ------------------------------------------------------------ remove, list */

/* The id of a sandbox using the image, "" if none. */
static void user_of(const char *sandboxes_dir, const char *name, char *id, size_t n)
{
    id[0] = '\0';
    _cleanup_closedir_ DIR *d = opendir(sandboxes_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX], rec[8192], want[300];
        snprintf(p, sizeof p, "%s/%s/%s", sandboxes_dir, e->d_name, OSB_SANDBOX_RECORD);
        snprintf(want, sizeof want, "image %s\n", name);
        if (osb_rtfs_read(p, rec, sizeof rec) >= 0 && strncmp(rec, want, strlen(want)) == 0) {
            snprintf(id, n, "%s", e->d_name);
            return;
        }
    }
}

int osb_img_remove(const char *images_dir, const char *sandboxes_dir, const char *name,
                   struct osb_err *err)
{
    if (osb_img_name_check(name, err) < 0)
        return -1;
    if (strcmp(name, OSB_IMG_HOST) == 0)
        return osb_err_set(err, OSB_E_INVALID, "the built-in `host` image cannot be removed");
    char dir[PATH_MAX], trash[PATH_MAX], id[256];
    dir_of(images_dir, name, dir, sizeof dir);
    if (access(dir, F_OK) < 0)
        return osb_err_set(err, OSB_E_NOTFOUND, "image `%s` not found", name);
    user_of(sandboxes_dir, name, id, sizeof id);
    if (id[0])
        return osb_err_set(err, OSB_E_EXISTS, "image `%s` is in use by sandbox `%s`", name, id);
    /* Disappear atomically, then delete at leisure. */
    snprintf(trash, sizeof trash, "%s/.remove-%d-%lld", images_dir, (int)getpid(),
             (long long)osb_mono_ms());
    if (rename(dir, trash) < 0)
        return osb_err_sys(err, "remove image `%s`", name);
    return osb_rtfs_remove_tree(trash, err);
}

static void read_meta(const char *dir, struct osb_img_info *info)
{
    char p[PATH_MAX], buf[128];
    snprintf(p, sizeof p, "%s/meta", dir);
    unsigned long long size = 0;
    long long created = 0;
    if (osb_rtfs_read(p, buf, sizeof buf) > 0) {
        char *end;
        size = strtoull(buf, &end, 10);
        created = strtoll(end, NULL, 10);
    }
    info->size_bytes = size;
    info->created_ms = created;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct osb_img_info *)a)->name, ((const struct osb_img_info *)b)->name);
}

int osb_img_list(const char *images_dir, struct osb_img_info *out, size_t max, struct osb_err *err)
{
    size_t n = 0;
    char dir[PATH_MAX];
    if (max == 0)
        return 0;
    snprintf(out[0].name, sizeof out[0].name, "%s", OSB_IMG_HOST);
    snprintf(dir, sizeof dir, "%s/%s", images_dir, OSB_IMG_HOST);
    read_meta(dir, &out[0]);
    n = 1;
    _cleanup_closedir_ DIR *d = opendir(images_dir);
    if (!d)
        return errno == ENOENT ? 1 : osb_err_sys(err, "read `%s`", images_dir);
    struct dirent *e;
    while (n < max && (e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, OSB_IMG_HOST) == 0)
            continue;
        struct osb_img_info *info = &out[n];
        snprintf(info->name, sizeof info->name, "%s", e->d_name);
        for (char *c = info->name; *c; c++)
            *c = *c == '+' ? '/' : *c == '@' ? ':' : *c;
        snprintf(dir, sizeof dir, "%s/%s", images_dir, e->d_name);
        read_meta(dir, info);
        n++;
    }
    qsort(out + 1, n - 1, sizeof *out, by_name);
    return (int)n;
}
