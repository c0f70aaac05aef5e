/* The built-in `host` image: works offline on any Linux host because it is
 * made of the host's own programs and libraries, bound read-only, under a
 * private, minimal /etc (no host passwords, no host configuration beyond
 * what programs need to run: the dynamic linker cache, alternatives
 * symlinks, the CA bundle, shell profiles, protocol tables...). Never
 * /etc/ssl/private, shadow, ssh keys or /etc/environment. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/timeutil.h"
#include "common/fstree.h"
#include "runtime/hostimage.h"

/* Bump when the skeleton's content changes: existing ones are rebuilt. */
#define SKELETON_VERSION "3"

static const char *const top_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};

static const char *const etc_copies[] = {
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "bash.bashrc",
    "profile",
    "profile.d",
    "inputrc",
    "localtime",
    "timezone",
    "mime.types",
    /* the CA bundle only: the hash links are hundreds of symlinks, and
     * /etc/ssl/private holds the host's keys */
    "ssl/certs/ca-certificates.crt",
    "ssl/openssl.cnf",
    "pki/tls/certs/ca-bundle.crt",
    "ca-certificates.conf",
    "debian_version",
    "shells",
    "gai.conf",
    "protocols",
    "services",
    "rpc",
    "ethertypes",
    "magic",
    "magic.mime",
    "python3*",
    "perl",
    "vim",
    "terminfo",
    "bindresvport.blacklist",
    "mailcap",
    "login.defs",
    "locale.alias",
    "locale.gen",
    "default/locale",
    /* Debian's JDKs link their conf/ (java.security, jvm.cfg) and the CA
     * store into /etc; without them a JVM cannot start */
    "java-*-openjdk",
    "ssl/certs/java",
};

static const struct {
    const char *path;
    mode_t mode;
} skel_dirs[] = {
    {"proc", 0555},        {"sys", 0555},
    {"dev", 0755},         {"tmp", 01777},
    {"root", 0700},        {"home", 0755},
    {"run", 0755},         {"var", 0755},
    {"var/tmp", 01777},    {"var/lib", 0755},
    {"var/log", 0755},     {"var/cache", 0755},
    {"opt", 0755},         {"opt/opensandbox", 0755},
    {"mnt", 0755},         {"srv", 0755},
    {"media", 0755},       {"etc", 0755},
    {"etc/default", 0755},
};

/* "usr:d bin:l:usr/bin ...": how the host lays out its top-level program
 * directories; the skeleton mirrors it and is rebuilt when it changes. */
static void host_layout(char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "v" SKELETON_VERSION);
    for (size_t i = 0; i < OSB_ARRAY_LEN(top_dirs) && len < n; i++) {
        char p[64], target[256];
        struct stat st;
        snprintf(p, sizeof p, "/%s", top_dirs[i]);
        if (lstat(p, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t t = readlink(p, target, sizeof target - 1);
            target[t > 0 ? t : 0] = '\0';
            len += (size_t)snprintf(out + len, n - len, " %s:l:%s", top_dirs[i], target);
        } else if (S_ISDIR(st.st_mode)) {
            len += (size_t)snprintf(out + len, n - len, " %s:d", top_dirs[i]);
        }
    }
}

static int copy_file(const char *src, const char *dst, mode_t mode, struct osb_err *err)
{
    _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return 0; /* unreadable host file: leave it out */
    _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
    if (out < 0)
        return osb_err_sys(err, "create `%s`", dst);
    char buf[65536];
    for (;;) {
        ssize_t n = OSB_RETRY(read(in, buf, sizeof buf));
        if (n <= 0)
            return n < 0 ? osb_err_sys(err, "read `%s`", src) : 0;
        if (OSB_RETRY(write(out, buf, (size_t)n)) != n)
            return osb_err_sys(err, "write `%s`", dst);
    }
}

/* cp -a for the small /etc subtrees: symlinks copied as symlinks, only
 * directories, links and regular files. */
