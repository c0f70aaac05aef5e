/* Server configuration (config.h). One declarative table lists every key
 * with its type, range, default as written in the example file, and the
 * comment shown there; the loader validates the parsed TOML against it and
 * the example writer prints it, so the two cannot drift apart. */
#include "server/config.h"

#include "runtime/native/idrange.h"
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/quantity.h"
#include "common/toml.h"
#include "common/xalloc.h"

/* A config file is a few kilobytes; anything this large is a mistake. */
#define MAX_CONFIG_BYTES (1024 * 1024)

enum kind {
    K_STR,      /* string, may be empty (empty = unset) */
    K_HOST,     /* non-empty string */
    K_PATH,     /* non-empty string; "~" expanded, made absolute */
    K_INT,      /* integer into an int */
    K_I64,      /* integer into an int64_t */
    K_BOOL,     /* true | false into a bool */
    K_SIZE,     /* bytes: an integer or a quantity string ("1Gi") */
    K_LOGLEVEL, /* error | warn | info | debug */
    K_RUNTIME,  /* native (docker, kubernetes: not yet) */
    K_STRLIST,  /* array of non-empty strings into a NULL-terminated char ** */
    K_PULL,     /* missing | never */
    K_NETMODE,  /* nat | none | bridge */
    K_EGRESS,   /* dns | dns+nft */
    K_PATHS,    /* array of absolute paths, normalized, into a NULL-terminated char ** */
    K_IDRANGE,  /* "start:count" of host ids (runtime/native/idrange.h) */
    K_IGNORED,  /* an upstream key with no meaning here: accepted, ignored */
    K_SECURE,   /* [secure_runtime] type: "" | gvisor (kata, firecracker: not yet) */
    K_BACKENDS, /* array of backend names (runtime.h's table) */
};

struct option {
    const char *table, *key;
    enum kind kind;
    size_t off; /* into struct osb_config */
    int64_t min, max;
    const char *example; /* value text in the example; NULL = computed default */
    bool commented;      /* shown commented out in the example */
    const char *doc;     /* example comment; '\n' separates lines */
};

#define OFF(f) offsetof(struct osb_config, f)
#define KiB 1024LL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define PiB (1024 * 1024 * GiB)
#define TEN_YEARS (10LL * 366 * 24 * 3600)

