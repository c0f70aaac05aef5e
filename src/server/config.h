/* Server configuration: TOML in the upstream style (protocol.md section 5).
 * Resolution: --config FILE, else $SANDBOX_CONFIG_PATH, else
 * ~/.sandbox.toml; a missing default file means built-in defaults.
 * OPENSANDBOX_SERVER_API_KEY overrides [server] api_key. Errors name the
 * file, the key and the problem ("~/.sandbox.toml:12: [server] port: must
 * be an integer in 1..65535"). */
#ifndef OSB_SERVER_CONFIG_H
#define OSB_SERVER_CONFIG_H
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

struct osb_config {
    char *path; /* the file read, or NULL for defaults */
    struct {
        char *host;                          /* default "127.0.0.1" */
        int port;                            /* default 8080 */
        char *api_key;                       /* NULL or "" = none */
        char *eip;                           /* public host[:port] for endpoints; NULL = derive */
        int64_t max_sandbox_timeout_seconds; /* 0 = no cap */
        int64_t min_sandbox_timeout_seconds; /* create timeout below it -> 400; default 60 */
        char *log_level;                     /* "error" | "warn" | "info" (default) | "debug" */
        int64_t max_sandboxes;               /* live sandboxes; 0 = no cap (server/admit.h) */
        int64_t max_concurrent_creates;      /* creates at once; 0 = no cap */
        int64_t admission_wait_seconds;      /* queued at capacity this long; default 30 */
    } server;
    struct {
        char *type;       /* the default backend: "native" or "gvisor", after
                             [secure_runtime] type is applied (docs/configuration.md) */
        char *execd_path; /* default: execd next to the server binary */
        char *init_path;  /* default: osb-sandbox-init next to the server binary */
    } runtime;
    struct {
        char *state_dir;            /* default ~/.opensandbox */
        int64_t default_disk_bytes; /* writable layer when no limit is asked: 1 GiB */
        int64_t default_pids_max;   /* 4096 */
        int64_t log_max_bytes;      /* bounded per-sandbox log: 1 MiB */
        bool user_namespaces;       /* default true (docs/runtime.md) */
        bool user_namespaces_set;   /* written in the file (a failed probe is then an error) */
        char *userns_range;         /* "start:count", default "100000:6553600" */
    } native;
    struct {
        char *platform; /* runsc --platform, default "ptrace" */
        char *runsc;    /* NULL: runsc on PATH */
        bool debug;     /* runsc --debug, logs in each sandbox's dir */
    } gvisor;
    struct {
        char **insecure_registries; /* NULL-terminated; NULL = none */
        char **mirrors;             /* docker.io mirrors (base URLs); NULL = none */
        char *pull_policy;          /* "missing" (default) | "never" */
    } image;
    struct {
        char **allowed_host_paths;    /* NULL-terminated, never NULL; absolute, normalized;
                                            empty = every host volume refused */
        char *volumes_dir;            /* pvc volumes; default <native.state_dir>/volumes */
        int64_t volume_default_bytes; /* a new claim without `storage`: 1Gi */
        int64_t volume_max_bytes;     /* largest `storage` of a new claim: 1Ti */
    } storage;
    struct {
        char *mode;              /* "nat" (default) | "bridge" | "none" */
        char *subnet;            /* "10.88.0.0/16" */
        int pool_size;           /* ready slots: 8 */
        char **dns_upstreams;    /* NULL: the host's /etc/resolv.conf */
        char **allow_host_cidrs; /* NULL = none */
    } network;
    struct {
        char *mode; /* "dns+nft" (default) | "dns" */
    } egress;
    struct {
        char *upstream_ca_file; /* extra trust for the vault proxy's upstreams; NULL: none */
    } credential_vault;
    struct {
        char *type;              /* NULL = absent; "" or "gvisor" as written */
        char **allowed;          /* backends a request may pick (NULL-terminated,
                                     deduplicated, the default first); never NULL */
        char *docker_runtime;    /* upstream's; accepted, ignored (NULL = absent) */
        char *k8s_runtime_class; /* upstream's; accepted, ignored (NULL = absent) */
    } secure_runtime;
    struct {
        bool enabled; /* default true */
        char *path;   /* NULL: <state_dir>/audit.log */
    } audit;
    struct {
        bool per_sandbox; /* per-sandbox usage series in /metrics (default false) */
        char *listen;     /* "host:port" of a keyless /metrics listener; NULL: none */
    } metrics;
    struct {
        char *format; /* [log] format: "text" (default) | "json" */
        char *file;   /* [log] file: NULL = stderr; reopened on SIGHUP */
        bool access;  /* [log] access: a line per request (default true) */
    } log;
    bool insecure; /* OPENSANDBOX_INSECURE_SERVER=YES */
};

/* path NULL: resolve as above. Unknown keys in known tables are errors
 * (typos must not pass silently); unknown tables (upstream's [docker],
 * [ingress], ...) are accepted and ignored. */
/* On failure *out is untouched (nothing to free) and err says what is
 * wrong: OSB_E_NOTFOUND for a missing --config/$SANDBOX_CONFIG_PATH file,
 * OSB_E_INVALID for bad content ("FILE:LINE: [table] key: problem", or
 * "FILE: line L, column C: ..." for TOML syntax). docs/configuration.md
 * lists every key. */
OSB_MUST_CHECK int osb_config_load(const char *path, struct osb_config *out, struct osb_err *err);
void osb_config_free(struct osb_config *cfg);
/* Write a commented example ("native"; NULL = native) to path, mode 0600,
 * creating parent directories; refuses to overwrite (OSB_E_EXISTS);
 * "docker"/"k8s" -> OSB_E_UNSUPPORTED. [network] subnet is `subnet` (the
 * caller picks one free on the host; NULL = the default). The file loads
 * back as the defaults but for that subnet. */
OSB_MUST_CHECK int osb_config_write_example(const char *path, const char *example,
                                            const char *subnet, struct osb_err *err);
#endif
