/* Driver for tests/integration/test_dns.py: runs the DNS forwarder
 * (src/net/dns.c) on a real loop. Without OSB_DNS_LIVE_UPSTREAMS it only
 * reports a skip (it is built and run as a unit test).
 *
 * Environment: OSB_DNS_LIVE_UPSTREAMS ("ip:port,ip:port"), OSB_DNS_LIVE_PORT
 * (listening port), OSB_DNS_LIVE_TIMEOUT_MS (optional).
 * Commands on stdin, one per line:
 *   serve KEY IPV4 [POLICY-JSON]   (no JSON: no policy, allow everything)
 *   policy KEY [POLICY-JSON]
 *   stop KEY
 *   quit
 * Output: "# ready", then per command "# done CMD" or "# error MESSAGE",
 * and "# learn KEY ADDR TTL" for every address the forwarder reports.
 * On quit the forwarder is closed, the loop drained and "ok - ..." printed. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/json.h"
#include "net/dns.h"
#include "net/policy.h"
#include "tap.h"

static struct osb_dns *dns;

/* The numbers come from the driving script; like atoi, junk reads as 0. */
static int num(const char *s)
{
    return (int)strtol(s, NULL, 10);
}
static uv_pipe_t in;
static char line[1 << 17];
static size_t linelen;

static void learn(void *ud, const char *key, const char *name, int family, const uint8_t *addr,
                  uint32_t ttl)
{
    char s[64];
    (void)ud;
    inet_ntop(family, addr, s, sizeof s);
    printf("# learn %s %s %u (%s)\n", key, s, ttl, name);
    fflush(stdout);
}

/* Parse optional policy JSON; *has = false when absent. */
static int policy_arg(const char *json, struct osb_policy *p, bool *has, struct osb_err *err)
{
    *has = json && *json;
    if (!*has)
        return 0;
    json_t *v = NULL;
    if (osb_json_parse(json, strlen(json), false, &v, err) < 0)
        return -1;
    int rc = osb_policy_parse(v, p, err);
    json_decref(v);
    return rc;
}

static void on_stdin_closed(uv_handle_t *h)
{
    (void)h;
}

static void command(char *l)
{
    char *save = NULL;
    char *cmd = strtok_r(l, " ", &save), *key = strtok_r(NULL, " ", &save),
         *rest = strtok_r(NULL, "", &save);
    struct osb_err err = {0};
    struct osb_policy p;
    bool has = false;
    int rc = -1;
    if (!cmd) {
        return;
    } else if (strcmp(cmd, "quit") == 0) {
        osb_dns_close(dns);
        dns = NULL;
        uv_close((uv_handle_t *)&in, on_stdin_closed);
        return;
    } else if (strcmp(cmd, "stop") == 0 && key) {
        osb_dns_stop(dns, key);
        rc = 0;
    } else if (strcmp(cmd, "serve") == 0 && key && rest) {
        char *ip = strtok_r(rest, " ", &save), *json = strtok_r(NULL, "", &save);
        if (policy_arg(json, &p, &has, &err) == 0)
            rc = osb_dns_serve(dns, key, ip, has ? &p : NULL, learn, NULL, &err);
    } else if (strcmp(cmd, "policy") == 0 && key) {
        if (policy_arg(rest, &p, &has, &err) == 0)
            rc = osb_dns_set_policy(dns, key, has ? &p : NULL, &err);
    } else {
        osb_err_set(&err, OSB_E_INVALID, "bad command %s", cmd);
    }
    if (has)
        osb_policy_free(&p);
    if (rc == 0)
        printf("# done %s\n", cmd);
    else
        printf("# error %s\n", err.msg);
    fflush(stdout);
}

static void alloc_in(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    (void)h;
    (void)s;
    *b = uv_buf_init(line + linelen, (unsigned)(sizeof line - linelen - 1));
}

static void on_stdin(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    if (n < 0) {
        if (dns) {
            osb_dns_close(dns);
            dns = NULL;
        }
        uv_close((uv_handle_t *)st, on_stdin_closed);
        return;
    }
    linelen += (size_t)n;
    char *nl;
    while (dns && (nl = memchr(line, '\n', linelen))) {
        *nl = 0;
        size_t used = (size_t)(nl - line) + 1;
        command(line);
        memmove(line, line + used, linelen - used);
        linelen -= used;
    }
}

int main(void)
{
    const char *ups = getenv("OSB_DNS_LIVE_UPSTREAMS"), *port = getenv("OSB_DNS_LIVE_PORT");
    const char *tmo = getenv("OSB_DNS_LIVE_TIMEOUT_MS");
    if (!ups || !port) {
        printf("ok - dns live driver # SKIP OSB_DNS_LIVE_UPSTREAMS not set "
               "(run by tests/integration/test_dns.py)\n");
        return 0;
    }
    char *copy = strdup(ups);
    const char *list[16] = {0};
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < 15; t = strtok_r(NULL, ",", &save))
        list[n++] = t;
    struct osb_dns_config cfg = {
        .upstreams = list, .port = num(port), .timeout_ms = tmo ? (unsigned)num(tmo) : 0};
    struct osb_err err = {0};
    uv_loop_t *loop = uv_default_loop();
    OK(osb_dns_open(loop, &cfg, &dns, &err) == 0, "open the forwarder");
    if (!dns) {
        printf("# %s\n", err.msg);
        return 1;
    }
    uv_pipe_init(loop, &in, 0);
    uv_pipe_open(&in, 0);
    uv_read_start((uv_stream_t *)&in, alloc_in, on_stdin);
    printf("# ready\n");
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    IS_INT(uv_loop_close(loop), 0, "every handle closed");
    free(copy);
    return tap_done();
}