static const struct option options[] = {
    {"server", "host", K_HOST, OFF(server.host), 0, 0, "\"127.0.0.1\"", false,
     "Address to listen on. \"0.0.0.0\" accepts connections from other machines."},
    {"server", "port", K_INT, OFF(server.port), 1, 65535, "8080", false, "TCP port of the API."},
    {"server", "api_key", K_STR, OFF(server.api_key), 0, 0, "\"change-me\"", true,
     "Clients must send this in the OPEN-SANDBOX-API-KEY header.\n"
     "The environment variable OPENSANDBOX_SERVER_API_KEY overrides it. With no key\n"
     "the server refuses to start unless OPENSANDBOX_INSECURE_SERVER=YES is set."},
    {"server", "eip", K_STR, OFF(server.eip), 0, 0, "\"sandbox.example.com:8080\"", true,
     "Public host[:port] used in endpoint URLs returned to clients.\n"
     "Unset: the host and port the request came to."},
    {"server", "max_sandbox_timeout_seconds", K_I64, OFF(server.max_sandbox_timeout_seconds), 0,
     TEN_YEARS, "0", false,
     "Largest sandbox timeout a client may ask for; 0 = no cap.\n"
     "Otherwise it must be at least min_sandbox_timeout_seconds."},
    {"server", "min_sandbox_timeout_seconds", K_I64, OFF(server.min_sandbox_timeout_seconds), 1,
     TEN_YEARS, "60", false, "Smallest sandbox timeout a client may ask for."},
    {"server", "log_level", K_LOGLEVEL, OFF(server.log_level), 0, 0, "\"info\"", false,
     "One of \"error\", \"warn\", \"info\", \"debug\"."},
    /* admission control (server/admit.h) */
    {"server", "max_sandboxes", K_I64, OFF(server.max_sandboxes), 0, 10000000, "0", false,
     "Live sandboxes at most (Pending, Running, Paused, Stopping); 0 = no cap.\n"
     "A create beyond it waits up to admission_wait_seconds, then gets 429."},
    {"server", "max_concurrent_creates", K_I64, OFF(server.max_concurrent_creates), 0, 100000, "8",
     true,
     "Creates in progress at once; more wait in a FIFO queue; 0 = no cap.\n"
     "Unset: the number of online CPUs (measured best: docs/configuration.md)."},
    {"server", "admission_wait_seconds", K_I64, OFF(server.admission_wait_seconds), 0, 3600, "30",
     false,
     "How long a create waits for room (under the caps above, or a pool's\n"
     "member: docs/pools.md) before its 429 with Retry-After; 0 = fail at once."},
    /* upstream (uvicorn) knobs: accepted so upstream files load */
    {"server", "timeout_keep_alive", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"server", "limit_concurrency", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"server", "backlog", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"server", "thread_pool_size", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"server", "loop", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"server", "http", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"runtime", "type", K_RUNTIME, OFF(runtime.type), 0, 0, "\"native\"", false,
     "Sandbox runtime. \"native\" (Linux namespaces, overlayfs, cgroups, seccomp;\n"
     "no Docker needed) or \"gvisor\" (runsc; see docs/internals/gvisor.md);\n"
     "\"docker\" and \"kubernetes\" will follow."},
    {"runtime", "execd_path", K_PATH, OFF(runtime.execd_path), 0, 0, NULL, true,
     "The execd binary run as PID 1 in every sandbox (static).\n"
     "Default: execd next to the opensandbox-server binary."},
    {"runtime", "init_path", K_PATH, OFF(runtime.init_path), 0, 0, NULL, true,
     "The helper that builds a sandbox and execs execd in it.\n"
     "Default: osb-sandbox-init next to the opensandbox-server binary."},
    {"runtime", "execd_image", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"native", "state_dir", K_PATH, OFF(native.state_dir), 0, 0, "\"~/.opensandbox\"", false,
     "Where sandbox records (SQLite), images and per-sandbox state live."},
    {"native", "default_disk", K_SIZE, OFF(native.default_disk_bytes), MiB, PiB, "\"1Gi\"", false,
     "Size of a sandbox's writable layer when the request sets no limit.\n"
     "Sizes are bytes (an integer) or Kubernetes quantities: \"512Mi\", \"1Gi\", \"2G\"."},
    {"native", "default_pids_max", K_I64, OFF(native.default_pids_max), 16, 4194304, "4096", false,
     "Most processes and threads a sandbox may run at once."},
    {"native", "log_max_bytes", K_SIZE, OFF(native.log_max_bytes), 4 * KiB, GiB, "\"1Mi\"", false,
     "Output of the entrypoint and execd kept per sandbox (oldest dropped first)."},
    {"native", "user_namespaces", K_BOOL, OFF(native.user_namespaces), 0, 0, "true", false,
     "true: every sandbox runs in its own user namespace, root inside an\n"
     "unprivileged uid outside (a range of 65536 from userns_range). Unset: on\n"
     "if the host can (else off, with a warning); true: a host that cannot is\n"
     "an error at start-up; false: root inside is root outside."},
    {"native", "userns_range", K_IDRANGE, OFF(native.userns_range), 0, 0, "\"100000:6553600\"",
     false,
     "\"start:count\" host uids and gids the sandboxes' user namespaces map to;\n"
     "count a multiple of 65536 (that many ids each, so count / 65536 sandboxes)."},
    {"gvisor", "platform", K_STR, OFF(gvisor.platform), 0, 0, "\"ptrace\"", false,
     "runsc --platform of the gvisor runtime: one this runsc lists in\n"
     "`runsc help platforms` (docs/internals/gvisor.md says which work here)."},
    {"gvisor", "debug", K_BOOL, OFF(gvisor.debug), 0, 0, "false", false,
     "runsc --debug for each sandbox's create: the Sentry's, the gofer's and\n"
     "runsc's debug logs in <state>/gvisor/sandboxes/<id>/debug/ (kept while\n"
     "the sandbox's log is; large and slow: for diagnosing)."},
    {"gvisor", "runsc", K_PATH, OFF(gvisor.runsc), 0, 0, "\"/usr/bin/runsc\"", true,
     "The runsc binary of the gvisor runtime. Default: runsc on PATH."},
    {"image", "insecure_registries", K_STRLIST, OFF(image.insecure_registries), 0, 0,
     "[\"127.0.0.1:5000\"]", true,
     "Registries (host or host:port, as written in image references) reached over\n"
     "plain HTTP instead of HTTPS."},
    {"image", "pull_policy", K_PULL, OFF(image.pull_policy), 0, 0, "\"missing\"", false,
     "\"missing\": images not in the store are pulled when a sandbox needs them.\n"
     "\"never\": only images already in the store (pulled with `image pull`,\n"
     "imported, or snapshots) can be used; the server never contacts a registry."},
    {"image", "mirrors", K_STRLIST, OFF(image.mirrors), 0, 0, "[\"https://mirror.example.com\"]",
     true, "Base URLs tried, in order, before Docker Hub for docker.io images."},
    {"storage", "allowed_host_paths", K_PATHS, OFF(storage.allowed_host_paths), 0, 0, "[]", false,
     "Host directories that \"host\" volumes may mount (themselves or anything\n"
     "beneath them), e.g. [\"/data\", \"/srv/datasets\"]. Empty: every host volume is\n"
     "refused. Symlinks inside them cannot lead outside (see docs/volumes.md)."},
    {"storage", "volumes_dir", K_PATH, OFF(storage.volumes_dir), 0, 0, "\"~/.opensandbox/volumes\"",
     true,
     "Where \"pvc\" volumes (server-managed named volumes) keep their data.\n"
     "Default: volumes/ in [native] state_dir."},
    {"storage", "volume_default_size", K_SIZE, OFF(storage.volume_default_bytes), 8 * MiB, PiB,
     "\"1Gi\"", false,
     "Size of a new \"pvc\" claim whose request names no `storage`. A claim is an\n"
     "ext4 image of that size: writes beyond it fail with ENOSPC."},
    {"storage", "volume_max_size", K_SIZE, OFF(storage.volume_max_bytes), 8 * MiB, PiB, "\"1Ti\"",
     false,
     "Largest `storage` a request may ask for a new claim (and never more than\n"
     "the free space of volumes_dir)."},
    {"network", "mode", K_NETMODE, OFF(network.mode), 0, 0, "\"nat\"", false,
     "\"nat\": each sandbox has its own network (a veth pair to the host, NAT out,\n"
     "a host-side DNS resolver). \"bridge\": the same, and endpoints give the\n"
     "sandbox's own address. \"none\": loopback only."},
    {"network", "subnet", K_STR, OFF(network.subnet), 0, 0, "\"10.88.0.0/16\"", false,
     "Private IPv4 range the sandboxes' links are cut from (a /30 each); default\n"
     "10.88.0.0/16. It must not overlap any address or route on the host (another\n"
     "opensandbox-server, docker0, a VPN): the server refuses to start then and names\n"
     "a free range. init-config writes one that is free when it runs."},
    {"network", "pool_size", K_INT, OFF(network.pool_size), 1, 1024, "8", false,
     "Network slots kept ready, so a create does not wait for one."},
    {"network", "dns_upstreams", K_STRLIST, OFF(network.dns_upstreams), 0, 0, "[\"10.0.0.2:53\"]",
     true,
     "Resolvers (\"ip\" or \"ip:port\") the sandboxes' DNS queries go to.\n"
     "Default: the nameservers of the host's /etc/resolv.conf."},
    {"network", "allow_host_cidrs", K_STRLIST, OFF(network.allow_host_cidrs), 0, 0,
     "[\"10.0.0.5/32\"]", true,
     "Host addresses (or 169.254.0.0/16 ones) sandboxes may reach nevertheless."},
    {"egress", "mode", K_EGRESS, OFF(egress.mode), 0, 0, "\"dns+nft\"", false,
     "How a networkPolicy is enforced: \"dns\" (only allowed names resolve) or\n"
     "\"dns+nft\" (also, only addresses of allowed answers and allowed CIDRs are\n"
     "reachable: literal IPs, hard-coded resolvers and DoH are blocked)."},
    {"audit", "enabled", K_BOOL, OFF(audit.enabled), 0, 0, "true", true,
     "Append every state-changing API request to a hash-chained audit trail."},
    {"audit", "path", K_PATH, OFF(audit.path), 0, 0, "\"/var/lib/opensandbox/audit.log\"", true,
     "The audit trail's file. Unset: audit.log in the state dir."},
    {"metrics", "listen", K_STR, OFF(metrics.listen), 0, 0, "\"127.0.0.1:9464\"", true,
     "Also serve GET /metrics on this host:port, without the API key (for a\n"
     "Prometheus on the same host or network). Unset: only on the API port,\n"
     "behind the key."},
    {"metrics", "per_sandbox", K_BOOL, OFF(metrics.per_sandbox), 0, 0, "false", true,
     "GET /metrics also shows each running sandbox's memory, CPU time and\n"
     "processes (a sandbox_id label per sandbox: one series each)."},
    {"credential_vault", "upstream_ca_file", K_PATH, OFF(credential_vault.upstream_ca_file), 0, 0,
     "\"/etc/opensandbox/upstream-ca.pem\"", true,
     "Extra CA certificates (PEM) the credential vault's proxy trusts for\n"
     "upstreams, beside the host's trust store (private APIs, tests)."},
    {"egress", "image", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"egress", "disable_ipv6", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"egress", "readiness_timeout_seconds", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"storage", "ossfs_mount_root", K_IGNORED, 0, 0, 0, NULL, false, NULL},
    {"secure_runtime", "type", K_SECURE, OFF(secure_runtime.type), 0, 0, "\"gvisor\"", true,
     "Upstream's key: \"gvisor\" makes gVisor (runsc) the default runtime of new\n"
     "sandboxes; \"\" or unset: [runtime] type (native by default)."},
    {"secure_runtime", "allowed", K_BACKENDS, OFF(secure_runtime.allowed), 0, 0,
     "[\"native\", \"gvisor\"]", true,
     "Runtimes a create request may choose with extensions.runtime (each is\n"
     "opened at start-up). Unset: only the default runtime."},
    /* upstream's Docker / Kubernetes plumbing: kept to log that it is unused */
    {"secure_runtime", "docker_runtime", K_STR, OFF(secure_runtime.docker_runtime), 0, 0, NULL,
     false, NULL},
    {"secure_runtime", "k8s_runtime_class", K_STR, OFF(secure_runtime.k8s_runtime_class), 0, 0,
     NULL, false, NULL},
};

