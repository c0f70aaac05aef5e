/* Sandbox runtimes behind one interface: struct osb_runtime_ops. A backend
 * is one folder under src/runtime/ and one line in the table in runtime.c;
 * only "native" (Linux namespaces + overlayfs + cgroups + seccomp) exists
 * today. Backends know nothing of HTTP, JSON or the image store: the server
 * parses a request, resolves its image to layer directories and completes
 * the spec, then hands a backend one struct osb_sandbox_spec.
 *
 * All calls happen on the server's loop thread. Create is asynchronous (the
 * native backend's helper process builds the sandbox); the other calls are
 * quick enough to run inline (a few ms at most).
 *
 * Processes: opening the native backend makes the server a child
 * subreaper (PR_SET_CHILD_SUBREAPER), so each sandbox's PID 1 becomes the
 * server's child once the helper that built it exits. The backend owns a
 * SIGCHLD uv_signal that reaps only the pids it started (helpers, sandbox
 * PID 1s), with waitpid(pid) and never waitpid(-1): children the server
 * starts with uv_spawn are left to libuv. Anything else the server forks
 * must be reaped by whoever forked it.
 *
 * The native backend needs root. See docs/runtime.md for the on-disk
 * layout, docs/internals/runtime.md for the interface and the spec
 * pipeline, docs/security.md for the isolation it provides. */
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

/* One opened backend. Every backend's state begins with this (the ops it
 * was opened with), so the osb_rt_* calls below dispatch on it. */
struct osb_runtime_ops;
struct osb_rt {
    const struct osb_runtime_ops *ops;
};

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

/* Resource limits: the one table of defaults and minimums, used by the
 * server's request validation and by every backend. */
#define OSB_LIMIT_MIN_MEMORY (4LL << 20) /* execd cannot run below this */
#define OSB_LIMIT_MIN_DISK (4LL << 20)
#define OSB_LIMIT_MIN_PIDS 32 /* execd alone runs about two dozen threads */
#define OSB_LIMIT_MAX_PIDS 4194304
#define OSB_LIMIT_MAX_CPU_MILLIS (1024LL * 1000) /* quotas beyond 1024 cores are nonsense */
#define OSB_LIMIT_DEFAULT_PIDS 4096
#define OSB_LIMIT_DEFAULT_DISK (1LL << 30) /* the writable layer */

struct osb_rt_config {
    const char *state_dir;    /* e.g. ~/.opensandbox: sandboxes/, images/ live here */
    const char *execd_path;   /* static execd binary, bind-mounted into every sandbox;
                                NULL: "execd" next to the running program */
    const char *init_path;    /* the osb-sandbox-init helper binary; NULL: next to the
                                running program */
    bool user_namespaces;     /* native: each sandbox in its own user namespace */
    bool userns_explicit;     /* native: the config says so: a failed probe is an error
                                 (else the backend runs without them, and says why) */
    const char *userns_range; /* native: "start:count" host ids they map to */

    /* gvisor: runsc --platform (NULL: "ptrace") and the runsc binary (NULL:
     * runsc on PATH) */
    const char *gvisor_platform;
    const char *gvisor_runsc;
    bool gvisor_debug; /* runsc --debug; logs in <state>/gvisor/sandboxes/<id>/debug/ */
};

/* A volume bind-mounted into the sandbox. The caller (the server) decides
 * what may be mounted; the runtime re-resolves every path at mount time,
 * with openat2(RESOLVE_BENEATH), so a symlink swapped in since cannot lead
 * outside src_root (nor a sub_path outside src_root/src_rel). */
struct osb_rt_volume {
    const char *name;     /* named in errors */
    const char *src_root; /* absolute host directory: the allowed root or a
                                       claim's data directory */
    const char *src_rel;  /* relative to src_root; "" = src_root itself */
    const char *sub_path; /* relative to src_root/src_rel; NULL or "" = none */
    const char *dst;      /* absolute path in the sandbox, not "/"; a directory or
                                       a file (created if missing) as the source is */
    bool read_only;       /* always nosuid, nodev */
};

/* The one sandbox spec a backend gets: validated and completed by the
 * server (image resolved, image config applied, volumes and network slot
 * prepared, limits defaulted). Everything is borrowed for the duration of
 * the call; a backend only reads it. Zero limits mean "no limit" except
 * where noted. */
