/* What the native backend's files share: its state (struct osb_nat) and
 * the small helpers each of them needs. One file per job, each calling
 * only those above it in this list (no call circles):
 *   idrange.c   the pool of user namespace id ranges (pure bookkeeping)
 *   idclaim.c   the host-wide claim of the whole range (at open)
 *   probe.c     can this host do user namespaces (at open)
 *   sysfs.c     the one sysfs every sandbox's /sys is a clone of (at open)
 *   base.c      lifetime, children, ids and dirs, freeze, liveness, the
 *               creates in flight
 *   watch.c     how each sandbox ends: its report pipe (by inotify), or a pidfd
 *   log.c       the drain of each sandbox's output pipe; adopt
 *   snapshot.c  freeze, copy the writable layer on the pool (../idshift.c), thaw
 *   destroy.c   destroy, stop, orphans
 *   validate.c  the spec's checks
 *   spawn.c     start the helper without the server's descriptors
 *   create.c    encode the helper's spec, spawn and read the helper
 *   native.c    open/close, reaping on SIGCHLD, pause/resume, stats, the ops
 * Everything runs on the loop thread but the snapshot copy. */
#ifndef OSB_RT_NATIVE_STATE_H
#define OSB_RT_NATIVE_STATE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "common/buf.h"
#include "runtime/cgroupfs.h"
#include "runtime/native/idclaim.h"
#include "runtime/native/idrange.h"
#include "runtime/hostimage.h"
#include "runtime/runtime.h"

/* A helper building one sandbox. */
struct osb_nat_create {
    struct osb_nat *rt;
    struct osb_nat_create *next;
    char id[OSB_RT_ID_MAX + 1];
    pid_t helper;
    uv_pipe_t pipe;
    uv_timer_t timer;
    int open_handles;
    struct osb_buf out;
    char chunk[4096]; /* read buffer of the result pipe */
    osb_rt_create_cb cb;
    void *ud;
    bool finished; /* EOF or error seen: callback ran or will not */
    bool timed_out, destroyed;
};

struct osb_nat_watch;
struct osb_nat_log;

struct osb_nat_kid {
    pid_t pid;
    bool expected; /* about to exit (a helper, a PID 1 being destroyed): reaped by pid */
};

struct osb_nat {
    struct osb_rt base; /* first: the ops */
    uv_loop_t *loop;
    char *state_dir, *sandboxes_dir, *images_dir, *execd_path, *init_path;
    struct osb_cg_plan plan;
    struct osb_img_host host;
    char describe[512];
    uv_signal_t sigchld;
    int sandboxes_fd;         /* O_PATH of sandboxes/: socket paths too long for sun_path */
    int sysfs_fd;             /* the sandboxes' /sys (sysfs.h), the helper's OSB_INIT_SYSFS_FD */
    char *spawn_stack;        /* the helper's spawn runs on it until it execs (spawn.h) */
    struct osb_nat_kid *kids; /* our children: helpers and sandbox PID 1s */
    unsigned expected_reaped; /* expected exits reaped since the last SIGCHLD */
    size_t n_kids, cap_kids;
    struct osb_nat_create *creates;
    struct osb_nat_watch *watches;
    int ino_fd;         /* watch.c's inotify fd, -1 until first used */
    uv_poll_t ino_poll; /* on ino_fd */
    bool ino_failed;    /* inotify_init1 failed once: watches hold fds */
    struct osb_nat_log *logs;
    int open_handles;
    bool closing;
    bool userns;              /* [native] user_namespaces, and the probe passed */
    char userns_why[600];     /* without userns: why (the config, the probe's failure) */
    struct osb_idr idr;       /* with userns: the sandboxes' id ranges */
    struct osb_idclaim claim; /* with userns: the whole range, host-wide */
};

static inline struct osb_nat *osb_nat_of(struct osb_rt *rt)
{
    return (struct osb_nat *)rt;
}

/* base.c */
void osb_nat_maybe_free(struct osb_nat *rt);
void osb_nat_kid_add(struct osb_nat *rt, pid_t pid, bool expected);
/* pid (ours) is about to exit: the next SIGCHLD reaps it by pid. */
void osb_nat_kid_expect(struct osb_nat *rt, pid_t pid);
/* waitpid(pid, WNOHANG) if pid is ours; true once it is reaped (or was
 * never ours). */
bool osb_nat_kid_reap(struct osb_nat *rt, pid_t pid);
/* On SIGCHLD: reap the expected exits by pid; only if none of them
 * explains the signal, ask the kernel which children exited (a walk over
 * every child, thousands with thousands of sandboxes). */
void osb_nat_reap_all(struct osb_nat *rt);
bool osb_nat_valid_id(const char *id);
int osb_nat_check_id(const char *id, struct osb_err *err) OSB_MUST_CHECK;
void osb_nat_sandbox_dir(const struct osb_nat *rt, const char *id, char *out, size_t n);
/* The cgroups of sandbox id (from its record, or where they would be). */
void osb_nat_load_set(const struct osb_nat *rt, const char *id, struct osb_cg_set *s);
int osb_nat_set_frozen(struct osb_nat *rt, const char *id, bool freeze,
                       struct osb_err *err) OSB_MUST_CHECK;
bool osb_nat_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);
struct osb_nat_create *osb_nat_find_create(struct osb_nat *rt, const char *id);
/* A helper still building sandbox id is killed and reaped (its create's
 * callback then reports the destroy), so it creates nothing after a
 * cleanup. */
void osb_nat_stop_helper(struct osb_nat *rt, const char *id);

/* validate.c: the spec as a backend must see it (OSB_E_INVALID naming
 * the field). */
int osb_nat_validate(const struct osb_sandbox_spec *s, struct osb_err *err) OSB_MUST_CHECK;

/* create.c */
int osb_nat_create(struct osb_rt *rt, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                   void *ud, struct osb_err *err) OSB_MUST_CHECK;
void osb_nat_close_create(struct osb_nat_create *c);

/* log.c */
void osb_nat_fill_paths(struct osb_nat *rt, const char *id, struct osb_rt_handle *h);
int osb_nat_attach_log(struct osb_nat *rt, const char *id, const struct osb_rt_handle *h,
                       struct osb_err *err) OSB_MUST_CHECK;
/* flush: the sandbox stops but its log stays, so what it wrote last is
 * taken out of the pipe first. */
void osb_nat_close_log(struct osb_nat *rt, const char *id, bool flush);
void osb_nat_close_logs(struct osb_nat *rt);
int osb_nat_adopt(struct osb_rt *rt, const char *id, struct osb_rt_handle *h,
                  struct osb_err *err) OSB_MUST_CHECK;

/* watch.c */
int osb_nat_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                  osb_rt_exit_cb cb, void *ud, struct osb_err *err) OSB_MUST_CHECK;
/* Returns the PID 1 the cancelled watch had, 0 without one. */
pid_t osb_nat_cancel_watches(struct osb_nat *rt, const char *id);
void osb_nat_close_watches(struct osb_nat *rt);

/* snapshot.c */
int osb_nat_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                     const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                     struct osb_err *err) OSB_MUST_CHECK;

/* destroy.c */
int osb_nat_destroy(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;
int osb_nat_stop(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;
/* For a failed create: errors are logged. */
void osb_nat_destroy_quiet(struct osb_nat *rt, const char *id);
int osb_nat_cleanup_orphans(struct osb_rt *rt, const char *const *known,
                            struct osb_err *err) OSB_MUST_CHECK;
#endif
