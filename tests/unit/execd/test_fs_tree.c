/* Tree walks (list, search), rm -rf, mkdir -p, streaming replace and move,
 * on a scratch directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "execd/fs_move.h"
#include "execd/fs_replace.h"
#include "execd/fs_tree.h"
#include "tap.h"

static char root[256];

static char *P(const char *rel)
{
    static char bufs[8][512];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, 512, "%s/%s", root, rel);
    return b;
}

static void put(const char *rel, const char *data)
{
    FILE *f = fopen(P(rel), "w");
    fputs(data, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* "path1,path2,..." relative to root, from a FileInfo array. */
static char *names_of(json_t *arr)
{
    static char out[4096];
    out[0] = '\0';
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *p = json_string_value(json_object_get(v, "path"));
        size_t l = strlen(out);
        snprintf(out + l, sizeof out - l, "%s%s%s", i ? "," : "", p + strlen(root) + 1,
                 strcmp(json_string_value(json_object_get(v, "type")), "symlink") ? "" : "@");
    }
    return out;
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/osb-fs-tree-XXXXXX");
    if (!mkdtemp(root))
        abort();
    mkdir(P("b"), 0755);
    mkdir(P("b/deep"), 0755);
    mkdir(P("outside"), 0755);
    put("a.txt", "A");
    put("b/c.txt", "C");
    put("b/deep/d.c", "D");
    put("outside/keep.txt", "keep");
    symlink(P("outside"), P("b/link"));
    put("Z.txt", "upper sorts first");
}

static void list(void)
{
    struct osb_err err = {0};
    json_t *out = json_array();
    OK(osb_fs_tree_list(root, 1, NULL, out, &err) == 0, "list depth 1");
    IS_STR(names_of(out), "Z.txt,a.txt,b,outside", "depth 1: children in byte order");
    json_decref(out);
    out = json_array();
    OK(osb_fs_tree_list(P("b"), 5, NULL, out, &err) == 0, "list depth 5");
    IS_STR(names_of(out), "b/c.txt,b/deep,b/deep/d.c,b/link@",
           "descendants follow their directory; symlink not traversed");
    json_decref(out);
    out = json_array();
    OK(osb_fs_tree_list(root, 0, NULL, out, &err) == 0 && json_array_size(out) == 0,
       "depth 0 is empty");
    json_decref(out);
    out = json_array();
    OK(osb_fs_tree_list(P("b/link"), 1, NULL, out, &err) < 0 && err.code == OSB_E_INVALID,
       "symlink root refused");
    OK(osb_fs_tree_list(P("a.txt"), 1, NULL, out, &err) < 0 && err.code == OSB_E_INVALID,
       "file root refused");
    OK(osb_fs_tree_list(P("nope"), 1, NULL, out, &err) < 0 && err.code == OSB_E_NOTFOUND,
       "missing root is not found");
    json_decref(out);
}

static void search(void)
{
    struct osb_err err = {0};
    struct osb_fs_glob *g = osb_fs_glob_new("*.txt", &err);
    json_t *out = json_array();
    OK(osb_fs_tree_search(root, g, NULL, out, &err) == 0, "search *.txt");
    IS_STR(names_of(out), "Z.txt,a.txt,b/c.txt,outside/keep.txt",
           "recursive, pre-order, symlinked directory not entered");
    json_decref(out);
    osb_fs_glob_free(g);
    g = osb_fs_glob_new("**", &err);
    out = json_array();
    IS_INT(osb_fs_tree_search(P("b"), g, NULL, out, &err), 0, "search **");
    IS_STR(names_of(out), "b/c.txt,b/deep/d.c,b/link@", "directories skipped, symlink listed");
    json_decref(out);
    out = json_array();
    OK(osb_fs_tree_search(P("a.txt"), g, NULL, out, &err) == 0 && json_array_size(out) == 1,
       "a file root matches itself");
    OK(osb_fs_tree_search(P("nope"), g, NULL, out, &err) < 0 && err.code == OSB_E_NOTFOUND,
       "missing root is not found");
    json_decref(out);
    osb_fs_glob_free(g);
}

static void mkdirs(void)
{
    struct osb_err err = {0};
    struct osb_fs_perm none = {.uid = (uid_t)-1, .gid = (gid_t)-1};
    bool created = false;
    OK(osb_fs_tree_mkdirs(P("m/n/o"), &none, &created, &err) == 0 && created, "mkdir -p");
    struct stat st;
    OK(stat(P("m/n/o"), &st) == 0 && S_ISDIR(st.st_mode), "leaf exists");
    OK(osb_fs_tree_mkdirs(P("m/n"), &none, &created, &err) == 0 && !created,
       "existing directory is fine, not created");
    OK(osb_fs_tree_mkdirs(P("a.txt/x"), &none, &created, &err) < 0 && err.code == OSB_E_SYS,
       "a file in the way fails");
    OK(osb_fs_tree_mkdirs(P("a.txt"), &none, &created, &err) < 0, "existing file fails");
}

