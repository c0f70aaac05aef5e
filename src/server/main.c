/* opensandbox-server: the lifecycle API on the native runtime.
 *
 *   opensandbox-server [--config FILE]
 *   opensandbox-server init-config PATH [--example native]
 *   opensandbox-server image pull|list|rm|prune|import|export|push ...
 *
 * Start-up is a checklist: config, API key policy, state dir (locked: two
 * servers on one state dir would clean up each other's sandboxes as
 * orphans), store, runtime, recovery of the sandboxes of a previous run,
 * then listen. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "common/version.h"
#include "net/hostnet.h"
#include "image/store.h"
#include "server/admit.h"
#include "server/audit.h"
#include "server/signing.h"
#include "server/idem.h"
#include "server/metrics.h"
#include "server/image_cli.h"
#include "server/network.h"
#include "server/otlp.h"
#include "server/vault.h"
#include "server/pull.h"
#include "server/pools.h"
#include "server/server.h"
#include "server/snapshots.h"
#include "server/volumes.h"

/* execd gets this long to answer /ping after the runtime started it; a
 * healthy sandbox answers in a few ms, 50 concurrent creates on two cores
 * in well under a second. */
#define READY_TIMEOUT_MS 15000

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: opensandbox-server [--config FILE]\n"
        "       opensandbox-server --version\n"
        "       opensandbox-server init-config PATH [--example native]\n"
        "       opensandbox-server audit verify [--continued] FILE...   (rotated files oldest first)\n"
        "       opensandbox-server [--config FILE] image pull REF [--username U "
        "--password-stdin] [--platform OS/ARCH]\n"
        "       opensandbox-server [--config FILE] image list | image prune\n"
        "       opensandbox-server [--config FILE] image rm NAME\n"
        "       opensandbox-server [--config FILE] image import NAME FILE.tar\n"
        "       opensandbox-server [--config FILE] image export NAME|SNAPSHOT_ID FILE.tar\n"
        "       opensandbox-server [--config FILE] image push NAME|SNAPSHOT_ID REF [--username U "
        "--password-stdin]\n"
        "\n"
        "The config file defaults to $SANDBOX_CONFIG_PATH, else ~/.sandbox.toml.\n"
        "Environment: OPENSANDBOX_SERVER_API_KEY (overrides [server] api_key),\n"
        "OPENSANDBOX_INSECURE_SERVER=YES (run without an API key), OSB_LOG_LEVEL.\n");
}

static int fail(const char *what, const struct osb_err *err)
{
    fprintf(stderr, "opensandbox-server: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
    return 1;
}

static void set_log_level(const char *lvl)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (getenv("OSB_LOG_LEVEL") || !lvl)
        return; /* the environment wins, for debugging a configured server */
    for (int i = 0; i < 4; i++)
        if (strcmp(lvl, names[i]) == 0)
            osb_log_level = (enum osb_log_level)i;
}

/* ------------------------------------------------------- init-config */

