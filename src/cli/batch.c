/* osb batch: N sandboxes from one template in one request (docs/server.md
 * "Batch create"): the template from the options (as sandbox create takes
 * them), from a file, or a pool to claim from. The answer lists each item in
 * request order; osb exits 1 when any of them failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/xalloc.h"

static const struct cli_opt opts[] = {
    {"count", 'n', OPT_VALUE},    {"image", 'i', OPT_VALUE},
    {"pool", 0, OPT_VALUE},       {"template-file", 0, OPT_VALUE},
    {"timeout", 't', OPT_VALUE},  {"env", 'e', OPT_MULTI},
    {"metadata", 'm', OPT_MULTI}, {"resource", 0, OPT_MULTI},
    {"entrypoint", 0, OPT_MULTI}, {NULL, 0, 0},
};

static const char usage[] = "usage: osb batch -n N (-i IMAGE [-t DUR|none] [-e K=V]... [-m K=V]... "
                            "[--resource K=V]... [--entrypoint ARG]... | --pool NAME | "
                            "--template-file F)";

/* KEY=VALUE options as an object set on tpl[field]; false after printing why. */
static bool kv_object(const struct cli_args *a, const char *opt, json_t *tpl, const char *field)
{
    const char **v;
    size_t n = cli_vals(a, opts, opt, &v);
    if (!n)
        return true;
    char *what = osb_xasprintf("--%s", opt);
    struct osbc_kv *kv = cli_kvs(v, n, what);
    free(what);
    if (!kv)
        return false;
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, kv[i].key, json_string(kv[i].value));
    free(kv);
    json_object_set_new(tpl, field, o);
    return true;
}

/* The create request of -i IMAGE and the options beside it; NULL after printing why. */
static json_t *template_of(struct cli *cli, const struct cli_args *a, const char *img)
{
    const char *t = cli_val(a, opts, "timeout");
    if (!t)
        t = cli->def_timeout;
    long s = t ? cli_duration(t, true, "--timeout") : 0;
    if (s == -2)
        return NULL;
    const char **ep;
    size_t nep = cli_vals(a, opts, "entrypoint", &ep);
    json_t *tpl = json_pack("{s:{s:s},s:{s:s,s:s}}", "image", "uri", img, "resourceLimits", "cpu",
                            "1", "memory", "2Gi");
    json_t *argv = json_array();
    for (size_t i = 0; i < nep; i++)
        json_array_append_new(argv, json_string(ep[i]));
    static const char *const keep_alive[] = {"tail", "-f", "/dev/null"}; /* the SDKs' default */
    for (size_t i = 0; !nep && i < 3; i++)
        json_array_append_new(argv, json_string(keep_alive[i]));
    json_object_set_new(tpl, "entrypoint", argv);
    if (s >= 0) /* none: no timeout field, no expiry (as the library sends it) */
        json_object_set_new(tpl, "timeout", json_integer(s ? s : 600));
    if (!kv_object(a, "env", tpl, "env") || !kv_object(a, "metadata", tpl, "metadata") ||
        !kv_object(a, "resource", tpl, "resourceLimits")) {
        json_decref(tpl);
        return NULL;
    }
    return tpl;
}

/* The request body; NULL after printing why. */
static json_t *body_of(struct cli *cli, const struct cli_args *a, long count)
{
    const char *img = cli_val(a, opts, "image"), *pool = cli_val(a, opts, "pool");
    const char *tf = cli_val(a, opts, "template-file");
    json_t *b = json_pack("{s:I}", "count", (json_int_t)count), *tpl = NULL;
    if (pool) {
        json_object_set_new(b, "poolRef", json_string(pool));
        return b;
    }
    if (tf) {
        char *text = cli_read_file(tf, NULL);
        tpl = text ? json_loads(text, 0, NULL) : NULL;
        if (text && !json_is_object(tpl))
            cli_usage("%s: want a JSON object (a sandbox create request)", tf);
        free(text);
        if (!json_is_object(tpl))
            json_decref(tpl), tpl = NULL;
    } else {
        tpl = template_of(cli, a, img);
    }
    if (!tpl) {
        json_decref(b);
        return NULL;
    }
    json_object_set_new(b, "template", tpl);
    return b;
}

int cli_cmd_batch(struct cli *cli, int argc, char **argv)
{
    if (argc && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return puts(usage), CLI_OK;
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc)
        rc = cli_config_resolve(cli);
    const char *img = cli_val(&a, opts, "image");
    if (!rc && !img && !cli_val(&a, opts, "pool") && !cli_val(&a, opts, "template-file"))
        img = cli->def_image;
    int sources = !!img + !!cli_val(&a, opts, "pool") + !!cli_val(&a, opts, "template-file");
    long count = 0;
    if (!rc && (a.n_pos || !cli_long(cli_val(&a, opts, "count"), 1, 1000, &count) || sources != 1))
        rc = cli_usage("%s; N: 1..1000", usage);
    json_t *b = rc ? NULL : body_of(cli, &a, count);
    if (!rc && !b)
        rc = CLI_EUSAGE;
    if (b && img && !cli_val(&a, opts, "image")) /* defaults.image */
        json_object_set_new(json_object_get(b, "template"), "image",
                            json_pack("{s:s}", "uri", img));
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        static const struct cli_col cols[] = {{"ID", "id"},
                                              {"STATE", "status.state"},
                                              {"ERROR", "error.code"},
                                              {"MESSAGE", "error.message"},
                                              {NULL, NULL}};
        char *text = json_dumps(b, JSON_COMPACT), *json;
        struct osbc_error err;
        if (osbc_batch_create(c, text, &json, &err) < 0) {
            rc = cli_fail("batch", &err);
        } else {
            json_t *d = json_loads(json, 0, NULL);
            rc = cli_print(cli, json, "table", "items", cols);
            json_int_t failed = json_integer_value(json_object_get(d, "failed"));
            if (failed > 0) {
                fprintf(stderr, "osb: batch: %lld of %lld failed\n", (long long)failed,
                        (long long)count);
                rc = CLI_EAPI;
            }
            json_decref(d);
            osbc_free(json);
        }
        free(text);
    }
    json_decref(b);
    cli_args_free(&a);
    return rc;
}
