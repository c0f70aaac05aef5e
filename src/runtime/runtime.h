/* Sandbox runtimes behind one interface. The runtime knows nothing of HTTP
 * or JSON: it takes a validated spec (the server parses requests into it).
 * Only the native runtime (Linux namespaces + overlayfs + cgroups + seccomp)
 * exists today; Docker and Kubernetes come later behind the same calls.
 *
 * All calls happen on the server's loop thread. Create is asynchronous (a
 * helper process builds the sandbox); the other calls are quick enough to
 * run inline (a few ms at most), except the image calls, which are
 * blocking and meant for the CLI (`opensandbox-server image ...`).
 *
 * Processes: osb_rt_open makes the server a child subreaper
 * (PR_SET_CHILD_SUBREAPER), so each sandbox's PID 1 becomes the server's
 * child once the helper that built it exits. The runtime owns a SIGCHLD
 * uv_signal that reaps only the pids it started (helpers, sandbox PID 1s),
 * with waitpid(pid) and never waitpid(-1): children the server starts
 * with uv_spawn are left to libuv. Anything else the server forks must be
 * reaped by whoever forked it.
 *
 * The native runtime needs root. See docs/runtime.md for the on-disk
 * layout and docs/security.md for the isolation it provides. */
#ifndef OSB_RUNTIME_H
#define OSB_RUNTIME_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/endreport.h"
#include "common/err.h"

struct osb_istore;

struct osb_rt;

/* Sandbox ids: [a-zA-Z0-9-]{1,OSB_RT_ID_MAX}. */
#define OSB_RT_ID_MAX 64
/* The per-sandbox log: execd's and the entrypoint's stdout+stderr reach it
 * through a pipe the runtime drains on the loop (the sandbox holds no
 * descriptor of the file). It never exceeds OSB_RT_LOG_MAX_BYTES: a chunk
 * that would pass it first cuts the file to about its last
 * OSB_RT_LOG_KEEP_BYTES. While nobody drains (the server is down), the
 * sandbox's writes block once the pipe is full; none fails. */
#define OSB_RT_LOG_MAX_BYTES (8u << 20)
#define OSB_RT_LOG_KEEP_BYTES (4u << 20)

struct osb_rt_config {
    const char *state_dir;   /* e.g. ~/.opensandbox: sandboxes/, images/ live here */
    const char *execd_path;  /* static execd binary, bind-mounted into every sandbox;
                                NULL: "execd" next to the running program */
    const char *init_path;   /* the osb-sandbox-init helper binary; NULL: next to the
                                running program */
};

/* A volume bind-mounted into the sandbox. The caller (the server) decides
 * what may be mounted; the runtime re-resolves every path at mount time,
 * with openat2(RESOLVE_BENEATH), so a symlink swapped in since cannot lead
 * outside src_root (nor a sub_path outside src_root/src_rel). */
struct osb_rt_volume {
    const char *name;               /* named in errors */
    const char *src_root;           /* absolute host directory: the allowed root or a
                                       claim's data directory */
    const char *src_rel;            /* relative to src_root; "" = src_root itself */
    const char *sub_path;           /* relative to src_root/src_rel; NULL or "" = none */
    const char *dst;                /* absolute path in the sandbox, not "/"; a directory or
                                       a file (created if missing) as the source is */
    bool read_only;                 /* always nosuid, nodev */
};

/* A validated sandbox spec. Strings are borrowed for the duration of the
 * call. Zero limits mean "no limit" except where noted. */