struct osb_sandbox_spec {
    char *id; /* [a-zA-Z0-9-]{1,64} */
    /* The image, resolved by the server's image store. */
    char *image;                   /* its stored name (logs, the sandbox record) */
    char **layers;                 /* NULL-terminated read-only layer dirs, top first (a
                                       snapshot's own layer above its base's); may be
                                       empty with image_host */
    bool image_host;               /* the built-in `host` image lies beneath the layers:
                                       the backend supplies that root (host /usr...) */
    char **entrypoint;             /* NULL-terminated, at least one element */
    bool keep_running;             /* the entrypoint's end does not end the sandbox (execd
                                       keeps serving; no end report) */
    char **env;                    /* NULL-terminated "KEY=VALUE", may be NULL */
    bool background;               /* a pool member: started at the lowest CPU priority
                                       (native; osb_rt_foreground ends it), so claims
                                       come first */
    int64_t cpu_millicores;        /* 1000 = one CPU */
    int64_t memory_bytes;          /* >= OSB_LIMIT_MIN_MEMORY; no swap on top (the
                                       writable layer's tmpfs pages count here too) */
    int64_t pids_max;              /* 0: OSB_LIMIT_DEFAULT_PIDS; >= OSB_LIMIT_MIN_PIDS */
    int64_t disk_bytes;            /* writable layer size; 0: OSB_LIMIT_DEFAULT_DISK */
    char *hostname;                /* NULL: the first 12 chars of id */
    char *workdir;                 /* the image's WORKDIR: cwd of the entrypoint and
                                       default of commands; NULL: / */
    char *user;                    /* the image's USER ("uid[:gid]", "name[:group]"):
                                       entrypoint and commands; NULL: root */
    char *netns;                   /* a network slot's pinned netns to join (src/net);
                                       NULL: a new loopback-only network namespace */
    char *dns;                     /* with netns: the nameserver (IPv4) for resolv.conf */
    char *execd_token;             /* required: execd's access token */
    struct osb_rt_volume *volumes; /* n_volumes entries; mounted after the root is
                                       complete, parents before children */
    size_t n_volumes;
};

/* What identifies a running sandbox; stored by the server so that a
 * restarted server can re-adopt it. */
struct osb_rt_handle {
    pid_t pid;                /* host pid of the sandbox's PID 1 (execd) */
    uint64_t start_time;      /* /proc/<pid>/stat field 22, guards against pid reuse */
    char sock_path[PATH_MAX]; /* where the server connects to execd: a socket the
                                       helper bound in the host-only sandbox dir
                                       (<state>/sandboxes/<id>/execd.sock) and handed to
                                       execd as a listening fd, so no path inside the
                                       sandbox is followed; /proc/self/fd/<n>/<id>/
                                       execd.sock when that is too long for sun_path.
                                       Only meaningful in this process: osb_rt_adopt
                                       refills it after a restart. */
    char log_path[PATH_MAX];  /* host path of the sandbox's bounded log
                                       (<state>/sandboxes/<id>/log) */
};

/* ---- the interface every backend implements ---- */

/* Create: the callback gets the handle once execd runs as the sandbox's
 * PID 1 and listens on its socket. On failure every trace (cgroups, state
 * dir, processes) is gone before the callback runs. */
typedef void (*osb_rt_create_cb)(void *ud, const struct osb_rt_handle *h,
                                 const struct osb_err *err /* NULL on success */);
/* How a watched sandbox ended (see osb_rt_watch). */
struct osb_rt_end {
    enum {
        OSB_RT_END_REPORTED,    /* report: how the entrypoint ended */
        OSB_RT_END_PID1_EXITED, /* PID 1 (execd) exited without a report */
        OSB_RT_END_BAD_REPORT,  /* the report pipe held something else */
        OSB_RT_END_LIMIT,       /* the host ended the whole sandbox at a limit
                                   (gvisor: its kernel is one host process) */
    } how;
    struct osb_endreport report;
    enum osb_rt_limit { OSB_RT_LIMIT_MEMORY = 1, OSB_RT_LIMIT_PIDS } limit; /* LIMIT only */
};
typedef void (*osb_rt_exit_cb)(void *ud, const char *id, const struct osb_rt_end *end);
struct osb_rt_stats {
    uint64_t memory_bytes; /* current usage of the sandbox's cgroup */
    uint64_t cpu_usage_ns;
    uint64_t pids;
};
/* Snapshots: the backend freezes the sandbox and calls copy on the libuv
 * thread pool with a read-only descriptor of the sandbox's writable layer
 * (its overlayfs upper dir, with whiteouts and opaque dirs) and dst_dir;
 * the caller (the server, which owns the image store) supplies copy
 * (src/image/layer.c's osb_layer_copy_tree), so no backend writes image
 * layers itself. */
typedef int (*osb_rt_copy_fn)(int layer_dirfd, const char *dst_dir, struct osb_err *err);
typedef void (*osb_rt_snapshot_cb)(void *ud, const struct osb_err *err /* NULL on success */);

struct osb_runtime_ops {
    const char *name; /* as in the backend table, the config and the store */
    int (*open)(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                struct osb_err *err);
    void (*close)(struct osb_rt *rt);
    const char *(*describe)(const struct osb_rt *rt);
    int (*create)(struct osb_rt *rt, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err);
    int (*destroy)(struct osb_rt *rt, const char *id, struct osb_err *err);
    int (*stop)(struct osb_rt *rt, const char *id, struct osb_err *err);
    int (*pause)(struct osb_rt *rt, const char *id, struct osb_err *err);
    int (*resume)(struct osb_rt *rt, const char *id, struct osb_err *err);
    int (*snapshot)(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                    struct osb_err *err);
    int (*watch)(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err);
    bool (*alive)(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);
    int (*adopt)(struct osb_rt *rt, const char *id, struct osb_rt_handle *h, struct osb_err *err);
    int (*stats)(struct osb_rt *rt, const char *id, struct osb_rt_stats *out, struct osb_err *err);
    int (*cleanup_orphans)(struct osb_rt *rt, const char *const *known, struct osb_err *err);
};