static int cmd_init_config(int argc, char **argv)
{
    static const struct option lo[] = {{"example", required_argument, NULL, 'e'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *example = "native";
    int ch;
    optind = 0; /* 0, not 1: re-initialises GNU getopt, which main left in "+" (stop at the
                   first non-option) mode, so options may follow PATH */
    while ((ch = getopt_long(argc, argv, "e:h", lo, NULL)) != -1) {
        if (ch == 'e') {
            example = optarg;
            continue;
        }
        usage(ch == 'h' ? stdout : stderr);
        return ch == 'h' ? 0 : 2;
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    struct osb_err err = {0};
    struct osb_hostnet h;
    char subnet[20] = "10.88.0.0/16";
    if (osb_hostnet_scan(NULL, &h, &err) < 0 || osb_hostnet_free16(&h, subnet) < 0)
        fprintf(stderr,
                "opensandbox-server: init-config: no free 10.X.0.0/16 found%s%s; "
                "writing subnet %s\n",
                err.msg[0] ? ": " : "", err.msg, subnet);
    osb_hostnet_free(&h);
    if (osb_config_write_example(argv[optind], example, subnet, &err) < 0)
        return fail("init-config", &err);
    printf("wrote %s ([network] subnet %s, free on this host)\n", argv[optind], subnet);
    return 0;
}

/* -------------------------------------------------------------- image */

static void add_record(void *ud, struct osb_sbx *s)
{
    osb_reg_add(ud, s);
}

static int make_state_dir(const char *dir)
{
    struct osb_err err = {0};
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        osb_err_sys(&err, "create state dir `%s`", dir);
        return fail("state dir", &err);
    }
    return 0;
}

/* The records of the sandboxes (of a server running now or before): an
 * image they run is in use. None when no server ever ran here. */
static struct osb_sbx_index *load_records(const char *state_dir)
{
    struct osb_sbx_index *reg = osb_reg_new();
    char *path = osb_xasprintf("%s/opensandbox.db", state_dir);
    struct osb_store *st = NULL;
    struct osb_err err = {0};
    if (access(path, F_OK) == 0 && osb_store_open(path, &st, &err) == 0 &&
        osb_store_load(st, add_record, reg, &err) < 0)
        osb_warn("image: read the sandbox records: %s", err.msg);
    osb_store_close(st);
    free(path);
    return reg;
}

/* `image export|push SNAPSHOT_ID`: snapshots are stored as snapshot/<id>. */
static void snapshot_alias(struct osb_istore *images, int argc, char **argv, char *buf, size_t n)
{
    struct osb_image im;
    if (argc < 3 || (strcmp(argv[1], "export") != 0 && strcmp(argv[1], "push") != 0))
        return;
    if (osb_istore_get(images, argv[2], &im, NULL) == 0) {
        osb_image_free(&im);
        return;
    }
    snprintf(buf, n, OSB_SNAP_IMAGE_PREFIX "%s", argv[2]);
    if (osb_istore_get(images, buf, &im, NULL) == 0) {
        osb_image_free(&im);
        argv[2] = buf;
    }
}

/* The image store directly; "in use" from the sandbox records. */
static int cmd_image(const char *config, int argc, char **argv)
{
    struct osb_config cfg = {0};
    struct osb_err err = {0};
    if (osb_config_load(config, &cfg, &err) < 0)
        return fail("config", &err);
    struct osb_istore *images = NULL;
    int rc = make_state_dir(cfg.native.state_dir);
    if (rc == 0 && osb_istore_open(cfg.native.state_dir, &images, &err) < 0)
        rc = fail("image store", &err);
    if (rc == 0) {
        struct osb_registry_opts opts;
        char alias[300];
        osb_pull_opts(&cfg, &opts);
        snapshot_alias(images, argc, argv, alias, sizeof alias);
        struct osb_sbx_index *reg = load_records(cfg.native.state_dir);
        rc = osb_image_cli(images, &opts, osb_images_in_use_cb, reg, argc, argv);
        osb_reg_free(reg);
    }
    osb_istore_close(images);
    osb_config_free(&cfg);
    return rc;
}

/* ------------------------------------------------------------- audit */

/* audit verify [--continued] FILE...: 0 and "ok: N records", or 1 and the
 * first break. Rotated files are given oldest first. A first file that
 * does not begin the chain is refused unless --continued says it goes on
 * from a file not given: its first lines could as well have been removed. */
static int cmd_audit(int argc, char **argv)
{
    struct osb_audit_checked c;
    struct osb_err err = {0};
    bool continued = argc > 2 && strcmp(argv[2], "--continued") == 0;
    int first = continued ? 3 : 2;
    if (argc <= first || strcmp(argv[1], "verify") != 0) {
        usage(stderr);
        return 2;
    }
    if (osb_audit_verify_files((const char *const *)argv + first, (size_t)(argc - first), &c,
                               &err) < 0) {
        fprintf(stderr, "%s: broken at %s\n", argv[first + c.bad_file], err.msg);
        return 1;
    }
    if (c.from && !continued) {
        fprintf(stderr,
                "%s: broken at record 1 (line 1): the chain begins at seq %llu, not 1: its "
                "first records were removed, or it goes on from a rotated file (give that "
                "file first, or --continued to check it from there)\n",
                argv[first], (unsigned long long)c.from + 1);
        return 1;
    }
    printf("ok: %zu records", c.n);
    if (argc - first > 1)
        printf(" in %d files", argc - first);
    if (c.from)
        printf(" (continues from seq %llu, in an earlier file not given)",
               (unsigned long long)c.from);
    printf("\n");
    return 0;
}

/* ------------------------------------------------------------- serve */

/* SIGHUP: the log file and the audit trail were rotated; write to new
 * ones at their paths (the audit chain goes on in the new file). */
static void on_hup(uv_signal_t *h, int sig)
{
    (void)sig;
    struct osb_server *srv = h->data;
    struct osb_err err = {0};
    if (osb_log_reopen() < 0)
        osb_err_log("reopen the log file: %s", strerror(errno));
    else
        osb_info("SIGHUP: log file reopened");
    if (!srv->audit)
        return;
    if (osb_audit_reopen(srv->audit, srv->audit_path, &err) < 0) {
        osb_err_log("reopen the audit trail (records go on in the old file): %s", err.msg);
        return;
    }
    /* A record of our own at once: the new file goes on from the old one
     * even if the server restarts before any request is recorded. */
    struct osb_audit_rec r = {"server", "REOPEN audit trail", NULL, "", 0, NULL};
    osb_audit_append(srv->audit, &r);
    osb_info("SIGHUP: audit trail reopened");
}

static void on_signal(uv_signal_t *h, int sig)
{
    osb_info("signal %d: shutting down (sandboxes keep running; a restart re-adopts them)", sig);
    uv_stop(h->loop);
}

/* One lock per state dir, held for the life of the process. */
static int lock_state_dir(const char *dir)
{
    char *path = osb_xasprintf("%s/server.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int rc = 0;
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr,
                "opensandbox-server: state dir `%s` is in use by another opensandbox-server "
                "(%s: %s)\n",
                dir, path, strerror(errno));
        rc = -1;
    }
    free(path);
    return rc;
}

static int open_store(struct osb_server *srv)
{
    struct osb_err err = {0};
    char *path = osb_xasprintf("%s/opensandbox.db", srv->cfg->native.state_dir);
    int rc = osb_store_open(path, &srv->store, &err);
    if (rc == 0)
        chmod(path, 0600); /* execd tokens live in it */
    free(path);
    return rc < 0 ? fail("store", &err) : 0;
}

static bool api_key_policy(struct osb_config *cfg)
{
    if (cfg->server.api_key && *cfg->server.api_key)
        return true;
    if (cfg->insecure) {
        osb_warn("INSECURE MODE: no API key; anyone who can reach %s:%d controls every sandbox",
                 cfg->server.host, cfg->server.port);
        return true;
    }
    fprintf(stderr,
            "opensandbox-server: refusing to start without an API key.\n"
            "  Set [server] api_key in %s, or the environment variable "
            "OPENSANDBOX_SERVER_API_KEY.\n"
            "  To run without authentication (anyone who can reach the port controls every "
            "sandbox), set OPENSANDBOX_INSECURE_SERVER=YES.\n",
            cfg->path ? cfg->path : "the config file (see `opensandbox-server init-config`)");
    return false;
}

static int start(struct osb_server *srv)
{
    const struct osb_config *cfg = srv->cfg;
    struct osb_err err = {0};
    if (make_state_dir(cfg->native.state_dir) != 0 || lock_state_dir(cfg->native.state_dir) < 0)
        return 1;
    if (osb_backends_open(srv, &err) < 0)
        return fail("open the runtimes", &err);
    if (osb_istore_open(cfg->native.state_dir, &srv->images, &err) < 0)
        return fail("image store", &err);
    if (open_store(srv) != 0)
        return 1;
    if (osb_idem_open(srv, &err) < 0)
        return fail("idempotency keys", &err);
    srv->reg = osb_reg_new();
    osb_lc_init(srv);
    osb_admit_init(srv);
    if (osb_lc_recover(srv, &err) < 0)
        return fail("recover sandboxes", &err);
    if (osb_snaps_open(srv, &err) < 0)
        return fail("load snapshots", &err);
    if (osb_srvvault_open(srv, &err) < 0)
        return fail("credential vault", &err);
    if (osb_network_open(srv, &err) < 0)
        return fail("network", &err);
    if (osb_pools_open(srv, &err) < 0)
        return fail("pools", &err);
    if (cfg->audit.enabled) {
        srv->audit_path = cfg->audit.path ? osb_xstrdup(cfg->audit.path)
                                          : osb_xasprintf("%s/audit.log", cfg->native.state_dir);
        if (osb_audit_open(srv->audit_path, &srv->audit, &err) < 0)
            return fail("audit trail", &err);
    }
    char *key_path = osb_xasprintf("%s/signing.key", cfg->native.state_dir);
    int sr = osb_signer_open(key_path, &srv->signer, &err);
    free(key_path);
    if (sr < 0)
        return fail("signing key", &err);
    srv->http = osb_http_server_new(srv->loop);
    osb_api_register(srv);
    osb_access_install(srv);
    if (osb_otlp_open(srv, &err) < 0)
        return fail("OpenTelemetry export", &err);
    if (osb_metrics_listen(srv, &err) < 0)
        return fail("metrics listener", &err);
    if (osb_http_listen_tcp(srv->http, cfg->server.host, cfg->server.port, &err) < 0)
        return fail("listen", &err);
    srv->port = osb_http_server_port(srv->http);
    osb_info("listening on http://%s:%d (%s); sandbox runtime: %s; state kept in %s",
             cfg->server.host, srv->port,
             srv->api_key ? "clients must send the API key" : "NO API key required: insecure",
             osb_rt_describe(srv->rt), cfg->native.state_dir);
    return 0;
}

static void stop(struct osb_server *srv)
{
    osb_otlp_close(srv);
    if (srv->metrics_http)
        osb_http_server_close(srv->metrics_http);
    if (srv->http)
        osb_http_server_close(srv->http);
    osb_admit_close(srv);
    osb_pools_close(srv);
    osb_lc_close(srv);
    osb_backends_close(srv);
    osb_network_close(srv);
    osb_srvvault_close(srv);
    if (srv->cfg)
        osb_vol_close(srv);
    uv_run(srv->loop, UV_RUN_NOWAIT);
    osb_api_release(srv);
    osb_snaps_close(srv);
    osb_audit_close(srv->audit);
    osb_signer_free(srv->signer);
    free(srv->audit_path);
    osb_istore_close(srv->images);
    osb_idem_close(srv);
    osb_store_close(srv->store);
    osb_reg_free(srv->reg);
}

/* Each live sandbox holds a descriptor or two here (its log pipe, its
 * watch): thousands of them need the whole hard limit, not the soft
 * default (often 1024). Never above the hard limit: that is the admin's. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        osb_warn("raise the open files limit to %llu: %s", (unsigned long long)rl.rlim_max,
                 strerror(errno));
}

static int serve(const char *config)
{
    struct osb_config cfg = {0};
    struct osb_err err = {0};
    if (osb_config_load(config, &cfg, &err) < 0)
        return fail("config", &err);
    set_log_level(cfg.server.log_level);
    osb_log_set_json(strcmp(cfg.log.format, "json") == 0);
    if (cfg.log.file && osb_log_open(cfg.log.file) < 0) {
        fprintf(stderr, "opensandbox-server: [log] file %s: %s\n", cfg.log.file, strerror(errno));
        osb_config_free(&cfg);
        return 1;
    }
    raise_nofile();
    if (!api_key_policy(&cfg)) {
        osb_config_free(&cfg);
        return 1;
    }
    struct osb_server server = {0};
    struct osb_server *srv = &server;
    srv->loop = uv_default_loop();
    srv->cfg = &cfg;
    srv->api_key = cfg.server.api_key && *cfg.server.api_key ? cfg.server.api_key : NULL;
    srv->limits.min_timeout_s = cfg.server.min_sandbox_timeout_seconds;
    srv->limits.max_timeout_s = cfg.server.max_sandbox_timeout_seconds;
    srv->ready_timeout_ms = READY_TIMEOUT_MS;
    srv->metrics = osb_metrics_new();
    uv_signal_t sigterm, sigint, sighup;
    uv_signal_init(srv->loop, &sighup);
    sighup.data = srv;
    uv_signal_start(&sighup, on_hup, SIGHUP);
    uv_signal_init(srv->loop, &sigterm);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_init(srv->loop, &sigint);
    uv_signal_start(&sigint, on_signal, SIGINT);
    int rc = start(srv);
    if (rc == 0)
        uv_run(srv->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sigint, NULL);
    uv_close((uv_handle_t *)&sighup, NULL);
    stop(srv);
    osb_metrics_free(srv->metrics);
    osb_config_free(&cfg);
    return rc;
}

int main(int argc, char **argv)
{
    osb_log_init("opensandbox-server");
    signal(SIGPIPE, SIG_IGN);
    static const struct option lo[] = {{"config", required_argument, NULL, 'c'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
    const char *config = NULL;
    int ch;
    while ((ch = getopt_long(argc, argv, "+c:h", lo, NULL)) != -1) {
        if (ch == 'c') {
            config = optarg;
            continue;
        }
        if (ch == 'V') {
            printf("opensandbox-server %s\n", osb_version());
            return 0;
        }
        usage(ch == 'h' ? stdout : stderr);
        return ch == 'h' ? 0 : 2;
    }
    if (optind < argc && strcmp(argv[optind], "init-config") == 0)
        return cmd_init_config(argc - optind, argv + optind);
    if (optind < argc && strcmp(argv[optind], "image") == 0)
        return cmd_image(config, argc - optind, argv + optind);
    if (optind < argc && strcmp(argv[optind], "audit") == 0)
        return cmd_audit(argc - optind, argv + optind);
    if (optind < argc) {
        fprintf(stderr, "opensandbox-server: unknown command `%s`\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return serve(config);
}
