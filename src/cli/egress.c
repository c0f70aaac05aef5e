/* osb egress ...: a sandbox's outbound policy. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>

#include "cli/cli.h"

static int egress_get(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb egress get ID");
    osbc_client *c = rc ? NULL : cli_client(cli);
    char *json;
    struct osbc_error err;
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_egress_get(c, a.pos[0], &json, &err) < 0)
        rc = cli_fail("egress get", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

/* --rule ACTION=TARGET, as upstream: allow=pypi.org, deny=10.0.0.0/8. */
static json_t *rules_of(const char **v, size_t n)
{
    json_t *rules = json_array();
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(v[i], '=');
        size_t al = eq ? (size_t)(eq - v[i]) : 0;
        bool allow = al == 5 && !strncasecmp(v[i], "allow", 5);
        bool deny = al == 4 && !strncasecmp(v[i], "deny", 4);
        if ((!allow && !deny) || !eq[1]) {
            cli_usage("--rule %s: want ACTION=TARGET with ACTION allow or deny", v[i]);
            json_decref(rules);
            return NULL;
        }
        json_array_append_new(
            rules, json_pack("{s:s,s:s}", "action", allow ? "allow" : "deny", "target", eq + 1));
    }
    return rules;
}

static int egress_patch(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"rule", 0, OPT_MULTI}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    const char **v;
    size_t n = cli_vals(&a, opts, "rule", &v);
    if (!rc && (a.n_pos != 1 || !n))
        rc = cli_usage("usage: osb egress patch ID --rule ACTION=TARGET...");
    json_t *rules = rc ? NULL : rules_of(v, n);
    if (!rc && !rules)
        rc = CLI_EUSAGE;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        char *text = json_dumps(rules, JSON_COMPACT), *json;
        struct osbc_error err;
        if (osbc_egress_patch(c, a.pos[0], text, &json, &err) < 0) {
            rc = cli_fail("egress patch", &err);
        } else {
            json_t *d = json_pack("{s:s,s:O}", "sandbox_id", a.pos[0], "patched_rules", rules);
            rc = cli_print_json(cli, d, "table", "", NULL);
            json_decref(d);
            osbc_free(json);
        }
        free(text);
    }
    json_decref(rules);
    cli_args_free(&a);
    return rc;
}

int cli_cmd_egress(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"get", egress_get, "get ID"},
        {"patch", egress_patch, "patch ID --rule allow=TARGET|deny=TARGET..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "egress", subs, argc, argv);
}