static void remove_tree(void)
{
    struct osb_err err = {0};
    symlink(P("outside"), P("m/n/o/escape"));
    put("m/n/o/f", "x");
    OK(osb_fs_tree_remove(P("m"), &err) == 0, "rm -rf");
    struct stat st;
    OK(lstat(P("m"), &st) < 0, "tree gone");
    IS_STR(slurp(P("outside/keep.txt")), "keep", "symlink target untouched");
    OK(osb_fs_tree_remove(P("m"), &err) == 0, "missing path is fine");
    OK(osb_fs_tree_remove(P("b/link"), &err) == 0 && lstat(P("b/link"), &st) < 0 &&
           stat(P("outside"), &st) == 0,
       "removing a symlink removes only the link");
    put("lone", "x");
    OK(osb_fs_tree_remove(P("lone"), &err) == 0 && lstat(P("lone"), &st) < 0,
       "a file is removed too");
}

static void replace(void)
{
    struct osb_err err = {0};
    int64_t n = -1;
    put("r.txt", "foo bar foo baz foofoo");
    chmod(P("r.txt"), 0640);
    OK(osb_fs_replace_file(P("r.txt"), "foo", 3, "X", 1, &n, &err) == 0 && n == 4,
       "replace counts 4");
    IS_STR(slurp(P("r.txt")), "X bar X baz XX", "replaced content");
    struct stat st;
    OK(stat(P("r.txt"), &st) == 0 && (st.st_mode & 07777) == 0640, "mode kept");
    OK(osb_fs_replace_file(P("r.txt"), "aa", 2, "b", 1, &n, &err) == 0 && n == 0,
       "no match: count 0");
    put("o.txt", "aaaa");
    IS_INT(osb_fs_replace_file(P("o.txt"), "aa", 2, "a", 1, &n, &err), 0, "replace aa");
    OK(n == 2 && !strcmp(slurp(P("o.txt")), "aa"), "non-overlapping, left to right");
    symlink(P("r.txt"), P("r.link"));
    OK(osb_fs_replace_file(P("r.link"), "bar", 3, "BAR", 3, &n, &err) == 0 && n == 1,
       "replace through a symlink");
    OK(lstat(P("r.link"), &st) == 0 && S_ISLNK(st.st_mode), "the link stays a link");
    IS_STR(slurp(P("r.txt")), "X BAR X baz XX", "its target was rewritten");
    OK(osb_fs_replace_file(P("nope"), "a", 1, "b", 1, &n, &err) < 0 && err.code == OSB_E_NOTFOUND,
       "missing file is not found");
    OK(osb_fs_replace_file(P("b"), "a", 1, "b", 1, &n, &err) < 0 && err.code == OSB_E_SYS,
       "directory fails");
}

/* A pattern that straddles the 256 KiB read boundary is still found. */
static void replace_boundary(void)
{
    size_t size = 600 * 1024;
    char *data = osb_xmalloc(size + 1);
    memset(data, 'x', size);
    memcpy(data + 256 * 1024 - 2, "NEEDLE", 6);
    memcpy(data + size - 6, "NEEDLE", 6);
    data[size] = '\0';
    int fd = open(P("big"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (write(fd, data, size) != (ssize_t)size)
        abort();
    close(fd);
    struct osb_err err = {0};
    int64_t n = -1;
    OK(osb_fs_replace_file(P("big"), "NEEDLE", 6, "", 0, &n, &err) == 0 && n == 2,
       "matches across chunk boundaries");
    struct stat st;
    OK(stat(P("big"), &st) == 0 && st.st_size == (off_t)(size - 12), "size shrank by 12");
    free(data);
}

static void move(void)
{
    struct osb_err err = {0};
    put("mv1", "one");
    OK(osb_fs_move(P("mv1"), P("new/dir/mv1"), &err) == 0, "move into new directories");
    IS_STR(slurp(P("new/dir/mv1")), "one", "content moved");
    put("mv2", "two");
    OK(osb_fs_move(P("mv2"), P("new/dir/mv1"), &err) < 0 && err.code == OSB_E_EXISTS,
       "existing destination refused");
    OK(osb_fs_move(P("nope"), P("x"), &err) < 0 && err.code == OSB_E_NOTFOUND,
       "missing source is not found");
    /* /dev/shm is a tmpfs on most machines: a cross-device move. */
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/osb-fs-tree-%d", (int)getpid());
    if (osb_fs_move(P("mv2"), shm, &err) == 0) {
        IS_STR(slurp(shm), "two", "cross-device move copies");
        struct stat st;
        OK(lstat(P("mv2"), &st) < 0, "and removes the source");
        unlink(shm);
    } else {
        printf("# cross-device move: %s\n", err.msg);
    }
}

int main(void)
{
    setup();
    list();
    search();
    mkdirs();
    remove_tree();
    replace();
    replace_boundary();
    move();
    struct osb_err err = {0};
    IS_INT(osb_fs_tree_remove(root, &err), 0, "clean up");
    return tap_done();
}
