/* osb sandbox ...: the lifecycle of sandboxes. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/xalloc.h"

static const struct cli_col sandbox_cols[] = {
    {"ID", "id"},
    {"STATE", "status.state"},
    {"IMAGE", "image.uri"},
    {"CREATED", "createdAt"},
    {"EXPIRES", "expiresAt"},
    {"METADATA", "metadata"},
    {NULL, NULL},
};


static const struct cli_opt create_opts[] = {
    {"image", 'i', OPT_VALUE},
    {"image-auth-username", 0, OPT_VALUE},
    {"image-auth-password", 0, OPT_VALUE},
    {"timeout", 't', OPT_VALUE},
    {"env", 'e', OPT_MULTI},
    {"metadata", 'm', OPT_MULTI},
    {"extension", 0, OPT_MULTI},
    {"resource", 0, OPT_MULTI},
    {"entrypoint", 0, OPT_MULTI},
    {"network-policy-file", 0, OPT_VALUE},
    {"credential-proxy", 0, OPT_FLAG},
    {"volumes-file", 0, OPT_VALUE},
    {"skip-health-check", 0, OPT_FLAG},
    {"ready-timeout", 0, OPT_VALUE},
    {"from-snapshot", 0, OPT_VALUE},
    {"pool", 0, OPT_VALUE},
    {"idempotency-key", 0, OPT_VALUE},
    {NULL, 0, 0},
};

/* KEY=VALUE options into o's kv arrays; CLI_EUSAGE after printing why. */
static int create_kvs(const struct cli_args *a, struct osbc_create_opts *o)
{
    const char **v;
    size_t n;
    struct {
        const char *opt;
        const struct osbc_kv **kv;
        size_t *n;
    } m[] = {
        {"env", &o->env, &o->n_env},
        {"metadata", &o->metadata, &o->n_metadata},
        {"extension", &o->extensions, &o->n_extensions},
        {"resource", &o->resources, &o->n_resources},
    };
    for (size_t i = 0; i < 4; i++) {
        if (!(n = cli_vals(a, create_opts, m[i].opt, &v)))
            continue;
        char *what = osb_xasprintf("--%s", m[i].opt);
        struct osbc_kv *kv = cli_kvs(v, n, what);
        free(what);
        if (!kv)
            return CLI_EUSAGE;
        *m[i].kv = kv;
        *m[i].n = n;
    }
    return 0;
}

static int create_fill(struct cli *cli, const struct cli_args *a, struct osbc_create_opts *o)
{
    const char *snap = cli_val(a, create_opts, "from-snapshot");
    const char *pool = cli_val(a, create_opts, "pool");
    o->image = cli_val(a, create_opts, "image");
    if (!o->image && !snap)
        o->image = cli->def_image;
    if (!o->image && !snap && !pool)
        return cli_usage("sandbox create: --image (or defaults.image in the config), "
                         "--from-snapshot or --pool");
    if (snap && cli_val(a, create_opts, "image"))
        return cli_usage("sandbox create: --image and --from-snapshot exclude each other");
    o->snapshot_id = snap;
    o->image_username = cli_val(a, create_opts, "image-auth-username");
    o->image_password = cli_val(a, create_opts, "image-auth-password");
    if (!o->image_username != !o->image_password)
        return cli_usage("pass both --image-auth-username and --image-auth-password");
    const char *t = cli_val(a, create_opts, "timeout");
    if (!t)
        t = cli->def_timeout;
    if (t) {
        long s = cli_duration(t, true, "--timeout");
        if (s == -2)
            return CLI_EUSAGE;
        o->timeout_s = s < 0 ? OSBC_TIMEOUT_NONE : s;
        if (s == 0)
            return cli_usage("--timeout 0: use none for no expiry");
    }
    const char *rt = cli_val(a, create_opts, "ready-timeout");
    if (rt) {
        long s = cli_duration(rt, false, "--ready-timeout");
        if (s < 0)
            return CLI_EUSAGE;
        o->ready_timeout_ms = s * 1000;
    }
    o->skip_health_check = cli_flag(a, create_opts, "skip-health-check");
    o->idempotency_key = cli_val(a, create_opts, "idempotency-key");
    o->n_entrypoint = cli_vals(a, create_opts, "entrypoint", (const char ***)&o->entrypoint);
    return create_kvs(a, o);
}