static int copy_tree(const char *src, const char *dst, int depth, struct osb_err *err)
{
    struct stat st;
    if (lstat(src, &st) < 0 || depth > 8)
        return 0;
    if (S_ISLNK(st.st_mode)) {
        char t[PATH_MAX];
        ssize_t n = readlink(src, t, sizeof t - 1);
        if (n < 0)
            return 0;
        t[n] = '\0';
        return symlink(t, dst) < 0 ? osb_err_sys(err, "symlink `%s`", dst) : 0;
    }
    if (S_ISREG(st.st_mode))
        return copy_file(src, dst, st.st_mode, err);
    if (!S_ISDIR(st.st_mode))
        return 0;
    if (mkdir(dst, st.st_mode & 07777) < 0 && errno != EEXIST)
        return osb_err_sys(err, "create `%s`", dst);
    _cleanup_closedir_ DIR *d = opendir(src);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char s2[PATH_MAX], d2[PATH_MAX];
        snprintf(s2, sizeof s2, "%s/%s", src, e->d_name);
        snprintf(d2, sizeof d2, "%s/%s", dst, e->d_name);
        if (copy_tree(s2, d2, depth + 1, err) < 0)
            return -1;
    }
    return 0;
}

static int copy_etc(const char *root, struct osb_err *err)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(etc_copies); i++) {
        char pattern[128];
        snprintf(pattern, sizeof pattern, "/etc/%s", etc_copies[i]);
        glob_t g;
        if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
            continue;
        int r = 0;
        for (size_t j = 0; j < g.gl_pathc && r == 0; j++) {
            char dst[PATH_MAX], parent[PATH_MAX];
            snprintf(dst, sizeof dst, "%s%s", root, g.gl_pathv[j]);
            snprintf(parent, sizeof parent, "%s", dst);
            *strrchr(parent, '/') = '\0';
            r = osb_mkdir_p(parent, 0755, err);
            if (r == 0)
                r = copy_tree(g.gl_pathv[j], dst, 0, err);
        }
        globfree(&g);
        if (r < 0)
            return -1;
    }
    return 0;
}

static int write_etc(const char *root, const char *name, const char *data, struct osb_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/etc/%s", root, name);
    return osb_fs_create(p, data, strlen(data), 1, err);
}

static int generate_etc(const char *root, struct osb_err *err)
{
    const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
    char passwd[512];
    snprintf(passwd, sizeof passwd,
             "root:x:0:0:root:/root:%s\n"
             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
             shell);
    char mtab[PATH_MAX];
    snprintf(mtab, sizeof mtab, "%s/etc/mtab", root);
    if (symlink("../proc/self/mounts", mtab) < 0)
        return osb_err_sys(err, "create `%s`", mtab);
    return write_etc(root, "passwd", passwd, err) < 0 ||
                   write_etc(root, "group", "root:x:0:\ntty:x:5:\nusers:x:100:\nnogroup:x:65534:\n",
                             err) < 0 ||
                   write_etc(root, "shadow", "root:*:19000:0:99999:7:::\n", err) < 0 ||
                   write_etc(root, "nsswitch.conf",
                             "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                             "networks: files\nprotocols: files\nservices: files\n"
                             "ethers: files\nrpc: files\n",
                             err) < 0 ||
                   write_etc(root, "hosts", "127.0.0.1\tlocalhost\n", err) < 0 ||
                   write_etc(root, "hostname", "sandbox\n", err) < 0 ||
                   write_etc(root, "os-release",
                             "NAME=\"OpenSandbox host image\"\nID=opensandbox-host\n"
                             "PRETTY_NAME=\"OpenSandbox host image (host programs, private "
                             "/etc)\"\nHOME_URL=\"https://github.com/alibaba/OpenSandbox\"\n",
                             err) < 0
               ? -1
               : 0;
}

