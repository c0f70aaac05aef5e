/* Sandbox runtimes behind one interface. The runtime knows nothing of HTTP
 * or JSON: it takes a validated spec (the server parses requests into it).
 * Only the native runtime (Linux namespaces + overlayfs + cgroups + seccomp)
 * exists today; Docker and Kubernetes come later behind the same calls.
 *
 * All calls happen on the server's loop thread. Create is asynchronous (a
 * helper process builds the sandbox); the other calls are quick enough to
 * run inline (a few ms at most). */
#ifndef OSB_RUNTIME_H
#define OSB_RUNTIME_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/err.h"

struct osb_rt;

struct osb_rt_config {
    const char *state_dir;   /* e.g. ~/.opensandbox: sandboxes/, images/ live here */
    const char *execd_path;  /* static execd binary, bind-mounted into every sandbox */
    const char *init_path;   /* the osb-sandbox-init helper binary */
};

/* A validated sandbox spec. Strings are borrowed for the duration of the
 * call. Zero limits mean "no limit" except where noted. */
struct osb_rt_spec {
    const char *id;                 /* [a-zA-Z0-9-]{1,64} */
    const char *image;              /* "host" or an imported image name */
    const char *const *entrypoint;  /* NULL-terminated, at least one element */
    const char *const *env;         /* NULL-terminated "KEY=VALUE", may be NULL */
    int64_t cpu_millicores;         /* 1000 = one CPU */
    int64_t memory_bytes;
    int64_t pids_max;               /* 0: the runtime default (4096) */
    int64_t disk_bytes;             /* writable layer size; 0: the runtime default (1 GiB) */
    const char *hostname;           /* NULL: the first 12 chars of id */
    const char *execd_token;        /* required: execd's access token */
};

/* What identifies a running sandbox; stored by the server so that a
 * restarted server can re-adopt it. */
struct osb_rt_handle {
    pid_t pid;                      /* host pid of the sandbox's PID 1 (execd) */
    uint64_t start_time;            /* /proc/<pid>/stat field 22, guards against pid reuse */
    char sock_path[PATH_MAX];       /* host path of execd's unix socket */
    char log_path[PATH_MAX];        /* host path of the sandbox's bounded log */
};

int osb_rt_open(const struct osb_rt_config *cfg, uv_loop_t *loop, struct osb_rt **out,
                struct osb_err *err);
void osb_rt_close(struct osb_rt *rt);
/* One line for logs: "native (cgroup v1: memory cpu pids freezer)". */
const char *osb_rt_describe(const struct osb_rt *rt);

/* Build and start a sandbox. On success the callback gets the handle once
 * execd has been exec'd as the sandbox's PID 1 (its socket may need a few
 * more ms to appear). On failure every trace (cgroups, state dir,
 * processes) is gone before the callback runs. Returns -1 only for errors
 * found before anything was started. */
typedef void (*osb_rt_create_cb)(void *ud, const struct osb_rt_handle *h,
                                 const struct osb_err *err /* NULL on success */);
int osb_rt_create(struct osb_rt *rt, const struct osb_rt_spec *spec, osb_rt_create_cb cb,
                  void *ud, struct osb_err *err);

int osb_rt_pause(struct osb_rt *rt, const char *id, struct osb_err *err);
int osb_rt_resume(struct osb_rt *rt, const char *id, struct osb_err *err);
/* Kill every process, remove cgroups and the state dir. Works in every
 * state (running, paused, half-created, already dead) and is idempotent. */
int osb_rt_destroy(struct osb_rt *rt, const char *id, struct osb_err *err);

/* Whether the sandbox's PID 1 is still the process the handle names. */
bool osb_rt_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h);
/* Watch a sandbox's PID 1 (child or not, via pidfd): cb runs once when it
 * exits. Used for new sandboxes and for those re-adopted after a restart. */
typedef void (*osb_rt_exit_cb)(void *ud, const char *id);
int osb_rt_watch(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h,
                 osb_rt_exit_cb cb, void *ud, struct osb_err *err);
/* Remove everything of sandboxes the server does not know (after a crash):
 * cgroups, state dirs, processes. known: NULL-terminated ids. */
int osb_rt_cleanup_orphans(struct osb_rt *rt, const char *const *known, struct osb_err *err);

struct osb_rt_stats {
    uint64_t memory_bytes;          /* current usage of the sandbox's cgroup */
    uint64_t cpu_usage_ns;
    uint64_t pids;
};
int osb_rt_stats(struct osb_rt *rt, const char *id, struct osb_rt_stats *out, struct osb_err *err);

/* Images: "host" is built in; others are imported root filesystems. */
int osb_rt_image_import(struct osb_rt *rt, const char *name, const char *tar_path,
                        struct osb_err *err);
int osb_rt_image_remove(struct osb_rt *rt, const char *name, struct osb_err *err);
bool osb_rt_image_exists(struct osb_rt *rt, const char *name);
struct osb_rt_image {
    char name[256];
    uint64_t size_bytes;
    int64_t created_ms;
};
/* Fills up to max entries (the built-in "host" first); returns the count. */
int osb_rt_image_list(struct osb_rt *rt, struct osb_rt_image *out, size_t max,
                      struct osb_err *err);
#endif
