/* osb diagnostics logs|events: what the server knows of a sandbox. The
 * diagnostics API's document for -o json|yaml; else its text (or, for a
 * document delivered by URL, the URL), as upstream's default raw output. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static int diag(struct cli *cli, int argc, char **argv, const char *kind)
{
    static const struct cli_opt opts[] = {{"scope", 's', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb diagnostics %s ID [--scope SCOPE]", kind);
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *body;
    struct osbc_error err;
    const char *scope = cli_val(&a, opts, "scope");
    if (c && osbc_diagnostics(c, a.pos[0], kind, scope ? scope : "all", &body, &err) < 0) {
        rc = cli_fail(kind[0] == 'l' ? "diagnostics logs" : "diagnostics events", &err);
    } else if (c) {
        json_t *d = json_loads(body, 0, NULL);
        const char *content = json_string_value(json_object_get(d, "content"));
        const char *url = json_string_value(json_object_get(d, "contentUrl"));
        bool text = !cli->output || !strcmp(cli->output, "table") || !strcmp(cli->output, "raw");
        if (text && (content || url)) { /* upstream's raw: the text, or where it is */
            const char *t = content ? content : url;
            fputs(t, stdout);
            if (!*t || t[strlen(t) - 1] != '\n')
                fputs("\n", stdout);
        } else {
            rc = cli_print(cli, body, "table", "", NULL);
        }
        json_decref(d);
        osbc_free(body);
    }
    cli_args_free(&a);
    return rc;
}

static int diag_logs(struct cli *cli, int argc, char **argv)
{
    return diag(cli, argc, argv, "logs");
}

static int diag_events(struct cli *cli, int argc, char **argv)
{
    return diag(cli, argc, argv, "events");
}

int cli_cmd_diagnostics(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"logs", diag_logs, "logs ID [--scope container|lifecycle|runtime|network|process|all]"},
        {"events", diag_events, "events ID [--scope ...]"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "diagnostics", subs, argc, argv);
}