static const char *const our_tables[] = {"server",  "runtime", "native",         "image",
                                         "storage", "network", "egress",         "credential_vault",
                                         "metrics", "audit",   "secure_runtime", "gvisor"};

/* ---- small helpers ---- */

static const char *home_dir(void)
{
    const char *h = getenv("HOME");
    if (h && *h)
        return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

/* "~" and "~/x" expand to the home directory; relative paths become
 * absolute against the working directory, so a daemon that changes
 * directory later still finds them. Caller frees. */
static char *expand_path(const char *p)
{
    if (p[0] == '~' && (p[1] == 0 || p[1] == '/'))
        return osb_xasprintf("%s%s", home_dir(), p + 1);
    if (p[0] == '/')
        return osb_xstrdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return osb_xstrdup(p);
    return osb_xasprintf("%s/%s", cwd, p);
}

/* The directory holding the running binary (/proc/self/exe). */
static char *self_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return osb_xstrdup(".");
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = 0;
    return osb_xstrdup(*buf ? buf : "/");
}

static char *default_exe(const char *name)
{
    _cleanup_free_ char *dir = self_dir();
    return osb_xasprintf("%s/%s", dir, name);
}

static void *field(struct osb_config *cfg, const struct option *o)
{
    return (char *)cfg + o->off;
}

