/* The sandbox spec handed from the native runtime (server side) to the
 * osb-sandbox-init helper, on the helper's stdin (a memfd, so the server
 * never blocks writing it). One field table (native/initspec.c) drives both
 * the encoder (the runtime) and the decoder (the helper), so no field can be
 * written and not read; a unit test checks the table covers the struct.
 * Everything in it is already validated by the runtime; the helper trusts
 * it, but decodes strictly (a mismatch is a bug or a version skew). */
#ifndef OSB_INIT_SPEC_H
#define OSB_INIT_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/err.h"

/* One cgroup directory the sandbox lives in and what it is for. */
enum osb_cg_role {
    OSB_CG_V2,      /* cgroup v2 with controllers: every limit, freeze, kill */
    OSB_CG_UNIFIED, /* v2 without controllers (hybrid): freeze, kill, events */
    OSB_CG_MEMORY,  /* v1 hierarchies */
    OSB_CG_CPU,
    OSB_CG_CPUACCT,
    OSB_CG_PIDS,
    OSB_CG_FREEZER,
    OSB_CG_NROLES
};
static const char *const osb_cg_role_names[OSB_CG_NROLES] = {"v2",      "unified", "memory", "cpu",
                                                             "cpuacct", "pids",    "freezer"};
static inline const char *osb_cg_role_name(enum osb_cg_role r)
{
    return (unsigned)r < OSB_CG_NROLES ? osb_cg_role_names[r] : "?";
}
/* -1 if unknown */
static inline int osb_cg_role_parse(const char *s)
{
    for (int i = 0; i < OSB_CG_NROLES; i++)
        if (strcmp(s, osb_cg_role_names[i]) == 0)
            return i;
    return -1;
}

struct osb_init_cgroup {
    enum osb_cg_role role;
    char *dir;  /* absolute path, e.g. /sys/fs/cgroup/memory/x/opensandbox/<id> */
    char *home; /* where the helper starts (and returns to before exiting) */
};

struct osb_init_bind {
    char *src; /* host path */
    char *dst; /* path inside the sandbox root */
};

/* A volume (see struct osb_rt_volume in runtime.h). */
struct osb_init_volume {
    char *name;
    char *src_root; /* absolute host directory */
    char *src_rel;  /* beneath src_root; "" = itself */
    char *sub_path; /* beneath src_root/src_rel; "" = none */
    char *dst;      /* absolute path inside the sandbox */
    bool read_only;
};

struct osb_init_spec {
    char *id;
    char *dir;   /* <state>/sandboxes/<id>: created by the helper */
    char *image; /* image name, recorded for `image rm` checks */
    char *lower; /* overlay lowerdirs, top first, ':'-joined: the image's
                                layers (a snapshot's own layer above its base's) */
    char *execd; /* host path of the static execd */
    char *hostname;
    char *token;                 /* EXECD_ACCESS_TOKEN */
    char *workdir;               /* the image's WORKDIR, or NULL */
    char *user;                  /* the image's USER, or NULL */
    char *netns;                 /* network slot to join (a pinned netns), or NULL:
                                a new loopback-only network namespace */
    char *dns;                   /* nameserver for /etc/resolv.conf (with netns) */
    char **entrypoint;           /* NULL-terminated */
    bool keep_running;           /* no end report: the entrypoint's end does not end the sandbox */
    bool background;             /* build it, and start execd, at nice 19 (a pool member) */
    char **env;                  /* NULL-terminated "K=V" */
    struct osb_init_bind *binds; /* read-only host binds (the host image's /usr...) */
    size_t n_binds;
    struct osb_init_cgroup *cgroups;
    size_t n_cgroups;
    int64_t memory_bytes;   /* 0: no limit */
    int64_t cpu_millicores; /* 0: no limit */
    int64_t pids_max;       /* > 0 */
    int64_t disk_bytes;     /* > 0: size of the writable layer's tmpfs */
    struct osb_init_volume *volumes;
    size_t n_volumes;
    int64_t userns_first; /* 0: no user namespace; else the host uid and gid that
                             0 inside maps to (OSB_USERNS_IDS of them) */
};

/* The codec (native/initspec.c, linked into the runtime and the helper).
 * Encoding: a record is a sequence of fields, each a netstring of the name
 * followed by a netstring of the value ("<len>:<bytes>,"); strings are raw
 * bytes (no NUL), bools "0"/"1", integers decimal (>= 0), string vectors
 * and lists of records the concatenation of one netstring per element.
 * Optional strings are left out when NULL; every other field appears
 * exactly once. Decoding rejects unknown, duplicate and missing fields,
 * bad values and trailing bytes. */
