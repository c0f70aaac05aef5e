/* osb image pull|list|rm: the server's image store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const struct cli_col cols[] = {
    {"NAME", "name"},         {"DIGEST", "digest"}, {"SIZE", "size"},
    {"CREATED", "createdAt"}, {NULL, NULL},
};

static int image_pull(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"username", 'u', OPT_VALUE}, {"password-stdin", 0, OPT_FLAG}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb image pull REF [-u USER --password-stdin]");
    const char *user = cli_val(&a, opts, "username");
    if (!rc && !user != !cli_flag(&a, opts, "password-stdin"))
        rc = cli_usage("image pull: --username and --password-stdin go together");
    char *pw = NULL;
    if (!rc && user && !(pw = cli_read_file("-", NULL)))
        rc = CLI_EUSAGE;
    if (pw) /* one line, as docker login --password-stdin */
        pw[strcspn(pw, "\r\n")] = 0;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *json;
    struct osbc_error err;
    if (c && isatty(2))
        fprintf(stderr, "Pulling %s...\n", a.pos[0]);
    if (c && osbc_image_pull(c, a.pos[0], user, pw, &json, &err) < 0)
        rc = cli_fail("image pull", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    free(pw);
    cli_args_free(&a);
    return rc;
}

static int image_list(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos)
        rc = cli_usage("usage: osb image list");
    osbc_client *c = rc ? NULL : cli_client(cli);
    char *json;
    struct osbc_error err;
    if (!rc && !c)
        rc = CLI_EUSAGE;
    else if (c && osbc_image_list(c, &json, &err) < 0)
        rc = cli_fail("image list", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "items", cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int image_rm(struct cli *cli, int argc, char **argv)
{
    static const struct cli_each e = {"image rm NAME...", "image rm", "name", "removed",
                                      osbc_image_delete};
    return cli_each(cli, argc, argv, &e);
}

int cli_cmd_image(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"pull", image_pull, "pull REF [-u USER --password-stdin]"},
        {"list", image_list, "list"},
        {"rm", image_rm, "rm NAME..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "image", subs, argc, argv);
}