static void set_str(struct osb_config *cfg, const struct option *o, char *v)
{
    char **slot = field(cfg, o);
    free(*slot);
    *slot = v;
}

static void set_defaults(struct osb_config *cfg)
{
    cfg->server.host = osb_xstrdup("127.0.0.1");
    cfg->server.port = 8080;
    cfg->server.min_sandbox_timeout_seconds = 60;
    cfg->server.log_level = osb_xstrdup("info");
    /* bench/admission_bench.py: one create per CPU gives the best p50 with
     * the first ready close to a serial create (docs/configuration.md) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->server.max_concurrent_creates = cpus > 0 ? cpus : 1;
    cfg->server.admission_wait_seconds = 30;
    cfg->log.format = osb_xstrdup("text");
    cfg->log.access = true;
    cfg->audit.enabled = true;
    cfg->runtime.type = osb_xstrdup("native");
    cfg->runtime.execd_path = default_exe("execd");
    cfg->runtime.init_path = default_exe("osb-sandbox-init");
    cfg->native.state_dir = expand_path("~/.opensandbox");
    cfg->native.default_disk_bytes = GiB;
    cfg->image.pull_policy = osb_xstrdup("missing");
    cfg->network.mode = osb_xstrdup("nat");
    cfg->network.subnet = osb_xstrdup("10.88.0.0/16");
    cfg->network.pool_size = 8;
    cfg->egress.mode = osb_xstrdup("dns+nft");
    cfg->native.default_pids_max = 4096;
    cfg->native.log_max_bytes = MiB;
    cfg->native.user_namespaces = true;
    cfg->native.userns_range = osb_xstrdup("100000:6553600");
    cfg->gvisor.platform = osb_xstrdup("ptrace");
    cfg->storage.allowed_host_paths = osb_xcalloc(1, sizeof(char *));
    cfg->storage.volume_default_bytes = GiB;
    cfg->storage.volume_max_bytes = 1024 * GiB;
}

/* Edit distance, for "did you mean" on unknown keys. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* ---- validation ---- */

struct ctx {
    const char *file;
    json_t *lines;
    struct osb_err *err;
};

static int bad(struct ctx *c, const char *table, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* "file:line: [table] key: problem" */
static int bad(struct ctx *c, const char *table, const char *key, const char *fmt, ...)
{
    char path[256], what[300];
    snprintf(path, sizeof path, "%s.%s", table, key);
    int line = osb_toml_line(c->lines, key ? path : table);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char where[32] = "";
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    if (!key)
        return osb_err_set(c->err, OSB_E_INVALID, "%s%s: [%s]: %s", c->file, where, table, what);
    return osb_err_set(c->err, OSB_E_INVALID, "%s%s: [%s] %s: %s", c->file, where, table, key,
                       what);
}

static int check_int(struct ctx *c, const struct option *o, json_t *v, int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < o->min || json_integer_value(v) > o->max)
        return bad(c, o->table, o->key, "must be an integer in %lld..%lld", (long long)o->min,
                   (long long)o->max);
    *out = json_integer_value(v);
    return 0;
}

static int check_size(struct ctx *c, const struct option *o, json_t *v, int64_t *out)
{
    int64_t n = 0;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (!json_is_string(v) || osb_quantity_bytes(json_string_value(v), &n) < 0) {
        return bad(c, o->table, o->key,
                   "must be a size: bytes as an integer, or a string like \"512Mi\" or \"1Gi\"");
    }
    if (n < o->min || n > o->max)
        return bad(c, o->table, o->key, "must be between %lld and %lld bytes", (long long)o->min,
                   (long long)o->max);
    *out = n;
    return 0;
}

static int check_string(struct ctx *c, const struct option *o, json_t *v, const char **out)
{
    if (!json_is_string(v))
        return bad(c, o->table, o->key, "must be a string");
    *out = json_string_value(v);
    if (o->kind != K_STR && o->kind != K_SECURE && !**out)
        return bad(c, o->table, o->key, "must not be empty");
    return 0;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static int check_strlist(struct ctx *c, const struct option *o, json_t *v, char ***out)
{
    if (!json_is_array(v))
        return bad(c, o->table, o->key, "must be an array of strings");
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_string(e) || !json_string_value(e)[0])
            return bad(c, o->table, o->key, "element %zu must be a non-empty string", i);
    }
    char **list = osb_xcalloc(n + 1, sizeof *list);
    for (size_t i = 0; i < n; i++)
        list[i] = osb_xstrdup(json_string_value(json_array_get(v, i)));
    free_strv(*out);
    *out = list;
    return 0;
}

