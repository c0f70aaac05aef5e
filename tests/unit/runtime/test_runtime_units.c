/* Pieces of the native runtime that need no root (the helper's spec has
 * its own test, test_initspec.c): cgroup layout parsing, cgroup records, image names, the no-follow tree removal. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "runtime/init/spec.h"
#include "runtime/cgroupfs.h"
#include "runtime/runtime.h"
#include "common/fstree.h"
#include "image/store.h"
#include "runtime/hostimage.h"
#include "tap.h"

static const char hybrid[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static void test_mountinfo(void)
{
    struct osb_cg_mounts m;
    osb_cg_parse_mountinfo(hybrid, &m);
    IS_STR(m.v2, "/sys/fs/cgroup/unified", "hybrid: the v2 mount");
    IS_STR(m.v1[OSB_CG_MEMORY], "/sys/fs/cgroup/memory", "hybrid: memory");
    IS_STR(m.v1[OSB_CG_CPU], "/sys/fs/cgroup/cpu", "hybrid: cpu");
    IS_STR(m.v1[OSB_CG_CPUACCT], "/sys/fs/cgroup/cpuacct", "hybrid: cpuacct apart");
    OK(!m.cpuacct_with_cpu, "hybrid: cpu and cpuacct are separate hierarchies");
    IS_STR(m.v1[OSB_CG_PIDS], "/sys/fs/cgroup/pids", "hybrid: pids");
    IS_STR(m.v1[OSB_CG_FREEZER], "/sys/fs/cgroup/freezer", "hybrid: freezer");

    osb_cg_parse_mountinfo("25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n", &m);
    IS_STR(m.v2, "/sys/fs/cgroup", "pure v2");
    OK(!m.v1[OSB_CG_MEMORY][0], "pure v2 has no v1 memory");

    osb_cg_parse_mountinfo(
        "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n",
        &m);
    OK(m.cpuacct_with_cpu, "co-mounted cpu,cpuacct");
    IS_STR(m.v1_root[OSB_CG_CPU], "/docker/abc", "the mount root is kept");
    IS_STR(m.v1[OSB_CG_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct", "cpuacct shares the mount");
}

static void test_own_cgroup(void)
{
    const char *cg = "9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/x\n"
                     "1:cpu,cpuacct:/c\n0::/user.slice/u.service\n";
    char out[256];
    OK(osb_cg_parse_own(cg, "memory", out, sizeof out), "memory is listed");
    IS_STR(out, "/process_api/x", "own memory cgroup");
    OK(osb_cg_parse_own(cg, "cpuacct", out, sizeof out), "cpuacct in cpu,cpuacct");
    IS_STR(out, "/c", "own cpuacct cgroup");
    OK(osb_cg_parse_own(cg, NULL, out, sizeof out), "the v2 line");
    IS_STR(out, "/user.slice/u.service", "own v2 cgroup");
    OK(!osb_cg_parse_own(cg, "freezer", out, sizeof out), "an absent controller");
    OK(!osb_cg_parse_own("4:memory:/x\n", NULL, out, sizeof out), "no v2 line");

    osb_cg_join_path("/sys/fs/cgroup/memory", "/", "/a/b", out, sizeof out);
    IS_STR(out, "/sys/fs/cgroup/memory/a/b", "join: root mount");
    osb_cg_join_path("/sys/fs/cgroup/memory", "/", "/", out, sizeof out);
    IS_STR(out, "/sys/fs/cgroup/memory", "join: root cgroup");
    osb_cg_join_path("/sys/fs/cgroup", "/docker/abc", "/docker/abc/x", out, sizeof out);
    IS_STR(out, "/sys/fs/cgroup/x", "join: a container's mount root is cut off");
}

static void test_cg_sets(void)
{
    struct osb_cg_set s;
    struct osb_err err = {0};
    IS_INT(osb_cg_set_parse("image busybox\nunified /sys/fs/cgroup/unified/o/x\n"
                            "memory /sys/fs/cgroup/m/o/x\n",
                            &s, &err),
           0, "a sandbox record parses (the image line is skipped)");
    IS_INT(s.n, 2, "two cgroups");
    IS_INT(s.role[1], OSB_CG_MEMORY, "roles");
    IS_STR(s.dir[0], "/sys/fs/cgroup/unified/o/x", "dirs");
    OK(osb_cg_set_parse("memory relative/x\n", &s, &err) < 0, "a relative dir is refused");
    OK(osb_cg_set_parse("memory /sys/fs/cgroup/../../etc\n", &s, &err) < 0, ".. is refused");
    OK(osb_cg_set_parse("blkio /sys/fs/cgroup/blkio/x\n", &s, &err) < 0, "unknown roles too");

    struct osb_cg_plan p = {.n = 2};
    snprintf(p.base_name, sizeof p.base_name, "opensandbox-1");
    p.bases[0] = (struct osb_cg_base){.role = OSB_CG_V2};
    snprintf(p.bases[0].base, sizeof p.bases[0].base, "/sys/fs/cgroup/s/opensandbox-1");
    p.bases[1] = (struct osb_cg_base){.role = OSB_CG_PIDS};
    snprintf(p.bases[1].base, sizeof p.bases[1].base, "/p/opensandbox-1");
    osb_cg_set_for(&p, "abc", &s);
    IS_INT(s.n, 2, "a set per plan base");
    IS_STR(s.dir[1], "/p/opensandbox-1/abc", "<base>/<id>");

    char a[32], b[32], a2[32];
    osb_cg_base_name("/root/.opensandbox", a, sizeof a);
    osb_cg_base_name("/tmp/other", b, sizeof b);
    osb_cg_base_name("/root/.opensandbox", a2, sizeof a2);
    OK(strcmp(a, b) != 0 && strcmp(a, a2) == 0 && strncmp(a, "opensandbox-", 12) == 0,
       "base names are per state dir and stable");
}

static void test_image_names(void)
{
    const char *good[] = {"busybox", "library/busybox:1.36", "a",
                          "0x",      "my-image_2.1",         "registry.local:5000/team/app:v1"};
    const char *bad[] = {"",     "Busybox", "-x",  ".x",  "a..b", "a//b", "a/",  "/a",
                         "a/.b", "a b",     "a\t", "a,b", "a\\b", "é",    "a+b", "a@b"};
    struct osb_err err = {0};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char what[128];
        snprintf(what, sizeof what, "image name `%s` is valid", good[i]);
        OK(osb_istore_name_check(good[i], &err) == 0, what);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char what[128];
        snprintf(what, sizeof what, "image name `%s` is refused", bad[i]);
        OK(osb_istore_name_check(bad[i], &err) < 0 && err.code == OSB_E_INVALID, what);
    }
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    OK(osb_istore_name_check(longname, &err) < 0, "a 299-character name is refused");
}

static void test_remove_tree(void)
{
    char top[] = "/tmp/osb-rt-unit-XXXXXX";
    OK(mkdtemp(top) != NULL, "temp dir");
    char outside[512], tree[512], p[600];
    snprintf(outside, sizeof outside, "%s/outside", top);
    snprintf(tree, sizeof tree, "%s/tree", top);
    mkdir(outside, 0755);
    snprintf(p, sizeof p, "%s/keep", outside);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    OK(osb_mkdir_p(tree, 0755, NULL) == 0, "mkdir");
    snprintf(p, sizeof p, "%s/a/b/c", tree);
    OK(osb_mkdir_p(p, 0755, NULL) == 0, "mkdir -p");
    snprintf(p, sizeof p, "%s/a/link", tree);
    OK(symlink(outside, p) == 0, "a symlink to a directory outside");
    snprintf(p, sizeof p, "%s/a/b/file", tree);
    close(open(p, O_CREAT | O_WRONLY, 0644));
    struct osb_err err = {0};
    IS_INT(osb_fs_remove_tree(tree, &err), 0, "remove the tree");
    OK(access(tree, F_OK) < 0, "the tree is gone");
    snprintf(p, sizeof p, "%s/keep", outside);
    OK(access(p, F_OK) == 0, "what the symlink pointed at is untouched");
    IS_INT(osb_fs_remove_tree(tree, &err), 0, "removing a missing tree is fine");
    snprintf(p, sizeof p, "%s/link", top);
    symlink(outside, p);
    IS_INT(osb_fs_remove_tree(p, &err), 0, "a symlink given as the tree is unlinked");
    snprintf(p, sizeof p, "%s/keep", outside);
    OK(access(p, F_OK) == 0, "not followed");
    IS_INT(osb_fs_remove_tree(top, &err), 0, "cleanup");
}

/* The backend table: names resolve to ops that implement every call. */
static void test_backends(void)
{
    const struct osb_runtime_ops *n = osb_rt_backend("native");
    OK(n && strcmp(n->name, "native") == 0, "the native backend is in the table");
    OK(n && n->open && n->close && n->describe && n->create && n->destroy && n->stop && n->pause &&
           n->resume && n->snapshot && n->watch && n->alive && n->adopt && n->stats &&
           n->cleanup_orphans,
       "it implements every op");
    OK(osb_rt_backend("nosuch") == NULL && osb_rt_backend(NULL) == NULL,
       "an unknown name has no backend");
    struct osb_rt_config cfg = {.state_dir = "/nonexistent"};
    struct osb_rt *rt = NULL;
    struct osb_err err = {0};
    OK(osb_rt_open("nosuch", &cfg, NULL, &rt, &err) < 0 && err.code == OSB_E_NOTFOUND &&
           strstr(err.msg, "`nosuch`") && strstr(err.msg, "native") && !rt,
       "opening an unknown backend is a clear error naming the known ones");
}

int main(void)
{
    test_backends();
    test_mountinfo();
    test_own_cgroup();
    test_cg_sets();
    test_image_names();
    test_remove_tree();
    return tap_done();
}
