/* What every command group uses to report: the one-line error with the
 * server's code and its exit code, and the subcommand dispatch with help.
 * Nothing here calls a group, so groups and main.c can both use it. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cli_fail(const char *what, const struct osbc_error *err)
{
    fprintf(stderr, "osb: %s: %s", what, err->message);
    if (err->server_code[0] || err->http_status) {
        fputs(" (", stderr);
        if (err->server_code[0])
            fprintf(stderr, "%s, ", err->server_code);
        fprintf(stderr, "HTTP %d)", err->http_status);
    }
    fputs("\n", stderr);
    switch (err->code) {
    case OSBC_E_CONNECT:
    case OSBC_E_TIMEOUT:
    case OSBC_E_TLS: return CLI_ECONNECT;
    case OSBC_E_ARG:
    case OSBC_E_IO: return CLI_EUSAGE;
    case OSBC_E_CANCELLED: return CLI_EINTR;
    default: return CLI_EAPI;
    }
}

int cli_dispatch(struct cli *cli, const char *group, const struct cli_sub *subs, int argc,
                 char **argv)
{
    const char *name = argc ? argv[0] : NULL;
    bool help = !name || !strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help");
    for (size_t i = 0; !help && subs[i].name; i++)
        if (!strcmp(subs[i].name, name)) {
            for (int k = 1; k < argc; k++)
                if (!strcmp(argv[k], "--"))
                    break;
                else if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                    printf("usage: osb %s %s\n", group, subs[i].usage);
                    return CLI_OK;
                }
            return subs[i].fn(cli, argc - 1, argv + 1);
        }
    FILE *out = help ? stdout : stderr;
    if (!help)
        fprintf(stderr, "osb: unknown command \"%s %s\"\n", group, name);
    fprintf(out, "usage: osb %s COMMAND ...\n\ncommands:\n", group);
    for (size_t i = 0; subs[i].name; i++)
        fprintf(out, "  %s\n", subs[i].usage);
    return help ? CLI_OK : CLI_EUSAGE;
}