static int check_log_level(struct ctx *c, const struct option *o, const char *s, char **out)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(levels); i++)
        if (!strcasecmp(s, levels[i])) {
            *out = osb_xstrdup(levels[i]);
            return 0;
        }
    if (!strcasecmp(s, "warning")) {
        *out = osb_xstrdup("warn");
        return 0;
    }
    return bad(c, o->table, o->key, "unknown level '%s' (expected error, warn, info or debug)", s);
}

static int check_runtime(struct ctx *c, const struct option *o, const char *s)
{
    if (osb_rt_backend(s))
        return 0;
    if (!strcmp(s, "docker") || !strcmp(s, "kubernetes"))
        return bad(c, o->table, o->key, "runtime type '%s' is not supported yet (use \"native\")",
                   s);
    char names[128];
    osb_rt_backend_names(names, sizeof names);
    return bad(c, o->table, o->key, "unknown runtime type '%s' (there is: %s)", s, names);
}

/* Kata and Firecracker are upstream's other secure runtimes. */
static bool is_future_backend(const char *s)
{
    return !strcmp(s, "kata") || !strcmp(s, "firecracker");
}

static int check_secure(struct ctx *c, const struct option *o, const char *s)
{
    char names[128];
    osb_rt_backend_names(names, sizeof names);
    if (!*s || !strcmp(s, "gvisor"))
        return 0;
    if (is_future_backend(s))
        return bad(c, o->table, o->key,
                   "secure runtime '%s' does not exist in this server yet; the runtimes are: "
                   "%s (use \"gvisor\", or \"\" for [runtime] type)",
                   s, names);
    return bad(c, o->table, o->key, "unknown secure runtime '%s' (expected \"\" or \"gvisor\")", s);
}

static int check_backends(struct ctx *c, const struct option *o, json_t *v, char ***out)
{
    if (check_strlist(c, o, v, out) < 0)
        return -1;
    char names[128];
    osb_rt_backend_names(names, sizeof names);
    for (size_t i = 0; (*out)[i]; i++) {
        const char *s = (*out)[i];
        if (osb_rt_backend(s))
            continue;
        return bad(c, o->table, o->key, "element %zu: %s runtime '%s' (there is: %s)", i,
                   is_future_backend(s) ? "this server has no" : "unknown", s, names);
    }
    return 0;
}

/* The native runtime's own parser, so a bad range stops the load with
 * the file and line instead of the runtime's open. */
static int check_idrange(struct ctx *c, const struct option *o, const char *s)
{
    uint32_t first, count;
    struct osb_err e = {0};
    if (osb_idr_parse(s, &first, &count, &e) < 0)
        return bad(c, o->table, o->key, "%s", e.msg);
    return 0;
}

/* An absolute path without "..", "." or empty components and without a
 * trailing slash ("/" stays "/"); NULL when it needs "..". Caller frees. */
static char *normal_abs(const char *p)
{
    char *out = osb_xmalloc(strlen(p) + 2), *o = out;
    for (const char *c = p; *c;) {
        while (*c == '/')
            c++;
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            free(out);
            return NULL;
        }
        if (len && !(len == 1 && c[0] == '.')) {
            *o++ = '/';
            memcpy(o, c, len);
            o += len;
        }
        c += len;
    }
    if (o == out)
        *o++ = '/';
    *o = 0;
    return out;
}

static int check_paths(struct ctx *c, const struct option *o, json_t *v, char ***out)
{
    if (!json_is_array(v))
        return bad(c, o->table, o->key, "must be an array of absolute paths");
    char **paths = osb_xcalloc(json_array_size(v) + 1, sizeof *paths);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s || s[0] != '/' || !(paths[i] = normal_abs(s))) {
            free_strv(paths);
            return bad(c, o->table, o->key, "element %zu must be an absolute path without '..'",
                       i + 1);
        }
    }
    free_strv(*out);
    *out = paths;
    return 0;
}

