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

static int snap_create(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"name", 'n', OPT_VALUE}, {"wait", 0, OPT_FLAG}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, opts, &a, 1, 1, "snapshot create ID [--name N] [--wait]", &rc);
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
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 0, 0,
                               "snapshot list [--sandbox ID] [--page N] [--page-size N]", &rc);
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
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 1, 1, "snapshot get SNAPSHOT_ID", &rc);
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
    static const struct cli_each e = {"snapshot rm SNAPSHOT_ID...", "snapshot rm", "snapshot_id",
                                      "deleted", osbc_snapshot_delete};
    return cli_each(cli, argc, argv, &e);
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