static int build_skeleton(const char *root, struct osb_err *err)
{
    if (mkdir(root, 0755) < 0)
        return osb_err_sys(err, "create `%s`", root);
    for (size_t i = 0; i < OSB_ARRAY_LEN(skel_dirs); i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", root, skel_dirs[i].path);
        if (mkdir(p, skel_dirs[i].mode) < 0 || chmod(p, skel_dirs[i].mode) < 0)
            return osb_err_sys(err, "create `%s`", p);
    }
    for (size_t i = 0; i < OSB_ARRAY_LEN(top_dirs); i++) {
        char src[64], dst[PATH_MAX], target[256];
        struct stat st;
        snprintf(src, sizeof src, "/%s", top_dirs[i]);
        snprintf(dst, sizeof dst, "%s/%s", root, top_dirs[i]);
        if (lstat(src, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t t = readlink(src, target, sizeof target - 1);
            if (t <= 0)
                continue;
            target[t] = '\0';
            if (symlink(target, dst) < 0)
                return osb_err_sys(err, "create `%s`", dst);
        } else if (S_ISDIR(st.st_mode) && mkdir(dst, 0755) < 0) {
            return osb_err_sys(err, "create `%s`", dst);
        }
    }
    return copy_etc(root, err) < 0 ? -1 : generate_etc(root, err);
}

static void fill_binds(struct osb_img_host *h)
{
    h->n_binds = 0;
    for (size_t i = 0; i < OSB_ARRAY_LEN(top_dirs); i++) {
        char *p = h->storage[h->n_binds];
        snprintf(p, sizeof h->storage[0], "/%s", top_dirs[i]);
        struct stat st;
        if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        h->binds[h->n_binds].src = p;
        h->binds[h->n_binds].dst = p;
        h->n_binds++;
    }
}

int osb_img_host_prepare(const char *images_dir, struct osb_img_host *h, struct osb_err *err)
{
    char dir[PATH_MAX], stamp[PATH_MAX], want[1024], have[1024];
    fill_binds(h);
    host_layout(want, sizeof want);
    snprintf(dir, sizeof dir, "%s/%s", images_dir, OSB_IMG_HOST);
    snprintf(stamp, sizeof stamp, "%s/layout", dir);
    if (osb_fs_read(stamp, have, sizeof have) >= 0 && strcmp(have, want) == 0)
        return 0;
    /* Build next to it, then swap in with rename: a crash leaves either
     * the old image or the new one, never half of one. */
    char tmp[PATH_MAX], root[PATH_MAX], old[PATH_MAX], meta[PATH_MAX], line[64];
    snprintf(tmp, sizeof tmp, "%s/.host-build-%d", images_dir, (int)getpid());
    snprintf(root, sizeof root, "%s/rootfs", tmp);
    snprintf(old, sizeof old, "%s/.host-old-%d", images_dir, (int)getpid());
    osb_fs_discard_tree(tmp);
    if (mkdir(tmp, 0755) < 0)
        return osb_err_sys(err, "create `%s`", tmp);
    snprintf(meta, sizeof meta, "%s/meta", tmp);
    snprintf(line, sizeof line, "0 %lld\n", (long long)osb_now_ms());
    snprintf(stamp, sizeof stamp, "%s/layout", tmp);
    if (build_skeleton(root, err) < 0 || osb_fs_create(meta, line, strlen(line), 1, err) < 0 ||
        osb_fs_create(stamp, want, strlen(want), 1, err) < 0) {
        osb_fs_discard_tree(tmp);
        return osb_err_wrap(err, "build the host image");
    }
    if (rename(dir, old) < 0 && errno != ENOENT) {
        osb_fs_discard_tree(tmp);
        return osb_err_sys(err, "replace `%s`", dir);
    }
    if (rename(tmp, dir) < 0) {
        osb_fs_discard_tree(tmp);
        return osb_err_sys(err, "install `%s`", dir);
    }
    osb_fs_discard_tree(old);
    return 0;
}