/* Validate one value and store it. */
static int apply(struct ctx *c, struct osb_config *cfg, const struct option *o, json_t *v)
{
    int64_t n;
    const char *s = NULL;
    char *norm = NULL;
    switch (o->kind) {
    case K_IGNORED: return 0;
    case K_INT:
        if (check_int(c, o, v, &n) < 0)
            return -1;
        *(int *)field(cfg, o) = (int)n;
        return 0;
    case K_I64: return check_int(c, o, v, field(cfg, o));
    case K_BOOL:
        if (!json_is_boolean(v))
            return bad(c, o->table, o->key, "must be true or false");
        *(bool *)field(cfg, o) = json_is_true(v);
        return 0;
    case K_SIZE: return check_size(c, o, v, field(cfg, o));
    case K_STRLIST: return check_strlist(c, o, v, field(cfg, o));
    case K_PATHS: return check_paths(c, o, v, field(cfg, o));
    case K_BACKENDS: return check_backends(c, o, v, field(cfg, o));
    case K_SECURE:
    case K_STR:
    case K_HOST:
    case K_PATH:
    case K_LOGLEVEL:
    case K_RUNTIME:
    case K_PULL:
    case K_NETMODE:
    case K_EGRESS:
    case K_IDRANGE: break;
    }
    if (check_string(c, o, v, &s) < 0)
        return -1;
    if (o->kind == K_LOGLEVEL) {
        if (check_log_level(c, o, s, &norm) < 0)
            return -1;
    } else if (o->kind == K_RUNTIME && check_runtime(c, o, s) < 0) {
        return -1;
    } else if (o->kind == K_SECURE && check_secure(c, o, s) < 0) {
        return -1;
    } else if (o->kind == K_NETMODE && strcmp(s, "nat") && strcmp(s, "none") &&
               strcmp(s, "bridge")) {
        return bad(c, o->table, o->key,
                   "unknown network mode '%s' (expected \"nat\", \"bridge\" "
                   "or \"none\")",
                   s);
    } else if (o->kind == K_IDRANGE && check_idrange(c, o, s) < 0) {
        return -1;
    } else if (o->kind == K_EGRESS && strcmp(s, "dns") && strcmp(s, "dns+nft")) {
        return bad(c, o->table, o->key,
                   "unknown egress mode '%s' (expected \"dns\" or "
                   "\"dns+nft\")",
                   s);
    } else if (o->kind == K_PULL && strcmp(s, "missing") && strcmp(s, "never")) {
        return bad(c, o->table, o->key,
                   "unknown pull policy '%s' (expected \"missing\" or "
                   "\"never\")",
                   s);
    } else {
        norm = o->kind == K_PATH ? expand_path(s) : osb_xstrdup(s);
    }
    set_str(cfg, o, norm);
    return 0;
}

static const struct option *find_option(const char *table, const char *key)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(options); i++)
        if (!strcmp(options[i].table, table) && !strcmp(options[i].key, key))
            return &options[i];
    return NULL;
}

static int unknown_key(struct ctx *c, const char *table, const char *key)
{
    const char *best = NULL;
    size_t bestd = 3;
    for (size_t i = 0; i < OSB_ARRAY_LEN(options); i++) {
        if (strcmp(options[i].table, table) || options[i].kind == K_IGNORED)
            continue;
        size_t d = distance(key, options[i].key);
        if (d < bestd)
            bestd = d, best = options[i].key;
    }
    if (best)
        return bad(c, table, key, "unknown key (did you mean '%s'?)", best);
    return bad(c, table, key, "unknown key");
}

static int apply_table(struct ctx *c, struct osb_config *cfg, const char *table, json_t *t)
{
    if (!json_is_object(t))
        return bad(c, table, NULL, "must be a table");
    const char *key;
    json_t *v;
    json_object_foreach(t, key, v)
    {
        const struct option *o = find_option(table, key);
        if (!o)
            return unknown_key(c, table, key);
        if (apply(c, cfg, o, v) < 0)
            return -1;
    }
    return 0;
}

static bool is_our_table(const char *name)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(our_tables); i++)
        if (!strcmp(our_tables[i], name))
            return true;
    return false;
}

