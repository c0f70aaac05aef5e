/* osb snapshot ...: snapshots of sandboxes (create one from a snapshot with
 * osb sandbox create --from-snapshot ID). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static const struct cli_col cols[] = {
    {"ID", "id"},
    {"SANDBOX", "sandboxId"},
    {"NAME", "name"},
    {"STATE", "status.state"},
    {"CREATED", "createdAt"},
    {NULL, NULL},
};

static osbc_client *parse(struct cli *cli, int argc, char **argv, const struct cli_opt *opts,
                          struct cli_args *a, size_t n_pos, const char *usage, int *rc)
{
    *rc = cli_parse(cli, argc, argv, opts, 0, a);
    if (!*rc && a->n_pos != n_pos)
        *rc = cli_usage("usage: osb snapshot %s", usage);
    osbc_client *c = *rc ? NULL : cli_client(cli);
    if (!*rc && !c)
        *rc = CLI_EUSAGE;
    return c;
}

static int snap_create(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"name", 'n', OPT_VALUE}, {"wait", 0, OPT_FLAG}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = parse(cli, argc, argv, opts, &a, 1, "create ID [--name N] [--wait]", &rc);
    char *json = NULL, *sid = NULL;
    struct osbc_error err;
    if (c && osbc_snapshot_create(c, a.pos[0], cli_val(&a, opts, "name"), &json, &sid, &err) < 0)
        rc = cli_fail("snapshot create", &err), c = NULL;
    if (c && cli_flag(&a, opts, "wait")) {
        osbc_free(json);
        json = NULL;
        if (osbc_snapshot_wait_ready(c, sid, 0, &json, &err) < 0)
            rc = cli_fail("snapshot create --wait", &err), c = NULL;
    }
    if (c)
        rc = cli_print(cli, json, "table", "", NULL);
    osbc_free(json);
    osbc_free(sid);
    cli_args_free(&a);
    return rc;
}

static int snap_list(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"sandbox", 0, OPT_VALUE},
                                          {"page", 0, OPT_VALUE},
                                          {"page-size", 0, OPT_VALUE},
                                          {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        parse(cli, argc, argv, opts, &a, 0, "list [--sandbox ID] [--page N] [--page-size N]", &rc);
    const char *p = cli_val(&a, opts, "page"), *ps = cli_val(&a, opts, "page-size");
    long pg = 0, pgs = 0;
    if (c && ((p && !cli_long(p, 1, 1000000, &pg)) || (ps && !cli_long(ps, 1, 1000000, &pgs))))
        c = NULL, rc = cli_usage("--page and --page-size are numbers from 1");
    char *json;
    struct osbc_error err;
    if (c &&
        osbc_snapshot_list(c, cli_val(&a, opts, "sandbox"), (int)pg, (int)pgs, &json, &err) < 0)
        rc = cli_fail("snapshot list", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "items", cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int snap_get(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = parse(cli, argc, argv, NULL, &a, 1, "get SNAPSHOT_ID", &rc);
    char *json;
    struct osbc_error err;
    if (c && osbc_snapshot_get(c, a.pos[0], &json, &err) < 0)
        rc = cli_fail("snapshot get", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int snap_rm(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && !a.n_pos)
        rc = cli_usage("usage: osb snapshot rm SNAPSHOT_ID...");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    const char **done = calloc(a.n_pos + 1, sizeof *done);
    size_t n = 0;
    for (size_t i = 0; c && i < a.n_pos; i++) {
        struct osbc_error err;
        if (osbc_snapshot_delete(c, a.pos[i], &err) < 0) {
            int r = cli_fail("snapshot rm", &err);
            rc = rc ? rc : r;
        } else {
            done[n++] = a.pos[i];
        }
    }
    if (n)
        cli_status_rows(cli, "snapshot_id", done, n, "deleted");
    free(done);
    cli_args_free(&a);
    return rc;
}

int cli_cmd_snapshot(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"create", snap_create, "create ID [--name NAME] [--wait]"},
        {"list", snap_list, "list [--sandbox ID] [--page N] [--page-size N]"},
        {"get", snap_get, "get SNAPSHOT_ID"},
        {"rm", snap_rm, "rm SNAPSHOT_ID..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "snapshot", subs, argc, argv);
}
