/* What the gVisor backend's files share. One file per job, each calling
 * only those above it:
 *   runsc.c   the flag list and running one runsc command; ids, dirs,
 *             freeing; the binary and platform checks at open
 *   cgroup.c  the cgroupsPath and limits in config.json; stats
 *   log.c     the output FIFO drained into the bounded log
 *   watch.c   pidfd + report FIFO watches; liveness
 *   harden.c  capabilities, no_new_privs, rlimits, bounded /tmp and
 *             socket dir: what makes the sandbox as tight as a native one
 *   bundle.c  config.json from a spec
 *   mounts.c  the host image's binds, volumes, the hidden writable layer
 *   create.c  bundle, rootfs and runsc create/start on the thread pool
 *   snapshot.c  pause, the writable layer from the gofer's namespace, copy
 *   gvisor.c  open/close, destroy, pause/resume, watch, the ops
 * Layout under <state>/gvisor/: runsc/ (runsc's --root) and
 * sandboxes/<id>/ (the bundle: config.json, rootfs/, rw/ (with tmp/ and
 * shm/ on its tmpfs), sock/ (immutable once execd listens), bin/,
 * logpipe (a FIFO: execd's stdout and stderr), report (a FIFO: execd's
 * end report, runsc create's stdin; not with keep_running), log; tmp/ and
 * vol/<i>: mount points of the root's /tmp and the volumes' sources,
 * mounted only in the sandbox's namespace). */
#ifndef OSB_RT_GVISOR_STATE_H
#define OSB_RT_GVISOR_STATE_H
#include <limits.h>
#include <stdbool.h>
#include <uv.h>

#include <jansson.h>

#include "common/buf.h"
#include "runtime/cgroupfs.h"
#include "runtime/hostimage.h"
#include "runtime/runtime.h"

/* Where execd's socket directory and binary appear in the sandbox. */
#define OSB_GV_SOCK_DIR "/run/opensandbox"
#define OSB_GV_SOCK_NAME "execd.sock"
#define OSB_GV_BIN_DIR "/run/opensandbox-bin"
/* In the sandbox's host-only dir: the FIFO runsc create's stdio is. */
#define OSB_GV_LOG_FIFO "logpipe"
/* ... and the one its stdin is (execd --report-to-fd 0). */
#define OSB_GV_REPORT_FIFO "report"

struct osb_gv_create;
struct osb_gv_watch;
struct osb_gv_log;

struct osb_gv {
    struct osb_rt base; /* first: the ops */
    uv_loop_t *loop;
    char *runsc;    /* the runsc binary */
    char *root_dir; /* runsc --root */
    char *sandboxes_dir;
    char *execd_path;
    char *platform;
    bool debug; /* [gvisor] debug: runsc create --debug into <dir>/debug/ */
    char describe[256];
    struct osb_cg_plan plan;
    char cg_path[PATH_MAX]; /* cgroupsPath of a sandbox: this + "/<id>" */
    struct osb_gv_create *creates;
    struct osb_gv_watch *watches;
    struct osb_gv_log *logs;
    int open_handles;
    bool closing;
    struct osb_img_host host; /* the host image: its skeleton and binds */
    char *host_root;          /* <state>/images/host/rootfs */
};

static inline struct osb_gv *osb_gv_of(struct osb_rt *rt)
{
    return (struct osb_gv *)rt;
}

/* runsc.c */
int osb_gv_check_id(const char *id, struct osb_err *err) OSB_MUST_CHECK;
void osb_gv_dir(const struct osb_gv *rt, const char *id, char *out, size_t n);
void osb_gv_maybe_free(struct osb_gv *rt);
/* Run runsc with the backend's flags, network (true: the sandbox's
 * --network=host in the namespace config.json joins, the slot's: this
 * runsc's netstack refuses to start on kernels >= 6.11, see
 * docs/internals/gvisor.md; false: none), then args
 * (NULL-terminated). Waits for it; its output goes to out (may be NULL),
 * stdout and stderr alike, at most 64 KiB. stdio_fd (or -1: /dev/null) is
 * its stdin/stdout/stderr otherwise. 0 if it exited 0. Safe on a pool
 * thread. */
int osb_gv_runsc(const struct osb_gv *rt, bool network, const char *const *args, int stdio_fd,
                 struct osb_buf *out, struct osb_err *err) OSB_MUST_CHECK;
/* runsc state: the sandbox process's host pid and the status word
 * ("running", "paused", ...). -1 with OSB_E_NOTFOUND if runsc knows no
 * such container. */
int osb_gv_state(const struct osb_gv *rt, const char *id, pid_t *pid, char *status, size_t n,
                 struct osb_err *err) OSB_MUST_CHECK;
/* Kill, delete --force, remove the dir; errors are logged. */
void osb_gv_teardown(const struct osb_gv *rt, const char *id, bool keep_log);

/* The runsc binary (configured, else on PATH) and that it knows
 * rt->platform; fills rt->runsc and rt->describe. */