/* Decode; on success *out owns its strings (free with osb_init_spec_free). */
int osb_init_spec_decode(const char *data, size_t len, struct osb_init_spec *out,
                         struct osb_err *err) OSB_MUST_CHECK;
/* Encode; caller frees; NULL only if it would exceed OSB_INIT_SPEC_MAX. */
char *osb_init_spec_encode(const struct osb_init_spec *s, size_t *len) OSB_MUST_CHECK;
void osb_init_spec_free(struct osb_init_spec *s);
#define OSB_INIT_SPEC_MAX (16u << 20)

/* The field table, exported for the unit test that checks it covers every
 * member of the structs it describes. */
enum osb_isf_type {
    OSB_ISF_STR,   /* char *, required */
    OSB_ISF_OSTR,  /* char *, optional (NULL: left out) */
    OSB_ISF_BOOL,  /* bool */
    OSB_ISF_I64,   /* int64_t, >= 0 */
    OSB_ISF_STRV,  /* char **, NULL-terminated */
    OSB_ISF_ROLE,  /* enum osb_cg_role, by name */
    OSB_ISF_LIST,  /* an array of records (sub) with its count at count_off */
    OSB_ISF_COUNT, /* size_t: the count of a list, which it must match */
};
struct osb_isf_table;
struct osb_isf {
    const char *name;
    enum osb_isf_type type;
    size_t off, size;                /* the member */
    size_t count_off;                /* OSB_ISF_LIST: its size_t count */
    const struct osb_isf_table *sub; /* OSB_ISF_LIST: the element's table */
};
struct osb_isf_table {
    const char *name; /* in errors */
    size_t size;      /* sizeof the struct */
    const struct osb_isf *f;
    size_t n;
};
extern const struct osb_isf_table osb_init_spec_table;

/* Files the helper leaves in the sandbox dir (it is also where the child
 * mounts its writable layer's tmpfs, inside its own mount namespace). */
#define OSB_SANDBOX_LOG "log"
/* The socket the server reaches execd on: bound by the helper here, on the
 * host, where the sandbox has no view (its own mount namespace covers the
 * sandbox dir with its tmpfs and detaches the old root), and handed to
 * execd as a listening fd (OSB_SANDBOX_LISTEN_FD). */
#define OSB_SANDBOX_CTL_SOCK "execd.sock"
/* "image <name>\n" then one "<role> <dir>\n" per cgroup: what `image rm`
 * checks and what destroy kills and removes, even after a restart. */
#define OSB_SANDBOX_RECORD "sandbox"
/* "<first host id> <count>\n": the sandbox's user namespace range, written
 * with the record and gone with the state dir (native/idrange.h). */
#define OSB_SANDBOX_USERNS "userns"
#define OSB_USERNS_IDS 65536
/* Inside the sandbox. */
#define OSB_SANDBOX_EXECD "/opt/opensandbox/execd"
#define OSB_SANDBOX_RUNDIR "/run/opensandbox"
#define OSB_EXECD_PORT "44772"
/* The helper's fd 3 (with the spec on 0 and the result pipe on 1): the
 * runtime's detached sysfs mount (native/sysfs.h), which every sandbox's
 * /sys is a read-only clone of. */
#define OSB_INIT_SYSFS_FD 3
/* execd (PID 1) keeps this fd open: an O_PATH handle of the tmpfs holding
 * the sandbox's writable layer (upper/), which no path reaches once the old
 * root is detached. The runtime takes a copy with pidfd_getfd to snapshot
 * it; execd marks it close-on-exec and makes itself non-dumpable, so no
 * process in the sandbox can reach it through /proc/1/fd. */
#define OSB_SANDBOX_LAYER_FD 100
/* Also kept by execd, the same way: the read end of the pipe that is the
 * sandbox's stdout and stderr. execd never reads it; it keeps the pipe
 * readable while no server drains it (writers block instead of dying of
 * SIGPIPE), and a restarted server takes a copy to drain it again. */
#define OSB_SANDBOX_LOG_FD 101
/* execd's listening socket (OSB_SANDBOX_CTL_SOCK), for --listen-fd. */
#define OSB_SANDBOX_LISTEN_FD 102
#define OSB_SANDBOX_UPPER "upper"
/* execd (--report-fd) puts the read end of its report pipe here: one line
 * (common/endreport.h) once the entrypoint ended. The runtime takes a copy
 * with pidfd_getfd when it starts watching the sandbox, at create and after
 * a restart, so the line is read even if the server was down when it was
 * written. */
#define OSB_SANDBOX_REPORT_FD 103
#endif