/* The image of a pool's template: a claim that names no image asks for
 * that one (the library wants an image; the server checks it matches). */
static char *pool_template_image(osbc_client *c, const char *pool, int *rc)
{
    char *json;
    struct osbc_error err;
    if (osbc_pool_get(c, pool, &json, &err) < 0) {
        *rc = cli_fail("sandbox create --pool", &err);
        return NULL;
    }
    json_t *d = json_loads(json, 0, NULL);
    const char *uri = json_string_value(
        json_object_get(json_object_get(json_object_get(d, "template"), "image"), "uri"));
    char *img = uri ? osb_xstrdup(uri) : NULL;
    if (!img) {
        fprintf(stderr, "osb: sandbox create --pool: pool %s has no template image\n", pool);
        *rc = CLI_EAPI;
    }
    json_decref(d);
    osbc_free(json);
    return img;
}

static int sandbox_create(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    struct osbc_create_opts o = {0};
    int rc = cli_parse(cli, argc, argv, create_opts, 0, &a);
    if (!rc && a.n_pos)
        rc = cli_usage("sandbox create takes no arguments (did you mean --image %s?)", a.pos[0]);
    if (!rc)
        rc = cli_config_resolve(cli);
    if (!rc)
        rc = create_fill(cli, &a, &o);
    char *np = NULL, *vol = NULL;
    const char *f;
    if (!rc && (f = cli_val(&a, create_opts, "network-policy-file")) &&
        !(o.network_policy_json = np = cli_read_file(f, NULL)))
        rc = CLI_EUSAGE;
    o.credential_proxy = cli_flag(&a, create_opts, "credential-proxy");
    if (!rc && o.credential_proxy && !o.network_policy_json)
        rc = cli_usage("--credential-proxy requires --network-policy-file (the vault's hosts must "
                       "be allowed by the egress policy)");
    if (!rc && (f = cli_val(&a, create_opts, "volumes-file")) &&
        !(o.volumes_json = vol = cli_read_file(f, NULL)))
        rc = CLI_EUSAGE;
    const char *pool = cli_val(&a, create_opts, "pool");
    struct osbc_kv *ext = NULL;
    char *pool_image = NULL;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    const struct osbc_kv *own_ext = o.extensions; /* from cli_kvs, freed below */
    if (!rc && pool) { /* a pool claim is extensions.poolRef (docs/pools.md) */
        ext = osb_xcalloc(o.n_extensions + 1, sizeof *ext);
        if (o.n_extensions)
            memcpy(ext, o.extensions, o.n_extensions * sizeof *ext);
        ext[o.n_extensions++] = (struct osbc_kv){"poolRef", pool};
        o.extensions = ext;
        if (!o.image && !(o.image = pool_image = pool_template_image(c, pool, &rc)))
            c = NULL;
    }
    if (!rc) {
        char *json;
        struct osbc_error err;
        if (osbc_sandbox_create(c, &o, &json, NULL, &err) < 0) {
            rc = cli_fail("sandbox create", &err);
        } else {
            rc = cli_print(cli, json, "table", "", NULL);
            osbc_free(json);
        }
    }
    free(np);
    free(vol);
    free(ext);
    free(pool_image);
    free((void *)own_ext);
    free((void *)o.env);
    free((void *)o.metadata);
    free((void *)o.resources);
    cli_args_free(&a);
    return rc;
}

