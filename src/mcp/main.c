/* opensandbox-mcp: options (upstream's plus the official SDKs' connection
 * settings), then the stdio loop (newline-delimited JSON-RPC; logs only on
 * stderr) or the HTTP transport. */
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
    "                       [--version] [--help]\n"
    "An MCP server (revision 2025-06-18; 2025-03-26 and 2024-11-05 accepted) whose tools\n"
    "create and drive OpenSandbox sandboxes.\n"
    "  --transport stdio      (default) JSON-RPC messages, one per line, on stdin/stdout;\n"
    "                         logs go to stderr\n"
    "  --transport http       streamable HTTP on http://HOST:PORT/mcp (also: streamable-http)\n"
    "  --listen HOST:PORT     where http listens (default 127.0.0.1:8000; port 0: any free\n"
    "                         port, printed on stderr)\n"
    "  --api-key KEY          the server's API key (default $OPEN_SANDBOX_API_KEY)\n"
    "  --domain HOST:PORT     the OpenSandbox server (default $OPEN_SANDBOX_DOMAIN or\n"
    "                         localhost:8080)\n"
    "  --protocol http|https  (default $OPEN_SANDBOX_PROTOCOL or http)\n"
    "  --request-timeout S    seconds per request (default 30; also --request-timeout-seconds)\n"
    "  --use-server-proxy     reach sandboxes through the server's proxy\n"
    "Environment: OPEN_SANDBOX_API_KEY, OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_PROTOCOL,\n"
    "OPEN_SANDBOX_REQUEST_TIMEOUT, OPEN_SANDBOX_USE_SERVER_PROXY. Tools: docs/mcp.md.\n";

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
        /* Compact JSON has no raw newline: one message per line. */
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

/* What the server holds, freed at the end (so leak checkers see none). The
 * code contexts stay in their sandboxes: they go with the sandbox. */
static void release(struct mcp *m)
{
    for (size_t i = 0; i < m->n_ctxs; i++) {
        free(m->ctxs[i].sandbox);
        free(m->ctxs[i].language);
        free(m->ctxs[i].id);
    }
    free(m->ctxs);
    json_decref(m->tools);
    osbc_client_free(m->c);
}

static void die_usage(const char *fmt, const char *a)
{
    fprintf(stderr, "opensandbox-mcp: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n%s", usage);
    exit(2);
}

static const char *arg(int argc, char **argv, int *i)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc)
        die_usage("%s needs a value", argv[*i]);
    return argv[++*i];
}

/* --request-timeout's value: seconds (a fraction is fine), up to a day. */
static void seconds(const char *v, struct osbc_config *cfg)
{
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    if (!*v || *end || errno || !(s > 0) || s > 86400)
        die_usage("--request-timeout %s: want seconds, more than 0, at most 86400", v);
    cfg->request_timeout_ms = (long)(s * 1000 + 0.5);
    if (!cfg->request_timeout_ms)
        cfg->request_timeout_ms = 1;
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
    const char *transport = "stdio", *listen_addr = "127.0.0.1:8000";
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--version") || !strcmp(a, "-V"))
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
        else if (is(a, "--request-timeout") || is(a, "--request-timeout-seconds"))
            seconds(arg(argc, argv, &i), &m.cfg);
        else if (!strcmp(a, "--use-server-proxy"))
            m.cfg.use_server_proxy = 1;
        else
            die_usage("unknown option %s", a);
    }
    if (m.cfg.protocol && strcmp(m.cfg.protocol, "http") && strcmp(m.cfg.protocol, "https"))
        die_usage("--protocol %s: want http or https", m.cfg.protocol);
    if (!strcmp(transport, "stdio")) {
        int rc = stdio_loop(&m);
        release(&m);
        return rc;
    }
    if (!strcmp(transport, "http") || !strcmp(transport, "streamable-http"))
        return mcp_http_serve(&m, listen_addr);
    die_usage("--transport %s: want stdio or http", transport);
    return 2;
}
