/* osb: parse the global options, pick the command group, run it, and turn
 * the outcome into the documented exit code. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/version.h"

static const char help_text[] =
    "osb - OpenSandbox from the command line\n"
    "\n"
    "usage: osb [global options] GROUP COMMAND [options] [args]\n"
    "\n"
    "groups:\n"
    "  sandbox     create, list, get, kill, pause, resume, renew, endpoint, health, metrics\n"
    "  command     run, status, logs, interrupt, session create|run|delete\n"
    "  exec        exec ID [--] CMD...: command run, shorter\n"
    "  shell       shell ID: an interactive terminal in the sandbox\n"
    "  code        run ID --language L [CODE | -f FILE]: code in a persistent context\n"
    "  file        cat, write, upload, download, rm, mv, mkdir, rmdir, search, info, chmod,\n"
    "              replace\n"
    "  snapshot    create, list, get, rm\n"
    "  pool        create, list, get, resize, rm\n"
    "  batch       N sandboxes from one template\n"
    "  image       pull, list, rm (the server's image store)\n"
    "  egress      get, patch\n"
    "  desktop     screenshot, move, click, double-click, drag, scroll, type, key, cursor,\n"
    "              windows, focus, open (a sandbox's desktop)\n"
    "  credential-vault  create, get, patch, delete, credential, binding (alias: vault)\n"
    "  diagnostics logs, events\n"
    "  config      init, show, set\n"
    "  completion  bash | zsh\n"
    "\n"
    "global options (also accepted after the command):\n"
    "  --api-key KEY           (env OPEN_SANDBOX_API_KEY)\n"
    "  --domain HOST:PORT      (env OPEN_SANDBOX_DOMAIN; default localhost:8080)\n"
    "  --protocol http|https   (env OPEN_SANDBOX_PROTOCOL)\n"
    "  --request-timeout DUR   per request (default 30s)\n"
    "  --use-server-proxy / --no-use-server-proxy\n"
    "  --config FILE           (default ~/.opensandbox/config.toml)\n"
    "  -o, --output FMT        table, json, yaml or raw\n"
    "  -v, --verbose           the resolved connection on stderr\n"
    "  --no-color              (also NO_COLOR, and whenever stdout is not a terminal)\n"
    "  --version   -h, --help\n"
    "\n"
    "exit codes:\n"
    "  0    success; command run, exec, session run and shell: the remote command's code\n"
    "  1    the server refused or failed (the message names its code and HTTP status)\n"
    "  2    bad usage, or a local file that cannot be read or written\n"
    "  3    cannot connect to the server, or a request timed out\n"
    "  130  interrupted (Ctrl-C)\n"
    "\n"
    "`osb GROUP --help` lists a group's commands; `man osb` (docs/osb.1) has it all.\n";

static const struct {
    const char *name;
    int (*fn)(struct cli *, int, char **);
    bool whole; /* takes its own argv (no subcommand) */
} groups[] = {
    {"sandbox", cli_cmd_sandbox, false},   {"command", cli_cmd_command, false},
    {"exec", cli_cmd_exec, true},          {"shell", cli_cmd_shell, true},
    {"code", cli_cmd_code, false},         {"file", cli_cmd_file, false},
    {"snapshot", cli_cmd_snapshot, false}, {"pool", cli_cmd_pool, false},
    {"batch", cli_cmd_batch, true},        {"image", cli_cmd_image, false},
    {"egress", cli_cmd_egress, false},     {"credential-vault", cli_cmd_vault, false},
    {"vault", cli_cmd_vault, false},       {"diagnostics", cli_cmd_diagnostics, false},
    {"config", cli_cmd_config, false},     {"completion", cli_cmd_completion, true},
    {"desktop", cli_cmd_desktop, false},
};

int main(int argc, char **argv)
{
    struct cli cli = {.proxy_flag = -1};
    signal(SIGPIPE, SIG_IGN);
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--version")) {
            printf("osb %s\n", osb_version());
            return CLI_OK;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help_text, stdout);
            return CLI_OK;
        }
        if (argv[i][0] != '-')
            break;
        int g = cli_global_opt(&cli, argc, argv, &i);
        if (g < 0)
            return CLI_EUSAGE;
        if (!g)
            return cli_usage("unknown option %s (see osb --help)", argv[i]);
    }
    if (i >= argc) {
        fputs(help_text, stderr);
        return CLI_EUSAGE;
    }
    int rc = -1;
    for (size_t k = 0; k < sizeof groups / sizeof *groups; k++)
        if (!strcmp(groups[k].name, argv[i]))
            rc = groups[k].fn(&cli, argc - i - 1, argv + i + 1);
    if (rc < 0)
        rc = cli_usage("unknown command \"%s\" (see osb --help)", argv[i]);
    osbc_client_free(cli.c);
    json_decref(cli.file);
    return rc;
}