int osb_gv_probe(struct osb_gv *rt, const char *runsc, struct osb_err *err) OSB_MUST_CHECK;

/* cgroup.c */
int osb_gv_cg_open(struct osb_gv *rt, const char *state_dir, struct osb_err *err) OSB_MUST_CHECK;
void osb_gv_cg_close(struct osb_gv *rt);
/* linux.resources (memory without swap, CPU quota, pids) and
 * linux.cgroupsPath of spec into config.json's linux object. */
void osb_gv_add_limits(const struct osb_gv *rt, const struct osb_sandbox_spec *s, json_t *lnx);
int osb_gv_cg_stats(const struct osb_gv *rt, const char *id, struct osb_rt_stats *out,
                    struct osb_err *err) OSB_MUST_CHECK;
/* Why a sandbox that ended on its own did, if its cgroups tell (a limit
 * reached): one line for its log and *limit, or NULL. */
const char *osb_gv_cg_why(const struct osb_gv *rt, const char *id, enum osb_rt_limit *limit);

/* log.c */
/* mkfifo <dir>/<name> and open it read-write (so the sandbox's writes
 * never fail while no server reads: they block once it is full); the fd
 * becomes runsc create's stdout and stderr (logpipe) or stdin (report). */
int osb_gv_fifo(const char *dir, const char *name, struct osb_err *err) OSB_MUST_CHECK;
/* What fd (the FIFO) holds now, at most n - 1 bytes, NUL-terminated: a
 * failed create's message. */
void osb_gv_log_tail(int fd, char *out, size_t n);
/* Drain the sandbox's FIFO into h->log_path on the loop; at create and
 * after a restart. */
int osb_gv_attach_log(struct osb_gv *rt, const char *id, const struct osb_rt_handle *h,
                      struct osb_err *err) OSB_MUST_CHECK;
/* flush: the sandbox stops and its log stays, so what is in the FIFO is
 * written first. */
void osb_gv_close_log(struct osb_gv *rt, const char *id, bool flush);
void osb_gv_close_logs(struct osb_gv *rt);
/* Append the backend's own line to id's log (after its output so far). */
void osb_gv_log_note(struct osb_gv *rt, const char *id, const char *text);

/* watch.c */
int osb_gv_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err) OSB_MUST_CHECK;
/* id NULL: all. */
void osb_gv_cancel_watches(struct osb_gv *rt, const char *id);
bool osb_gv_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);

/* harden.c */
/* process.capabilities (native's set), noNewPrivileges and rlimits. */
void osb_gv_harden_process(const struct osb_sandbox_spec *s, json_t *process);
/* Once execd listens: <dir>/sock immutable, then checked to hold only
 * execd.sock (a socket). */
int osb_gv_lock_sock_dir(const char *dir, struct osb_err *err) OSB_MUST_CHECK;
/* Before <dir> is removed; errors are logged. */
void osb_gv_unlock_sock_dir(const char *dir);
/* At open: the state dir's file system takes the immutable flag. */
int osb_gv_harden_probe(const char *sandboxes_dir, struct osb_err *err) OSB_MUST_CHECK;

/* bundle.c: <dir>/config.json for spec. */
int osb_gv_write_bundle(const struct osb_gv *rt, const struct osb_sandbox_spec *spec,
                        const char *dir, struct osb_err *err) OSB_MUST_CHECK;

/* mounts.c: detached mounts a create's child attaches (see mounts.c). */
struct osb_gv_trees {
    int host[8];
    const char *host_dst[8]; /* relative to the root */
    size_t n_host;
    int bin; /* execd's directory, the cover of the writable layer */
    int *vol;
    size_t n_vol;
    /* /etc/hosts, hostname and resolv.conf, written into the root as the
     * native helper writes them (runsc writes none) */
    char hosts[160], hostname[80], resolv[192];
};
/* On the loop: resolve and clone every source, make the volumes' staging
 * entries. On failure t still needs osb_gv_trees_close. */
int osb_gv_trees_open(const struct osb_gv *rt, const struct osb_sandbox_spec *spec, const char *dir,
                      struct osb_gv_trees *t, struct osb_err *err) OSB_MUST_CHECK;
void osb_gv_trees_close(struct osb_gv_trees *t);
/* In the forked child, once the overlay is mounted at <dir>/rootfs: NULL,
 * or the step that failed (errno set). */
const char *osb_gv_trees_attach(const struct osb_gv_trees *t, const char *dir);
/* Open: the host image's skeleton, built if missing. */
int osb_gv_host_open(struct osb_gv *rt, const char *state_dir, struct osb_err *err) OSB_MUST_CHECK;

/* snapshot.c: the snapshot op. */
int osb_gv_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                    struct osb_err *err) OSB_MUST_CHECK;

/* create.c */
int osb_gv_create(struct osb_rt *rt, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err) OSB_MUST_CHECK;
/* A create in flight for id learns it was destroyed (its callback reports
 * it); true if there was one. */
bool osb_gv_cancel_create(struct osb_gv *rt, const char *id);
#endif
