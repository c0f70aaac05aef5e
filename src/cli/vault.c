/* osb credential-vault ... (alias: vault): a sandbox's credential vault
 * (docs/credential-vault.md), with upstream's subcommands. Bodies come from
 * a file or stdin, never from the command line, where every user of the
 * host could read them in ps. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int vault_get(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && (a.n_pos < 1 || a.n_pos > 3 ||
                (a.n_pos > 1 && strcmp(a.pos[1], "credentials") && strcmp(a.pos[1], "bindings"))))
        rc = cli_usage("usage: osb credential-vault get ID [credentials|bindings [NAME]]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    char what[600] = "", *json;
    struct osbc_error err;
    if (a.n_pos > 1)
        snprintf(what, sizeof what, "%s%s%s", a.pos[1], a.n_pos > 2 ? "/" : "",
                 a.n_pos > 2 ? a.pos[2] : "");
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_vault_get(c, a.pos[0], what, &json, &err) < 0)
        rc = cli_fail("credential-vault get", &err);
    else if (c)
        rc = cli_print(cli, json, "json", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

/* create and patch: --file F ("-": stdin) holds the request body. */
static int vault_write(struct cli *cli, int argc, char **argv, bool patch)
{
    static const struct cli_opt opts[] = {{"file", 'f', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    const char *file = rc ? NULL : cli_val(&a, opts, "file");
    if (!rc && (a.n_pos != 1 || !file))
        rc = cli_usage(patch ? "usage: osb credential-vault patch ID --file BODY.json (- for stdin)"
                             : "usage: osb credential-vault create ID --file BODY.json (- for "
                               "stdin)");
    size_t len = 0;
    char *body = rc ? NULL : cli_read_file(file, &len);
    if (!rc && !body)
        rc = CLI_EUSAGE;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        char *json;
        struct osbc_error err;
        int r = patch ? osbc_vault_patch(c, a.pos[0], body, &json, &err)
                      : osbc_vault_create(c, a.pos[0], body, &json, &err);
        if (r < 0)
            rc = cli_fail(patch ? "credential-vault patch" : "credential-vault create", &err);
        else
            rc = cli_print(cli, json, "json", "", NULL), osbc_free(json);
    }
    if (body) {
        explicit_bzero(body, len);
        free(body);
    }
    cli_args_free(&a);
    return rc;
}

static int vault_create(struct cli *cli, int argc, char **argv)
{
    return vault_write(cli, argc, argv, false);
}

static int vault_patch(struct cli *cli, int argc, char **argv)
{
    return vault_write(cli, argc, argv, true);
}

/* credential|binding list ID, credential|binding get ID NAME. */
static int vault_part(struct cli *cli, int argc, char **argv, const char *kind)
{
    const char *op = argc ? argv[0] : "";
    bool list = !strcmp(op, "list"), get = !strcmp(op, "get");
    if ((!list && !get) || (list && argc != 2) || (get && argc != 3))
        return cli_usage("usage: osb credential-vault %s list ID | %s get ID NAME", kind, kind);
    char *sub[] = {argv[1], kind[0] == 'c' ? "credentials" : "bindings", get ? argv[2] : NULL};
    return vault_get(cli, get ? 3 : 2, sub);
}

static int vault_credential(struct cli *cli, int argc, char **argv)
{
    return vault_part(cli, argc, argv, "credential");
}

static int vault_binding(struct cli *cli, int argc, char **argv)
{
    return vault_part(cli, argc, argv, "binding");
}

static int vault_delete(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb credential-vault delete ID");
    osbc_client *c = rc ? NULL : cli_client(cli);
    struct osbc_error err;
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_vault_delete(c, a.pos[0], &err) < 0)
        rc = cli_fail("credential-vault delete", &err);
    cli_args_free(&a);
    return rc;
}

int cli_cmd_vault(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"get", vault_get, "get ID [credentials|bindings [NAME]]"},
        {"create", vault_create, "create ID --file BODY.json"},
        {"patch", vault_patch, "patch ID --file BODY.json"},
        {"delete", vault_delete, "delete ID"},
        {"credential", vault_credential, "credential list ID | credential get ID NAME"},
        {"binding", vault_binding, "binding list ID | binding get ID NAME"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "credential-vault", subs, argc, argv);
}