struct osb_rt_spec {
    const char *id;                 /* [a-zA-Z0-9-]{1,64} */
    const char *image;              /* "host" (also NULL) or an imported image name */
    const char *const *entrypoint;  /* NULL-terminated, at least one element */
    bool keep_running;              /* the entrypoint's end does not end the sandbox (execd
                                       keeps serving; no end report) */
    const char *const *env;         /* NULL-terminated "KEY=VALUE", may be NULL */
    int64_t cpu_millicores;         /* 1000 = one CPU */
    int64_t memory_bytes;           /* >= 4 MiB; no swap on top (the writable layer's
                                       tmpfs pages count here too) */
    int64_t pids_max;               /* 0: the runtime default (4096); >= 24 (execd's
                                       threads count) */
    int64_t disk_bytes;             /* writable layer size; 0: the runtime default (1 GiB) */
    const char *hostname;           /* NULL: the first 12 chars of id */
    const char *workdir;            /* the image's WORKDIR: cwd of the entrypoint and
                                       default of commands; NULL: / */
    const char *user;               /* the image's USER ("uid[:gid]", "name[:group]"):
                                       entrypoint and commands; NULL: root */
    const char *netns;              /* a network slot's pinned netns to join (src/net);
                                       NULL: a new loopback-only network namespace */
    const char *dns;                /* with netns: the nameserver (IPv4) for resolv.conf */
    const char *execd_token;        /* required: execd's access token */
    const struct osb_rt_volume *volumes; /* n_volumes entries; mounted after the root is
                                            complete, parents before children */
    size_t n_volumes;
};

/* What identifies a running sandbox; stored by the server so that a
 * restarted server can re-adopt it. */
struct osb_rt_handle {
    pid_t pid;                      /* host pid of the sandbox's PID 1 (execd) */
    uint64_t start_time;            /* /proc/<pid>/stat field 22, guards against pid reuse */
    char sock_path[PATH_MAX];       /* where the server connects to execd: a socket the
                                       helper bound in the host-only sandbox dir
                                       (<state>/sandboxes/<id>/execd.sock) and handed to
                                       execd as a listening fd, so no path inside the
                                       sandbox is followed; /proc/self/fd/<n>/<id>/
                                       execd.sock when that is too long for sun_path.
                                       Only meaningful in this process: osb_rt_adopt
                                       refills it after a restart. */
    char log_path[PATH_MAX];        /* host path of the sandbox's bounded log
                                       (<state>/sandboxes/<id>/log) */
};

int osb_rt_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                struct osb_err *err);
void osb_rt_close(struct osb_rt *rt);
/* One line for logs: "native (cgroup v1: memory cpu pids freezer)". */
const char *osb_rt_describe(const struct osb_rt *rt);

/* Build and start a sandbox. On success the callback gets the handle once
 * execd runs as the sandbox's PID 1 and listens on its socket. On failure every trace (cgroups, state dir,
 * processes) is gone before the callback runs. Returns -1 only for errors
 * found before anything was started: invalid spec (OSB_E_INVALID), unknown
 * image (OSB_E_NOTFOUND), id in use (OSB_E_EXISTS). The callback never
 * runs after osb_rt_close (a helper whose result nobody reads tears its
 * sandbox down itself). */
typedef void (*osb_rt_create_cb)(void *ud, const struct osb_rt_handle *h,
                                 const struct osb_err *err /* NULL on success */);
int osb_rt_create(struct osb_rt *rt, const struct osb_rt_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err);

int osb_rt_pause(struct osb_rt *rt, const char *id, struct osb_err *err);
int osb_rt_resume(struct osb_rt *rt, const char *id, struct osb_err *err);
/* Kill every process, remove cgroups and the state dir. Works in every
 * state (running, paused, half-created, already dead) and is idempotent.
 * Cancels watches on id (their callbacks do not run); a create still in
 * progress is stopped and its callback gets an error. Mounts need no
 * cleanup: they exist only in the sandbox's mount namespace. */
int osb_rt_destroy(struct osb_rt *rt, const char *id, struct osb_err *err);

/* Kill every process and remove cgroups and the state dir except the log
 * (<state>/sandboxes/<id>/log): what a sandbox that ended on its own keeps
 * for diagnostics until osb_rt_destroy removes the rest. Cancels watches
 * on id; idempotent. */
int osb_rt_stop(struct osb_rt *rt, const char *id, struct osb_err *err);

/* Whether the sandbox's PID 1 is still the process the handle names. */
bool osb_rt_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);
/* How a watched sandbox ended. execd reports its entrypoint's end on a
 * pipe (common/endreport.h) and then waits to be stopped: the sandbox's
 * processes are still there when the callback runs (osb_rt_stop or
 * osb_rt_destroy end them). */
