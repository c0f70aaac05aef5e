/* Live driver of the network slot manager for tests/integration/test_netns.py.
 * Needs root and real namespaces, so under `make test` (no OSB_NET_LIVE in
 * the environment) it only reports a skip. With OSB_NET_LIVE=1 it reads one
 * command per line on stdin and answers one line on stdout:
 *   open <state_dir> <subnet> <pool> [allow_host_cidr...]   -> ok | err <msg>
 *       (in-use slots from earlier "inuse <id> <index> <0|1>" lines)
 *   claim <id>            -> ok <index> <netns path> <host if> <host ip> <sandbox ip>/<len>
 *   release <id> | restrict <index> <0|1> | allow <index> <cidr> <timeout_s>
 *   deny <index> <cidr>
 *   reset <index> | close | wait_ready <n> (pool refilled to n within 10 s)
 *   bench <n>             -> ok p50_us p99_us max_us (n claim+release cycles;
 *                            only the claim is timed)
 *   bench_ops <index> <n> -> ok restrict_us allow_us reset_us (p50 of n rounds)
 *   stats                 -> ok <describe line>
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/netns.h"
#include "net/nl.h"
#include "tap.h"

static struct osb_net *net;

/* The numbers come from the driving script; like atoi, junk reads as 0. */
static int num(const char *s)
{
    return (int)strtol(s, NULL, 10);
}
static struct osb_net_inuse inuse[64];
static size_t n_inuse;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void reply_err(const struct osb_err *e)
{
    printf("err %s\n", e->msg);
}

static void cmd_open(char **av, int ac)
{
    struct osb_net_config cfg = {.state_dir = av[1],
                                 .subnet = av[2],
                                 .pool_size = (unsigned)num(av[3]),
                                 .allow_host_cidrs = (const char *const *)av + 4,
                                 .n_allow_host_cidrs = (size_t)(ac - 4)};
    struct osb_err e = {0};
    if (osb_net_open(&cfg, inuse, n_inuse, &net, &e) < 0)
        reply_err(&e);
    else
        printf("ok\n");
}

static void cmd_claim(const char *id)
{
    struct osb_net_slot s;
    struct osb_err e = {0};
    if (osb_net_claim(net, id, &s, &e) < 0)
        return reply_err(&e);
    char h[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &s.host_ip, h, sizeof(h));
    inet_ntop(AF_INET, &s.sandbox_ip, b, sizeof(b));
    printf("ok %u %s %s %s %s/%u\n", s.index, s.netns_path, s.host_ifname, h, b, s.prefix_len);
}

/* allow (timeout av[3]) or deny av[2] on slot av[1]. */
static void cmd_addr(char **av, bool deny)
{
    struct osb_err e = {0};
    unsigned char addr[16];
    char ip[64];
    snprintf(ip, sizeof(ip), "%s", av[2]);
    char *slash = strchr(ip, '/');
    unsigned len = 0;
    if (slash) {
        *slash = 0;
        len = (unsigned)num(slash + 1);
    }
    int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(fam, ip, addr) != 1) {
        printf("err bad address\n");
        return;
    }
    if (!slash)
        len = fam == AF_INET ? 32 : 128;
    unsigned idx = (unsigned)num(av[1]);
    if ((deny ? osb_net_deny(net, idx, fam, addr, len, &e)
              : osb_net_allow(net, idx, fam, addr, len, (uint32_t)num(av[3]), &e)) < 0)
        return reply_err(&e);
    printf("ok\n");
}

static void cmd_bench(int n)
{
    double *t = calloc((size_t)n, sizeof(double));
    struct osb_err e = {0};
    struct osb_net_slot s;
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        if (osb_net_claim(net, "bench", &s, &e) < 0) {
            free(t);
            return reply_err(&e);
        }
        t[i] = now_us() - t0;
        if (osb_net_release(net, "bench", &e) < 0) {
            free(t);
            return reply_err(&e);
        }
    }
    qsort(t, (size_t)n, sizeof(double), cmp_d);
    printf("ok %.1f %.1f %.1f\n", t[n / 2], t[(n * 99) / 100], t[n - 1]);
    free(t);
}