static bool strv_has(char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

/* [secure_runtime] type picks the default backend over [runtime] type
 * (upstream pairs it with runtime.type "docker"; ours with "native"); an
 * empty type says "no secure runtime", which contradicts [runtime] type =
 * "gvisor". */
static int resolve_default(struct ctx *c, struct osb_config *cfg)
{
    const char *sec = cfg->secure_runtime.type, *rt = cfg->runtime.type;
    if (sec && strcmp(rt, "native") && strcmp(rt, *sec ? sec : "native"))
        return bad(c, "secure_runtime", "type",
                   "\"%s\" contradicts [runtime] type = \"%s\"; set one of them only", sec, rt);
    if (sec && *sec) {
        free(cfg->runtime.type);
        cfg->runtime.type = osb_xstrdup(sec);
    }
    return 0;
}

/* allowed: the default backend first, then the listed others, once each. */
static void resolve_allowed(struct osb_config *cfg)
{
    char **given = cfg->secure_runtime.allowed;
    size_t n = 0;
    while (given && given[n])
        n++;
    char **all = osb_xcalloc(n + 2, sizeof *all);
    size_t k = 0;
    all[k++] = osb_xstrdup(cfg->runtime.type);
    for (size_t i = 0; i < n; i++)
        if (!strv_has(all, given[i]))
            all[k++] = osb_xstrdup(given[i]);
    free_strv(given);
    cfg->secure_runtime.allowed = all;
}

static int cross_checks(struct ctx *c, struct osb_config *cfg)
{
    int64_t max = cfg->server.max_sandbox_timeout_seconds,
            min = cfg->server.min_sandbox_timeout_seconds;
    if (max != 0 && max < min)
        return bad(c, "server", "max_sandbox_timeout_seconds",
                   "must be 0 (no cap) or at least min_sandbox_timeout_seconds (%lld)",
                   (long long)min);
    return resolve_default(c, cfg);
}

/* Upstream keeps the level in [log] level = "INFO"; honour it unless
 * [server] log_level is set. The rest of [log] is upstream's and ignored. */
static int upstream_log_level(struct ctx *c, struct osb_config *cfg, json_t *doc)
{
    static const struct option log_level = {"log", "level", K_LOGLEVEL, OFF(server.log_level), 0, 0,
                                            NULL,  false,   NULL};
    json_t *v = json_object_get(json_object_get(doc, "log"), "level");
    if (!v || json_object_get(json_object_get(doc, "server"), "log_level"))
        return 0;
    return apply(c, cfg, &log_level, v);
}

/* Ours in upstream's [log] table (whose other keys stay ignored): format,
 * file, access (docs/operations.md). */
static int log_options(struct ctx *c, struct osb_config *cfg, json_t *doc)
{
    static const struct option opts[] = {
        {"log", "format", K_STR, OFF(log.format), 0, 0, NULL, false, NULL},
        {"log", "file", K_PATH, OFF(log.file), 0, 0, NULL, false, NULL},
        {"log", "access", K_BOOL, OFF(log.access), 0, 0, NULL, false, NULL},
    };
    json_t *log = json_object_get(doc, "log");
    for (size_t i = 0; i < OSB_ARRAY_LEN(opts); i++) {
        json_t *v = json_object_get(log, opts[i].key);
        if (v && apply(c, cfg, &opts[i], v) < 0)
            return -1;
    }
    if (strcmp(cfg->log.format, "text") != 0 && strcmp(cfg->log.format, "json") != 0)
        return bad(c, "log", "format", "must be \"text\" or \"json\"");
    return 0;
}

/* Apply a parsed document: our tables are validated key by key; other
 * tables (upstream's [docker], [ingress], [store], ...) are ignored so
 * upstream files load; top-level keys outside any table are errors. */
static int apply_doc(struct ctx *c, struct osb_config *cfg, json_t *doc)
{
    const char *name;
    json_t *v;
    json_object_foreach(doc, name, v)
    {
        if (is_our_table(name)) {
            if (apply_table(c, cfg, name, v) < 0)
                return -1;
        } else if (!json_is_object(v) && !json_is_array(v)) {
            int line = osb_toml_line(c->lines, name);
            return osb_err_set(c->err, OSB_E_INVALID,
                               "%s:%d: '%s': keys must be inside a table such as [server]", c->file,
                               line, name);
        }
    }
    if (upstream_log_level(c, cfg, doc) < 0 || log_options(c, cfg, doc) < 0)
        return -1;
    if (json_object_get(json_object_get(doc, "native"), "user_namespaces"))
        cfg->native.user_namespaces_set = true;
    return cross_checks(c, cfg);
}

/* ---- loading ---- */

/* Read a whole file. 1 = read, 0 = does not exist, -1 = error. */
static int read_file(const char *path, char **out, size_t *len, struct osb_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return osb_err_sys(err, "config file %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return osb_err_sys(err, "config file %s", path);
    if (!S_ISREG(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "config file %s: not a regular file", path);
    if (st.st_size > MAX_CONFIG_BYTES)
        return osb_err_set(err, OSB_E_TOOBIG, "config file %s: larger than %d bytes", path,
                           MAX_CONFIG_BYTES);
    char *buf = osb_xmalloc((size_t)st.st_size + 1);
    size_t n = 0;
    for (;;) {
        ssize_t r = OSB_RETRY(read(fd, buf + n, (size_t)st.st_size + 1 - n));
        if (r < 0) {
            free(buf);
            return osb_err_sys(err, "config file %s", path);
        }
        if (r == 0 || n + (size_t)r > (size_t)st.st_size)
            break;
        n += (size_t)r;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 1;
}

static int load_text(const char *file, const char *text, size_t len, struct osb_config *cfg,
                     struct osb_err *err)
{
    json_t *doc = NULL, *lines = NULL;
    if (osb_toml_parse(text, len, &doc, &lines, err) < 0)
        return osb_err_wrap(err, "%s", file);
    struct ctx c = {file, lines, err};
    int rc = apply_doc(&c, cfg, doc);
    json_decref(doc);
    json_decref(lines);
    return rc;
}

static void apply_env(struct osb_config *cfg)
{
    const char *key = getenv("OPENSANDBOX_SERVER_API_KEY");
    if (key && *key) {
        free(cfg->server.api_key);
        cfg->server.api_key = osb_xstrdup(key);
    }
    const char *insecure = getenv("OPENSANDBOX_INSECURE_SERVER");
    cfg->insecure = insecure && !strcmp(insecure, "YES");
}

/* Which file to read: the argument, else $SANDBOX_CONFIG_PATH, else
 * ~/.sandbox.toml. Only the last may be missing. Caller frees. */
static char *resolve(const char *path, bool *explicit_path)
{
    const char *env = getenv("SANDBOX_CONFIG_PATH");
    *explicit_path = true;
    if (path && *path)
        return expand_path(path);
    if (env && *env)
        return expand_path(env);
    *explicit_path = false;
    return expand_path("~/.sandbox.toml");
}

int osb_config_load(const char *path, struct osb_config *out, struct osb_err *err)
{
    struct osb_config cfg = {0};
    set_defaults(&cfg);
    bool explicit_path;
    _cleanup_free_ char *file = resolve(path, &explicit_path);
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int rc = read_file(file, &text, &len, err);
    if (rc == 0 && explicit_path)
        rc = osb_err_set(err, OSB_E_NOTFOUND, "config file %s does not exist", file);
    if (rc > 0) {
        rc = load_text(file, text, len, &cfg, err);
        cfg.path = osb_steal_ptr(&file);
    }
    if (rc < 0) {
        osb_config_free(&cfg);
        return -1;
    }
    resolve_allowed(&cfg);
    if (!cfg.storage.volumes_dir)
        cfg.storage.volumes_dir = osb_xasprintf("%s/volumes", cfg.native.state_dir);
    apply_env(&cfg);
    *out = cfg;
    return 0;
}

void osb_config_free(struct osb_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->log.format);
    free(cfg->log.file);
    for (size_t i = 0; i < OSB_ARRAY_LEN(options); i++) {
        const struct option *o = &options[i];
        if (o->kind == K_STRLIST || o->kind == K_PATHS || o->kind == K_BACKENDS)
            free_strv(*(char ***)field(cfg, o));
        else if (o->kind != K_IGNORED && o->kind != K_INT && o->kind != K_I64 &&
                 o->kind != K_SIZE && o->kind != K_BOOL)
            free(*(char **)field(cfg, o));
    }
    memset(cfg, 0, sizeof *cfg);
}

/* ---- the example file ---- */

static int example_row(struct osb_buf *b, const struct option *o, bool first, const char *subnet)
{
    int rc = osb_buf_adds(b, first ? "# " : "\n# ");
    for (const char *d = o->doc; *d; d++)
        rc |= osb_buf_adds(b, *d == '\n' ? "\n# " : (char[]){*d, 0});
    _cleanup_free_ char *computed = NULL;
    const char *value = o->example;
    if (o->off == OFF(network.subnet) && subnet) {
        json_t *js = json_string(subnet);
        value = computed = json_dumps(js, JSON_ENCODE_ANY);
        json_decref(js);
    } else if (!value) {
        _cleanup_free_ char *exe =
            default_exe(!strcmp(o->key, "execd_path") ? "execd" : "osb-sandbox-init");
        json_t *js = json_string(exe);
        value = computed = json_dumps(js, JSON_ENCODE_ANY);
        json_decref(js);
    }
    return rc | osb_buf_addf(b, "\n%s%s = %s\n", o->commented ? "# " : "", o->key, value);
}

/* NULL if the text cannot be built (the buffer is unbounded: only a size_t
 * wrap-around). */
static char *example_text(const char *subnet)
{
    struct osb_buf b;
    osb_buf_init(&b, SIZE_MAX);
    int rc =
        osb_buf_adds(&b, "# opensandbox-server configuration (native runtime).\n"
                         "# Every key is shown with its default; commented-out keys are unset.\n"
                         "# Upstream OpenSandbox tables such as [docker], [kubernetes] or\n"
                         "# [ingress] are accepted and ignored. See docs/configuration.md.\n");
    const char *table = "";
    for (size_t i = 0; i < OSB_ARRAY_LEN(options); i++) {
        const struct option *o = &options[i];
        if (!o->doc) /* upstream keys kept only to be ignored */
            continue;
        bool first = strcmp(table, o->table) != 0;
        if (first)
            rc |= osb_buf_addf(&b, "\n[%s]\n", table = o->table);
        rc |= example_row(&b, o, first, subnet);
    }
    if (rc < 0) {
        osb_buf_free(&b);
        return NULL;
    }
    return osb_buf_steal(&b, NULL);
}

/* mkdir -p for the parent directories of path. */
static int make_parents(const char *path, struct osb_err *err)
{
    _cleanup_free_ char *dir = osb_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return osb_mkdir_p(dir, 0755, err);
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = OSB_RETRY(write(fd, s, n));
        if (w < 0)
            return -1;
        s += w, n -= (size_t)w;
    }
    return 0;
}

int osb_config_write_example(const char *path, const char *example, const char *subnet,
                             struct osb_err *err)
{
    if (example && strcmp(example, "native")) {
        if (!strcmp(example, "docker") || !strcmp(example, "k8s") || !strcmp(example, "kubernetes"))
            return osb_err_set(err, OSB_E_UNSUPPORTED,
                               "example '%s' is not available: runtime '%s' is not supported yet "
                               "(use --example native)",
                               example, example);
        return osb_err_set(err, OSB_E_INVALID, "unknown example '%s' (expected native)", example);
    }
    if (!path || !*path)
        return osb_err_set(err, OSB_E_INVALID, "init-config needs a file path");
    _cleanup_free_ char *file = expand_path(path);
    if (make_parents(file, err) < 0)
        return -1;
    /* 0600: the file is where an API key goes */
    _cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        return osb_err_set(err, OSB_E_EXISTS, "%s already exists; not overwriting it", file);
    if (fd < 0)
        return osb_err_sys(err, "create %s", file);
    _cleanup_free_ char *text = example_text(subnet);
    if (!text) {
        unlink(file);
        return osb_err_set(err, OSB_E_INTERNAL, "cannot build the example configuration");
    }
    if (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
        int e = osb_err_sys(err, "write %s", file);
        unlink(file);
        return e;
    }
    return 0;
}