static int sandbox_list(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"state", 's', OPT_MULTI},
                                          {"metadata", 'm', OPT_MULTI},
                                          {"page", 0, OPT_VALUE},
                                          {"page-size", 0, OPT_VALUE},
                                          {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    struct osbc_list_opts o = {0};
    const char **v;
    if (!rc && a.n_pos)
        rc = cli_usage("sandbox list takes no arguments");
    o.n_states = cli_vals(&a, opts, "state", (const char ***)&o.states);
    size_t nm = cli_vals(&a, opts, "metadata", &v);
    struct osbc_kv *kv = NULL;
    if (!rc && nm && !(kv = cli_kvs(v, nm, "--metadata")))
        rc = CLI_EUSAGE;
    o.metadata = kv;
    o.n_metadata = nm;
    const char *p = cli_val(&a, opts, "page"), *ps = cli_val(&a, opts, "page-size");
    long pg = 0, pgs = 0;
    if (!rc && ((p && !cli_long(p, 1, 1000000, &pg)) || (ps && !cli_long(ps, 1, 1000000, &pgs))))
        rc = cli_usage("--page and --page-size are numbers from 1");
    o.page = (int)pg;
    o.page_size = (int)pgs;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && c) {
        char *json;
        struct osbc_error err;
        if (osbc_sandbox_list(c, &o, &json, &err) < 0)
            rc = cli_fail("sandbox list", &err);
        else
            rc = cli_print(cli, json, "table", "items", sandbox_cols), osbc_free(json);
    } else if (!rc) {
        rc = CLI_EUSAGE;
    }
    free(kv);
    cli_args_free(&a);
    return rc;
}

static int sandbox_get(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "sandbox get ID", &rc);
    if (c) {
        char *json;
        struct osbc_error err;
        if (osbc_sandbox_get(c, a.pos[0], &json, &err) < 0)
            rc = cli_fail("sandbox get", &err);
        else
            rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    }
    cli_args_free(&a);
    return rc;
}

static int sandbox_kill(struct cli *cli, int argc, char **argv)
{
    static const struct cli_each e = {"sandbox kill ID...", "sandbox kill", "sandbox_id",
                                      "terminated", osbc_sandbox_delete};
    return cli_each(cli, argc, argv, &e);
}

static int sandbox_pause(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "sandbox pause ID", &rc);
    struct osbc_error err;
    if (c && osbc_sandbox_pause(c, a.pos[0], &err) < 0)
        rc = cli_fail("sandbox pause", &err);
    else if (c)
        cli_ok(cli, "Sandbox paused: %s", a.pos[0]);
    cli_args_free(&a);
    return rc;
}

static int sandbox_resume(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"skip-health-check", 0, OPT_FLAG}, {"resume-timeout", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 1, 1, "sandbox resume ID", &rc);
    long wait = 0;
    const char *t = cli_val(&a, opts, "resume-timeout");
    if (c && t && (wait = cli_duration(t, false, "--resume-timeout")) < 0)
        c = NULL, rc = CLI_EUSAGE;
    if (c && cli_flag(&a, opts, "skip-health-check"))
        wait = -1;
    else
        wait *= 1000;
    struct osbc_error err;
    if (c && osbc_sandbox_resume(c, a.pos[0], wait, &err) < 0)
        rc = cli_fail("sandbox resume", &err);
    else if (c)
        cli_ok(cli, "Sandbox resumed: %s", a.pos[0]);
    cli_args_free(&a);
    return rc;
}