/* p50 of restrict on+off, allow, reset on a claimed slot, in microseconds. */
static void cmd_bench_ops(unsigned idx, int n)
{
    double *t[3];
    struct osb_err e = {0};
    struct in_addr a = {.s_addr = htonl(0x0aca0063)}; /* 10.202.0.99 */
    for (int k = 0; k < 3; k++)
        t[k] = calloc((size_t)n, sizeof(double));
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        double t0 = now_us();
        bad |= osb_net_restrict(net, idx, i % 2 == 0, &e) < 0;
        double t1 = now_us();
        bad |= osb_net_allow(net, idx, AF_INET, &a, 32, 30, &e) < 0;
        double t2 = now_us();
        bad |= osb_net_reset_allow(net, idx, &e) < 0;
        t[0][i] = t1 - t0, t[1][i] = t2 - t1, t[2][i] = now_us() - t2;
    }
    if (bad) {
        reply_err(&e);
    } else {
        for (int k = 0; k < 3; k++)
            qsort(t[k], (size_t)n, sizeof(double), cmp_d);
        printf("ok %.1f %.1f %.1f\n", t[0][n / 2], t[1][n / 2], t[2][n / 2]);
    }
    for (int k = 0; k < 3; k++)
        free(t[k]);
}

static void cmd_wait_ready(unsigned want)
{
    struct osb_net_stats st;
    double t0 = now_us();
    do {
        osb_net_stats(net, &st);
        if (st.ready >= want) {
            printf("ok %.1f\n", (now_us() - t0) / 1000);
            return;
        }
        usleep(1000);
    } while (now_us() - t0 < 10e6);
    printf("err pool has %u ready slots, want %u (%s)\n", st.ready, want, st.last_error);
}

static void dispatch(char **av, int ac)
{
    struct osb_err e = {0};
    char line[1024];
    if (!strcmp(av[0], "inuse") && ac == 4 && n_inuse < 64) {
        inuse[n_inuse++] =
            (struct osb_net_inuse){strdup(av[1]), (unsigned)num(av[2]), num(av[3]) != 0};
        printf("ok\n");
    } else if (!strcmp(av[0], "open") && ac >= 4) {
        cmd_open(av, ac);
    } else if (!net) {
        printf("err not open\n");
    } else if (!strcmp(av[0], "claim") && ac == 2) {
        cmd_claim(av[1]);
    } else if (!strcmp(av[0], "release") && ac == 2) {
        osb_net_release(net, av[1], &e) < 0 ? reply_err(&e) : (void)printf("ok\n");
    } else if (!strcmp(av[0], "restrict") && ac == 3) {
        osb_net_restrict(net, (unsigned)num(av[1]), num(av[2]) != 0, &e) < 0 ? reply_err(&e)
                                                                             : (void)printf("ok\n");
    } else if (!strcmp(av[0], "allow") && ac == 4) {
        cmd_addr(av, false);
    } else if (!strcmp(av[0], "deny") && ac == 3) {
        cmd_addr(av, true);
    } else if (!strcmp(av[0], "reset") && ac == 2) {
        osb_net_reset_allow(net, (unsigned)num(av[1]), &e) < 0 ? reply_err(&e)
                                                               : (void)printf("ok\n");
    } else if (!strcmp(av[0], "bench") && ac == 2) {
        cmd_bench(num(av[1]));
    } else if (!strcmp(av[0], "bench_ops") && ac == 3) {
        cmd_bench_ops((unsigned)num(av[1]), num(av[2]));
    } else if (!strcmp(av[0], "wait_ready") && ac == 2) {
        cmd_wait_ready((unsigned)num(av[1]));
    } else if (!strcmp(av[0], "stats")) {
        osb_net_describe(net, line, sizeof(line));
        printf("ok %s\n", line);
    } else if (!strcmp(av[0], "close")) {
        osb_net_close(net);
        net = NULL;
        n_inuse = 0;
        printf("ok\n");
    } else {
        printf("err unknown command %s\n", av[0]);
    }
}

int main(void)
{
    if (!getenv("OSB_NET_LIVE")) {
        printf("ok - network slots live test # SKIP OSB_NET_LIVE not set "
               "(run by tests/integration/test_netns.py)\n");
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char line[4096];
    while (fgets(line, sizeof(line), stdin)) {
        char *av[32];
        int ac = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\n", &save); tok && ac < 32;
             tok = strtok_r(NULL, " \t\n", &save))
            av[ac++] = tok;
        if (ac)
            dispatch(av, ac);
    }
    return 0;
}
