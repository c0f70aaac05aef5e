/* opensandbox-mcp: options, then the stdio loop (newline-delimited
 * JSON-RPC; logs only on stderr) or the HTTP transport. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "mcp/mcp.h"

static const char usage[] =
    "usage: opensandbox-mcp [--transport stdio|http] [--listen HOST:PORT]\n"
    "                       [--api-key KEY] [--domain HOST:PORT] [--protocol http|https]\n"
    "                       [--request-timeout SECONDS] [--use-server-proxy]\n"
    "An MCP server whose tools create and drive OpenSandbox sandboxes.\n"
    "stdio (default): JSON-RPC messages, one per line, on stdin/stdout.\n"
    "http: streamable HTTP on http://HOST:PORT/mcp (default 127.0.0.1:8765).\n"
    "Environment: OPEN_SANDBOX_API_KEY, OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_PROTOCOL.\n";

static int stdio_loop(struct mcp *m)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (!n)
            continue;
        json_t *r = mcp_handle_text(m, line, (size_t)n);
        if (!r)
            continue;
        char *t = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        if (t) {
            fputs(t, stdout);
            fputc('\n', stdout);
            fflush(stdout);
        }
        free(t);
    }
    free(line);
    return 0;
}

static const char *arg(int argc, char **argv, int *i)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        fprintf(stderr, "opensandbox-mcp: %s needs a value\n%s", argv[*i], usage);
        exit(2);
    }
    return argv[++*i];
}

/* --request-timeout's value: whole seconds, 1..86400. */
static bool seconds(const char *v, struct osbc_config *cfg)
{
    char *end;
    errno = 0;
    long s = strtol(v, &end, 10);
    if (!*v || *end || errno || s < 1 || s > 86400)
        return false;
    cfg->request_timeout_ms = s * 1000;
    return true;
}

static bool is(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && (a[n] == 0 || a[n] == '=');
}

int main(int argc, char **argv)
{
    struct mcp m = {0};
    osbc_config_from_env(&m.cfg);
    const char *transport = "stdio", *listen_addr = "127.0.0.1:8765";
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--version"))
            return printf("opensandbox-mcp %s\n", osb_version()), 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return fputs(usage, stdout), 0;
        if (is(a, "--transport"))
            transport = arg(argc, argv, &i);
        else if (is(a, "--listen"))
            listen_addr = arg(argc, argv, &i);
        else if (is(a, "--api-key"))
            m.cfg.api_key = arg(argc, argv, &i);
        else if (is(a, "--domain"))
            m.cfg.domain = arg(argc, argv, &i);
        else if (is(a, "--protocol"))
            m.cfg.protocol = arg(argc, argv, &i);
        else if (is(a, "--request-timeout") && !seconds(arg(argc, argv, &i), &m.cfg))
            return fprintf(stderr, "opensandbox-mcp: --request-timeout: seconds, 1..86400\n"), 2;
        else if (!strcmp(a, "--use-server-proxy"))
            m.cfg.use_server_proxy = 1;
        else
            return fprintf(stderr, "opensandbox-mcp: unknown option %s\n%s", a, usage), 2;
    }
    if (!strcmp(transport, "stdio"))
        return stdio_loop(&m);
    if (!strcmp(transport, "http"))
        return mcp_http_serve(&m, listen_addr);
    fprintf(stderr, "opensandbox-mcp: --transport %s: want stdio or http\n", transport);
    return 2;
}