static int sandbox_renew(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"timeout", 't', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, opts, &a, 1, 1, "sandbox renew ID --timeout DUR", &rc);
    const char *t = cli_val(&a, opts, "timeout");
    long s = 0;
    if (c && !t)
        c = NULL, rc = cli_usage("sandbox renew: --timeout DUR is required (e.g. 30m)");
    if (c && (s = cli_duration(t, false, "--timeout")) <= 0)
        c = NULL, rc = s == 0 ? cli_usage("--timeout must be positive") : CLI_EUSAGE;
    char *json;
    struct osbc_error err;
    if (c && osbc_sandbox_renew(c, a.pos[0], s, &json, &err) < 0)
        rc = cli_fail("sandbox renew", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int sandbox_endpoint(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"port", 'p', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, opts, &a, 1, 1, "sandbox endpoint ID --port N", &rc);
    const char *p = cli_val(&a, opts, "port");
    char *end = NULL;
    long port = p ? strtol(p, &end, 10) : 0;
    if (c && (!p || *end || port < 1 || port > 65535))
        c = NULL, rc = cli_usage("sandbox endpoint: --port 1..65535 is required");
    char *json;
    struct osbc_error err;
    if (c && osbc_sandbox_endpoint(c, a.pos[0], (int)port, -1, &json, &err) < 0)
        rc = cli_fail("sandbox endpoint", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int sandbox_health(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "sandbox health ID", &rc);
    if (c) {
        struct osbc_error err;
        bool ok = osbc_sandbox_ping(c, a.pos[0], &err) == 0;
        if (!ok && err.code != OSBC_E_HTTP)
            rc = cli_fail("sandbox health", &err);
        else if (!cli->output || !strcmp(cli->output, "table"))
            printf("Sandbox %s is %s\n", a.pos[0], ok ? "healthy" : "unhealthy");
        else {
            json_t *d = json_pack("{s:s,s:b}", "sandbox_id", a.pos[0], "healthy", ok);
            cli_print_json(cli, d, "table", "", NULL);
            json_decref(d);
        }
        if (!rc && !ok)
            rc = CLI_EAPI;
    }
    cli_args_free(&a);
    return rc;
}

static volatile sig_atomic_t stop_watch;
static void on_int(int sig) /* the second Ctrl-C leaves at once */
{
    (void)sig;
    if (stop_watch)
        _exit(CLI_OK);
    stop_watch = 1;
}

/* One sample a line: upstream's text form for table (the default), the
 * sample as compact JSON for json and raw, a YAML document for yaml. */
static int print_sample(void *ud, const char *json)
{
    struct cli *cli = ud;
    json_t *m = json_loads(json, 0, NULL);
    if (cli->output && !strcmp(cli->output, "yaml")) {
        fputs("---\n", stdout);
        cli_print_json(cli, m, "yaml", "", NULL);
    } else if (cli->output && strcmp(cli->output, "table")) { /* JSON lines */
        char *line = json_dumps(m, JSON_COMPACT);
        printf("%s\n", line ? line : json);
        free(line);
    } else {
        json_int_t ts = json_integer_value(json_object_get(m, "timestamp"));
        time_t secs = (time_t)(ts / 1000);
        struct tm tm;
        char when[40] = "";
        if (gmtime_r(&secs, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        printf("[%s.%03dZ] cpu=%.2f%% cores=%g mem=%.2f/%.2fMiB\n", when, (int)(ts % 1000),
               json_number_value(json_object_get(m, "cpu_used_pct")),
               json_number_value(json_object_get(m, "cpu_count")),
               json_number_value(json_object_get(m, "mem_used_mib")),
               json_number_value(json_object_get(m, "mem_total_mib")));
    }
    fflush(stdout);
    json_decref(m);
    return stop_watch;
}

static int sandbox_metrics(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"watch", 0, OPT_FLAG}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, opts, &a, 1, 1, "sandbox metrics ID [--watch]", &rc);
    struct osbc_error err;
    if (c && cli_flag(&a, opts, "watch")) {
        signal(SIGINT, on_int);
        int r = osbc_sandbox_metrics_watch(c, a.pos[0], print_sample, cli, &err);
        if (r < 0 && r != OSBC_E_CANCELLED)
            rc = cli_fail("sandbox metrics --watch", &err);
    } else if (c) {
        char *json;
        if (osbc_sandbox_metrics(c, a.pos[0], &json, &err) < 0)
            rc = cli_fail("sandbox metrics", &err);
        else
            rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    }
    cli_args_free(&a);
    return rc;
}

int cli_cmd_sandbox(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"create", sandbox_create,
         "create [-i IMAGE | --from-snapshot ID | --pool NAME] [-t DUR|none] [-e K=V]... "
         "[-m K=V]... [--resource K=V]... [--extension K=V]... [--entrypoint ARG]... "
         "[--network-policy-file F [--credential-proxy]] [--volumes-file F] [--image-auth-username U "
         "--image-auth-password P] [--skip-health-check] [--ready-timeout DUR] "
         "[--idempotency-key K]"},
        {"list", sandbox_list, "list [-s STATE]... [-m K=V]... [--page N] [--page-size N]"},
        {"get", sandbox_get, "get ID"},
        {"kill", sandbox_kill, "kill ID..."},
        {"pause", sandbox_pause, "pause ID"},
        {"resume", sandbox_resume, "resume ID [--skip-health-check] [--resume-timeout DUR]"},
        {"renew", sandbox_renew, "renew ID -t DUR"},
        {"endpoint", sandbox_endpoint, "endpoint ID -p PORT"},
        {"health", sandbox_health, "health ID"},
        {"metrics", sandbox_metrics, "metrics ID [--watch]"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "sandbox", subs, argc, argv);
}
