#include "execd/fs_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "execd/fs_path.h"

/* ---- reading directories ---- */

struct names {
    char **v;
    size_t n, cap;
};

static void names_free(struct names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
    ns->v = NULL;
    ns->n = ns->cap = 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All entry names of the directory open at fd (fd stays open), sorted
 * bytewise like Go's os.ReadDir. */
static int read_names(int fd, const char *path, struct names *ns, struct osb_err *err)
{
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return osb_err_sys(err, "open directory %s", path);
    }
    rewinddir(d);
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (ns->n == ns->cap) {
            ns->cap = ns->cap ? ns->cap * 2 : 32;
            ns->v = osb_xrealloc(ns->v, ns->cap * sizeof *ns->v);
        }
        ns->v[ns->n++] = osb_xstrdup(de->d_name);
    }
    int e = errno;
    closedir(d);
    if (e) {
        errno = e;
        names_free(ns);
        return osb_err_sys(err, "read directory %s", path);
    }
    if (ns->n > 1)
        qsort(ns->v, ns->n, sizeof *ns->v, cmp_name);
    return 0;
}

static char *child_path(const char *dir, const char *name)
{
    return dir[1] == '\0' && dir[0] == '/' ? osb_xasprintf("/%s", name)
                                           : osb_xasprintf("%s/%s", dir, name);
}

/* ---- walking ---- */

struct walk {
    /* Called for each entry; returns <0 to stop. */
    int (*visit)(struct walk *w, const char *path, const char *name, const struct stat *st);
    int64_t max_depth; /* directories at this level are not entered */
    struct osb_fs_names *names;
    const struct osb_fs_glob *glob;
    json_t *out;
    struct osb_err *err;
};

static int walk_dir(struct walk *w, int fd, const char *path, int64_t level);

/* Enter the subdirectory `name` of the directory open at fd. Vanished
 * directories are skipped; any other failure stops the walk. */
static int enter(struct walk *w, int fd, const char *path, const char *name, int64_t level)
{
    _cleanup_close_ int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
        if (errno == ENOENT)
            return 0;
        return osb_err_sys(w->err, "open directory %s", path);
    }
    return walk_dir(w, sub, path, level);
}

static int walk_entry(struct walk *w, int fd, const char *dir, const char *name, int64_t level)
{
    struct stat st;
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        _cleanup_free_ char *p = child_path(dir, name);
        return osb_err_sys(w->err, "stat %s", p);
    }
    _cleanup_free_ char *path = child_path(dir, name);
    if (w->visit(w, path, name, &st) < 0)
        return -1;
    if (S_ISDIR(st.st_mode) && level + 1 < w->max_depth)
        return enter(w, fd, path, name, level + 1);
    return 0;
}

