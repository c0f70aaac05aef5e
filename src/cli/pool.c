/* osb pool ...: warm pools of started sandboxes (docs/pools.md); a claim is
 * osb sandbox create --pool NAME, many at once osb batch --pool NAME. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_col cols[] = {
    {"NAME", "name"},
    {"IMAGE", "template.image.uri"},
    {"BUFFER_MIN", "capacitySpec.bufferMin"},
    {"BUFFER_MAX", "capacitySpec.bufferMax"},
    {"POOL_MIN", "capacitySpec.poolMin"},
    {"POOL_MAX", "capacitySpec.poolMax"},
    {"AVAILABLE", "status.available"},
    {"ALLOCATED", "status.allocated"},
    {NULL, NULL},
};

static const struct cli_opt cap_opts[] = {
    {"buffer-min", 0, OPT_VALUE}, {"buffer-max", 0, OPT_VALUE}, {"pool-min", 0, OPT_VALUE},
    {"pool-max", 0, OPT_VALUE},   {"image", 'i', OPT_VALUE},    {"template-file", 0, OPT_VALUE},
    {"env", 'e', OPT_MULTI},      {"resource", 0, OPT_MULTI},   {NULL, 0, 0},
};

/* capacitySpec from the four options; NULL after printing why. For resize,
 * missing values come from the pool's current spec (cur). */
static json_t *capacity(const struct cli_args *a, json_t *cur)
{
    static const char *const opt[] = {"buffer-min", "buffer-max", "pool-min", "pool-max"};
    static const char *const key[] = {"bufferMin", "bufferMax", "poolMin", "poolMax"};
    json_t *cs = json_object();
    for (int i = 0; i < 4; i++) {
        const char *v = cli_val(a, cap_opts, opt[i]);
        char *end = NULL;
        long n = v ? strtol(v, &end, 10) : -1;
        if (v && (*end || n < 0)) {
            cli_usage("--%s %s: want a number >= 0", opt[i], v);
            json_decref(cs);
            return NULL;
        }
        json_t *old = json_object_get(cur, key[i]);
        if (!v && json_is_integer(old))
            n = (long)json_integer_value(old);
        if (n < 0) {
            cli_usage("--%s is required", opt[i]);
            json_decref(cs);
            return NULL;
        }
        json_object_set_new(cs, key[i], json_integer(n));
    }
    return cs;
}

static int pool_create(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, cap_opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb pool create NAME (-i IMAGE | --template-file F) "
                       "--buffer-min N --buffer-max N --pool-min N --pool-max N");
    json_t *cs = rc ? NULL : capacity(&a, NULL), *tpl = NULL;
    if (!rc && !cs)
        rc = CLI_EUSAGE;
    const char *tf = cli_val(&a, cap_opts, "template-file");
    const char *img = cli_val(&a, cap_opts, "image");
    if (!rc && !tf == !img)
        rc = cli_usage("pool create: one of --image and --template-file");
    if (!rc && tf) {
        char *text = cli_read_file(tf, NULL);
        json_error_t je;
        tpl = text ? json_loads(text, 0, &je) : NULL;
        if (text && !json_is_object(tpl))
            rc = cli_usage("%s: want a JSON object (a create request or a PodTemplateSpec)", tf);
        else if (!text)
            rc = CLI_EUSAGE;
        free(text);
    } else if (!rc) {
        tpl = json_pack("{s:{s:s}}", "image", "uri", img);
        const char **v;
        size_t n = cli_vals(&a, cap_opts, "env", &v);
        struct osbc_kv *kv = n ? cli_kvs(v, n, "--env") : NULL;
        json_t *env = json_object();
        for (size_t i = 0; kv && i < n; i++)
            json_object_set_new(env, kv[i].key, json_string(kv[i].value));
        json_object_set_new(tpl, "env", env);
        if (n && !kv)
            rc = CLI_EUSAGE;
        free(kv);
        n = cli_vals(&a, cap_opts, "resource", &v);
        kv = n ? cli_kvs(v, n, "--resource") : NULL;
        if (n && !kv)
            rc = CLI_EUSAGE;
        json_t *res = json_object();
        for (size_t i = 0; kv && i < n; i++)
            json_object_set_new(res, kv[i].key, json_string(kv[i].value));
        if (n)
            json_object_set_new(tpl, "resourceLimits", res);
        else
            json_decref(res);
        free(kv);
    }
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        json_t *b =
            json_pack("{s:s,s:O,s:O}", "name", a.pos[0], "template", tpl, "capacitySpec", cs);
        char *text = json_dumps(b, JSON_COMPACT), *json;
        struct osbc_error err;
        if (osbc_pool_create(c, text, &json, &err) < 0)
            rc = cli_fail("pool create", &err);
        else
            rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
        free(text);
        json_decref(b);
    }
    json_decref(cs);
    json_decref(tpl);
    cli_args_free(&a);
    return rc;
}

static int pool_list(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos)
        rc = cli_usage("usage: osb pool list");
    osbc_client *c = rc ? NULL : cli_client(cli);
    char *json;
    struct osbc_error err;
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_pool_list(c, &json, &err) < 0)
        rc = cli_fail("pool list", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "items", cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int pool_get(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb pool get NAME");
    osbc_client *c = rc ? NULL : cli_client(cli);
    char *json;
    struct osbc_error err;
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_pool_get(c, a.pos[0], &json, &err) < 0)
        rc = cli_fail("pool get", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int pool_resize(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, cap_opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb pool resize NAME [--buffer-min N] [--buffer-max N] "
                       "[--pool-min N] [--pool-max N]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *cur = NULL, *json;
    struct osbc_error err;
    if (c && osbc_pool_get(c, a.pos[0], &cur, &err) < 0)
        rc = cli_fail("pool resize", &err), c = NULL;
    json_t *doc = cur ? json_loads(cur, 0, NULL) : NULL;
    json_t *cs = c ? capacity(&a, json_object_get(doc, "capacitySpec")) : NULL;
    if (c && !cs)
        rc = CLI_EUSAGE, c = NULL;
    if (c) {
        json_t *b = json_pack("{s:O}", "capacitySpec", cs);
        char *text = json_dumps(b, JSON_COMPACT);
        if (osbc_pool_update(c, a.pos[0], text, &json, &err) < 0)
            rc = cli_fail("pool resize", &err);
        else
            rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
        free(text);
        json_decref(b);
    }
    json_decref(cs);
    json_decref(doc);
    osbc_free(cur);
    cli_args_free(&a);
    return rc;
}

static int pool_rm(struct cli *cli, int argc, char **argv)
{
    static const struct cli_each e = {"pool rm NAME...", "pool rm", "name", "deleted",
                                      osbc_pool_delete};
    return cli_each(cli, argc, argv, &e);
}

int cli_cmd_pool(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"create", pool_create,
         "create NAME (-i IMAGE [-e K=V]... [--resource K=V]... | --template-file F) "
         "--buffer-min N --buffer-max N --pool-min N --pool-max N"},
        {"list", pool_list, "list"},
        {"get", pool_get, "get NAME"},
        {"resize", pool_resize,
         "resize NAME [--buffer-min N] [--buffer-max N] [--pool-min N] "
         "[--pool-max N]"},
        {"rm", pool_rm, "rm NAME..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "pool", subs, argc, argv);
}