/* ---- the backend table ---- */

/* The backend named name, or NULL. */
const struct osb_runtime_ops *osb_rt_backend(const char *name);
/* The table's names, comma-separated, for error messages ("native"). */
void osb_rt_backend_names(char *out, size_t n);
/* The default backend's name ("native"). */
#define OSB_RT_DEFAULT "native"

/* ---- calls (each dispatches to rt->ops) ---- */

/* Open the backend named name (OSB_E_NOTFOUND if there is none). */
int osb_rt_open(const char *name, const struct osb_rt_config *cfg, uv_loop_t *loop,
                struct osb_rt **out, struct osb_err *err) OSB_MUST_CHECK;
void osb_rt_close(struct osb_rt *rt);
/* The backend's name ("native"). */
const char *osb_rt_name(const struct osb_rt *rt);
/* One line for logs: "native (cgroup v1: memory cpu pids freezer)". */
const char *osb_rt_describe(const struct osb_rt *rt);

/* Build and start a sandbox (see osb_rt_create_cb). Returns -1 only for
 * errors found before anything was started: invalid spec (OSB_E_INVALID),
 * id in use (OSB_E_EXISTS). The callback never runs after osb_rt_close (a
 * helper whose result nobody reads tears its sandbox down itself). */
int osb_rt_create(struct osb_rt *rt, const struct osb_sandbox_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err) OSB_MUST_CHECK;

int osb_rt_pause(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;
int osb_rt_resume(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;
/* Kill every process, remove cgroups and the state dir. Works in every
 * state (running, paused, half-created, already dead) and is idempotent.
 * Cancels watches on id (their callbacks do not run); a create still in
 * progress is stopped and its callback gets an error. Mounts need no
 * cleanup: they exist only in the sandbox's mount namespace. */
int osb_rt_destroy(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;

/* Kill every process and remove cgroups and the state dir except the log
 * (<state>/sandboxes/<id>/log): what a sandbox that ended on its own keeps
 * for diagnostics until osb_rt_destroy removes the rest. Cancels watches
 * on id; idempotent. */
int osb_rt_stop(struct osb_rt *rt, const char *id, struct osb_err *err) OSB_MUST_CHECK;

/* A sandbox started in the background (spec.background) gets the normal
 * CPU priority back: its PID 1, before it starts any other process. */
void osb_rt_foreground(const struct osb_rt_handle *h);
/* Whether the sandbox's PID 1 is still the process the handle names. */
bool osb_rt_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);
/* Watch a sandbox (child or not): its PID 1 via a pidfd, and execd's
 * report pipe (common/endreport.h; a copy of its read end is taken from
 * execd with pidfd_getfd, so a line written while no server ran is read
 * once one watches again). cb runs once, at the first of the two; the
 * sandbox's processes are still there then (osb_rt_stop or osb_rt_destroy
 * end them). Used for new sandboxes and for those re-adopted after a
 * restart. OSB_E_NOTFOUND if it is not running (any more) when called. */
int osb_rt_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err) OSB_MUST_CHECK;
/* Remove everything of sandboxes the server does not know (after a crash):
 * cgroups, state dirs, processes. known: NULL-terminated ids. Creates in
 * progress in this process are spared. */
int osb_rt_cleanup_orphans(struct osb_rt *rt, const char *const *known,
                           struct osb_err *err) OSB_MUST_CHECK;

int osb_rt_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out,
                 struct osb_err *err) OSB_MUST_CHECK;

/* Take over a running sandbox after a server restart: refills h's paths
 * and drains its output pipe again (a copy of the read end execd keeps,
 * OSB_SANDBOX_LOG_FD, taken with pidfd_getfd). Creates do this
 * themselves. OSB_E_NOTFOUND if it is not running. */
int osb_rt_adopt(struct osb_rt *rt, const char *id, struct osb_rt_handle *h,
                 struct osb_err *err) OSB_MUST_CHECK;

/* Snapshot the sandbox's writable layer into dst_dir (a new, empty layer
 * directory) with copy (see osb_rt_copy_fn), the sandbox frozen meanwhile.
 * cb runs on the loop once the copy is done and the sandbox thawed (it runs
 * even if the sandbox was destroyed meanwhile, with an error). Returns -1
 * (cb never runs) if the sandbox is not running or cannot be frozen. */
int osb_rt_snapshot(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                    const char *dst_dir, osb_rt_copy_fn copy, osb_rt_snapshot_cb cb, void *ud,
                    struct osb_err *err) OSB_MUST_CHECK;
#endif