struct osb_rt_end {
    enum {
        OSB_RT_END_REPORTED,     /* report: how the entrypoint ended */
        OSB_RT_END_PID1_EXITED,  /* PID 1 (execd) exited without a report */
        OSB_RT_END_BAD_REPORT,   /* the report pipe held something else */
    } how;
    struct osb_endreport report;
};
/* Watch a sandbox (child or not): its PID 1 via a pidfd, and execd's
 * report pipe (a copy of its read end is taken from execd with
 * pidfd_getfd, so a line written while no server ran is read once one
 * watches again). cb runs once, at the first of the two. Used for new
 * sandboxes and for those re-adopted after a restart. OSB_E_NOTFOUND if
 * it is not running (any more) when called. */
typedef void (*osb_rt_exit_cb)(void *ud, const char *id, const struct osb_rt_end *end);
int osb_rt_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err);
/* Remove everything of sandboxes the server does not know (after a crash):
 * cgroups, state dirs, processes. known: NULL-terminated ids. Creates in
 * progress in this process are spared. */
int osb_rt_cleanup_orphans(struct osb_rt *rt, const char *const *known, struct osb_err *err);

struct osb_rt_stats {
    uint64_t memory_bytes;          /* current usage of the sandbox's cgroup */
    uint64_t cpu_usage_ns;
    uint64_t pids;
};
int osb_rt_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out, struct osb_err *err);

/* Take over a running sandbox after a server restart: refills h's paths
 * and drains its output pipe again (a copy of the read end execd keeps,
 * OSB_SANDBOX_LOG_FD, taken with pidfd_getfd). Creates do this
 * themselves. OSB_E_NOTFOUND if it is not running. */
int osb_rt_adopt(struct osb_rt *rt, const char *id, struct osb_rt_handle *h, struct osb_err *err);

/* Snapshots: copy the sandbox's writable layer (overlayfs upper dir, with
 * its whiteouts and opaque dirs) into dst_dir, a new layer directory (see
 * src/image/layer.h), with the sandbox frozen for the copy. The copy runs
 * on the libuv thread pool; cb runs on the loop once it is done and the
 * sandbox thawed (it runs even if the sandbox was destroyed meanwhile, with
 * an error). Returns -1 (cb never runs) if the sandbox is not running or
 * cannot be frozen. The runtime reaches the layer through a descriptor
 * execd keeps for it (OSB_SANDBOX_LAYER_FD), taken with pidfd_getfd. */
typedef void (*osb_rt_snapshot_cb)(void *ud, const struct osb_err *err /* NULL on success */);
int osb_rt_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_snapshot_cb cb, void *ud, struct osb_err *err);

/* Images: "host" is built in; the others live in the image store
 * (src/image/store.h): pulled from registries, imported from tars, or
 * snapshots. The runtime resolves an image to its layers (a snapshot's
 * own layer above its base's) when it creates a sandbox. */
struct osb_istore *osb_rt_images(struct osb_rt *rt);
/* Whether a sandbox uses the image (directly; the store refuses to remove
 * a base of another image). by gets the sandbox id (may be NULL, n = 0). */
bool osb_rt_image_in_use(struct osb_rt *rt, const char *name, char *by, size_t n);
bool osb_rt_image_exists(struct osb_rt *rt, const char *name);
/* CLI and tests: import a root filesystem tar as a one-layer image; remove
 * an image (OSB_E_EXISTS while a sandbox uses it; "host" is
 * OSB_E_INVALID); list the built-in "host" first, then the store's. */
int osb_rt_image_import(struct osb_rt *rt, const char *name, const char *tar_path,
                        struct osb_err *err);
int osb_rt_image_remove(struct osb_rt *rt, const char *name, struct osb_err *err);
struct osb_rt_image {
    char name[256];
    uint64_t size_bytes;
    int64_t created_ms;
};
/* Fills up to max entries (the built-in "host" first); returns the count. */
int osb_rt_image_list(struct osb_rt *rt, struct osb_rt_image *out, size_t max,
                      struct osb_err *err);
#endif
