/* osb-sandbox-init: builds one sandbox and execs execd as its PID 1.
 * Parent side (main.c): state dir, cgroups, clone, result record.
 * Child side (child.c, rootfs.c, secure.c): namespaces' contents, the root
 * filesystem, privileges, exec. Single-threaded, static, short-lived: it
 * may allocate freely and the child may exit on the first error. */
#ifndef OSB_INIT_H
#define OSB_INIT_H
#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"
#include "runtime/init/spec.h"

/* cgroup.c: create every cgroup of the spec, apply the limits, move the
 * calling process into the v1 ones; *v2fd gets the v2 directory (or -1)
 * for clone3(CLONE_INTO_CGROUP). On failure whatever was created is
 * removed. */
int osb_init_cgroups_enter(const struct osb_init_spec *s, int *v2fd,
                           struct osb_err *err) OSB_MUST_CHECK;
/* Move the calling process back to where it was, then remove the sandbox's
 * cgroups (after a failed create). */
void osb_init_cgroups_leave(const struct osb_init_spec *s, bool remove);

/* The descriptors the child gets from the helper (all close-on-exec). */
struct osb_init_fds {
    int sync;     /* with a user namespace: the child's end of the sync socket; else -1 */
    int out;      /* write end of the output pipe: stdout and stderr */
    int out_keep; /* its read end, for execd to keep (OSB_SANDBOX_LOG_FD) */
    int listen;   /* execd's listening socket (OSB_SANDBOX_LISTEN_FD) */
    int err;      /* "errno|step: reason" of a failing step */
    int ready;    /* execd writes a byte once it listens */
};

/* child.c: runs as the new PID 1; never returns. Reports a failing step
 * on fds->err and exits 127. filter: the compiled seccomp program
 * (osb_init_seccomp_prepare). */
__attribute__((noreturn)) void osb_init_child(const struct osb_init_spec *s,
                                              const struct osb_init_fds *fds,
                                              const struct sock_fprog *filter);

/* Detached mounts the parent made for a child in a user namespace
 * (userns.c), in spec order; without one: no lowers, -1s, and the child
 * makes its own. */
struct osb_init_trees {
    int *lower; /* one per layer of s->lower, idmapped */
    size_t n_lower;
    int *bind;   /* s->n_binds, idmapped, read-only */
    int execd;   /* idmapped, read-only */
    int *volume; /* s->n_volumes, idmapped (volumes.c) */
    int sysfs;   /* a clone of the runtime's sysfs */
};

/* userns.c, parent: write the child's uid/gid maps, then send its mounts
 * on sock. */
int osb_init_userns_setup(const struct osb_init_spec *s, pid_t pid, int sock,
                          struct osb_err *err) OSB_MUST_CHECK;
/* userns.c, child: wait for those mounts on sock, then become uid/gid 0
 * of the namespace. */
int osb_init_userns_enter(const struct osb_init_spec *s, int sock, struct osb_init_trees *t,
                          struct osb_err *err) OSB_MUST_CHECK;

/* cgviews.c: the sandbox's cgroups at /sys/fs/cgroup, read-only binds
 * cloned before the cgroup namespace is made (the host paths of its
 * cgroups are known then) and attached after pivot_root. */
struct osb_init_cgview {
    char name[128]; /* under /sys/fs/cgroup: the v1 controllers, or "unified" */
    bool v2;
    int tree; /* the detached clone */
};
struct osb_init_cgviews {
    struct osb_init_cgview view[16];
    int n;
};
void osb_init_cgviews_clone(struct osb_init_cgviews *v);
/* skel: a read-only clone of a directory holding one empty directory per
 * view (rootfs.c makes it), for /sys/fs/cgroup; taken in every case. */
void osb_init_cgviews_attach(struct osb_init_cgviews *v, int skel);
void osb_init_cgviews_close(struct osb_init_cgviews *v);

/* rootfs.c: the pieces of the child's root filesystem. Each returns -1 with
 * err naming the step. */
/* dirfd: the sandbox dir; *layerfd: an O_PATH fd of the writable layer
 * (upper/), for execd to keep. */
/* Directories of the writable layer's tmpfs that stand in for mounts of
 * their own (every superblock costs each memory cgroup on the host a slot,
 * and each cgroup's removal a walk over all of them): read-only clones
 * made before pivot_root, attached after. -1: none. */
struct osb_init_layerdirs {
    int mask;   /* empty: over Docker's masked directories */
    int cgroup; /* one empty directory per cgroup view: /sys/fs/cgroup */
};
int osb_init_rootfs_prepare(const struct osb_init_spec *s, int dirfd,
                            const struct osb_init_trees *t, const struct osb_init_cgviews *cg,
                            int *rootfd, int *layerfd, struct osb_init_layerdirs *ld,
                            struct osb_err *err) OSB_MUST_CHECK;
int osb_init_rootfs_pivot(int rootfd, struct osb_err *err) OSB_MUST_CHECK;
int osb_init_rootfs_finish(const struct osb_init_spec *s, struct osb_init_cgviews *cg,
                           struct osb_init_layerdirs *ld, struct osb_err *err) OSB_MUST_CHECK;

/* A detached clone of the runtime's sysfs (OSB_INIT_SYSFS_FD), -1 with err. */
int osb_init_sysfs_clone(struct osb_err *err) OSB_MUST_CHECK;

/* Mount targets inside the root rootfd (resolved with RESOLVE_IN_ROOT,
 * missing components created): an O_PATH fd of a directory, or of a
 * regular file created empty if missing. -1 with err. */
int osb_init_target_dir(int rootfd, const char *path, struct osb_err *err) OSB_MUST_CHECK;
int osb_init_target_file(int rootfd, const char *path, struct osb_err *err) OSB_MUST_CHECK;

/* volumes.c: before pivot_root, open each volume's source beneath its
 * root on the host and clone it (detached, attributes set): fds[i] for
 * s->volumes[i] (fds has s->n_volumes slots). After the root is complete,
 * attach the clones at their mount paths inside the new root. Errors name
 * the volume. */
int osb_init_volumes_open(const struct osb_init_spec *s, int *fds,
                          struct osb_err *err) OSB_MUST_CHECK;
/* One volume's clone; usernsfd >= 0 also idmaps it with that namespace
 * (the parent's side, for a child in a user namespace). */
int osb_init_volume_clone(const struct osb_init_volume *v, int usernsfd,
                          struct osb_err *err) OSB_MUST_CHECK;
int osb_init_volumes_attach(const struct osb_init_spec *s, const int *fds,
                            struct osb_err *err) OSB_MUST_CHECK;

/* secure.c: capabilities, no_new_privs, seccomp (filter), rlimits. */
int osb_init_secure(const struct sock_fprog *filter, struct osb_err *err) OSB_MUST_CHECK;
/* Before clone, in the helper: load the compiled seccomp filter from its
 * cache in state_dir, or compile it (and cache it), into *out (its
 * program is heap memory the helper never frees: it execs or exits).
 * osb_init_secure loads it in the child. */
int osb_init_seccomp_prepare(const char *state_dir, struct sock_fprog *out,
                             struct osb_err *err) OSB_MUST_CHECK;

/* With OSB_INIT_TRACE set in the environment, prints "step +ms" lines to
 * stderr (the server's): where the milliseconds of a create go, counted
 * from the helper's start as /proc records it (so no state is kept; that
 * start has clock-tick granularity, the differences between steps are
 * exact). */
void osb_init_trace(const char *step);
#endif