static int walk_dir(struct walk *w, int fd, const char *path, int64_t level)
{
    struct names ns = {0};
    if (read_names(fd, path, &ns, w->err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < ns.n && rc == 0; i++)
        rc = walk_entry(w, fd, path, ns.v[i], level);
    names_free(&ns);
    return rc;
}

/* ---- list ---- */

static int list_visit(struct walk *w, const char *path, const char *name, const struct stat *st)
{
    (void)name;
    json_array_append_new(w->out, osb_fs_info_json(path, st, w->names));
    return 0;
}

int osb_fs_tree_list(const char *root, int64_t depth, struct osb_fs_names *names, json_t *out,
                     struct osb_err *err)
{
    struct stat st;
    if (lstat(root, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_NOTFOUND, "file not found: %s", root);
        return osb_err_sys(err, "stat %s", root);
    }
    if (S_ISLNK(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "path is a symbolic link, refusing to traverse: %s",
                           root);
    if (!S_ISDIR(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "path is not a directory: %s", root);
    if (depth == 0)
        return 0;
    _cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open directory %s", root);
    struct walk w = {
        .visit = list_visit, .max_depth = depth, .names = names, .out = out, .err = err};
    return walk_dir(&w, fd, root, 0);
}

/* ---- search ---- */

static int search_visit(struct walk *w, const char *path, const char *name, const struct stat *st)
{
    if (!S_ISDIR(st->st_mode) && osb_fs_glob_match(w->glob, name))
        json_array_append_new(w->out, osb_fs_info_json(path, st, w->names));
    return 0;
}

int osb_fs_tree_search(const char *root, const struct osb_fs_glob *g, struct osb_fs_names *names,
                       json_t *out, struct osb_err *err)
{
    struct stat st;
    if (stat(root, &st) < 0 || lstat(root, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return osb_err_set(err, OSB_E_NOTFOUND, "file not found: %s", root);
        return osb_err_sys(err, "stat %s", root);
    }
    struct walk w = {.visit = search_visit,
                     .max_depth = INT64_MAX,
                     .names = names,
                     .glob = g,
                     .out = out,
                     .err = err};
    if (!S_ISDIR(st.st_mode)) {
        _cleanup_free_ char *base = osb_fs_path_base(root);
        return search_visit(&w, root, base, &st);
    }
    _cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open directory %s", root);
    return walk_dir(&w, fd, root, 0);
}

/* ---- remove ---- */

static int remove_at(int dirfd, const char *name, const char *path, struct osb_err *err);

/* Empty the directory open at fd. Names are read first and removed after,
 * and the pass repeats while entries keep appearing (a process inside the
 * sandbox may be writing into the tree). */
static int empty_dir(int fd, const char *path, struct osb_err *err)
{
    for (int pass = 0; pass < 8; pass++) {
        struct names ns = {0};
        if (read_names(fd, path, &ns, err) < 0)
            return -1;
        if (ns.n == 0)
            return 0;
        int rc = 0;
        for (size_t i = 0; i < ns.n && rc == 0; i++) {
            _cleanup_free_ char *sub = child_path(path, ns.v[i]);
            rc = remove_at(fd, ns.v[i], sub, err);
        }
        names_free(&ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int remove_dir_at(int dirfd, const char *name, const char *path, struct osb_err *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return osb_err_sys(err, "open directory %s", path);
    }
    int rc = empty_dir(fd, path, err);
    close(fd);
    if (rc < 0)
        return rc;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return osb_err_sys(err, "remove directory %s", path);
    return 0;
}

static int remove_at(int dirfd, const char *name, const char *path, struct osb_err *err)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return osb_err_sys(err, "remove %s", path);
    struct stat st;
    int e = errno;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
        errno = e;
        return osb_err_sys(err, "remove %s", path);
    }
    return remove_dir_at(dirfd, name, path, err);
}

int osb_fs_tree_remove(const char *path, struct osb_err *err)
{
    return remove_at(AT_FDCWD, path, path, err);
}

/* ---- mkdir -p ---- */

/* Create one directory of the chain; *made tells whether it is new. */
static int mkdir_one(const char *dir, const struct osb_fs_perm *p, bool *made, struct osb_err *err)
{
    *made = false;
    if (mkdir(dir, 0777) == 0) {
        *made = true;
        return osb_fs_perm_chown(dir, p, err);
    }
    int e = errno;
    struct stat st;
    if (e == EEXIST && stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        e = ENOTDIR;
    }
    errno = e;
    if (e == ENOENT)
        return osb_err_set(err, OSB_E_NOTFOUND, "mkdir %s: no such file or directory", dir);
    return osb_err_sys(err, "mkdir %s", dir);
}

int osb_fs_tree_mkdirs(const char *path, const struct osb_fs_perm *p, bool *created,
                       struct osb_err *err)
{
    struct stat st;
    *created = false;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
        return osb_err_sys(err, "mkdir %s", path);
    }
    _cleanup_free_ char *buf = osb_xstrdup(path);
    for (char *s = buf + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        int rc = buf[0] ? mkdir_one(buf, p, created, err) : 0;
        *s = saved;
        if (rc < 0)
            return rc;
        if (!saved)
            return 0;
    }
}
