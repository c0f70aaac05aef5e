/* GET /metrics: Prometheus' text format (version 0.0.4). What state shows
 * (sandboxes by state and runtime, the admission queue, the process) is read
 * at scrape time; the counters and histograms come from metrics.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/version.h"
#include "common/xalloc.h"
#include "server/admit.h"
#include "server/metrics.h"
#include "server/network.h"
#include "server/pools.h"
#include "server/registry.h"
#include "server/server.h"

static int gauge(struct osb_buf *b, const char *name, const char *help, double v)
{
    return osb_buf_addf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

/* Every state of every runtime that has a sandbox, and every state of the
 * default runtime (so a dashboard sees 0, not nothing). */
static int sandboxes(struct osb_server *srv, struct osb_buf *b)
{
    const char *name = "opensandbox_sandboxes";
    size_t count[OSB_SRV_MAX_BACKENDS][OSB_ST_COUNT] = {{0}};
    int rc = osb_buf_addf(b,
                          "# HELP %s Sandboxes by state and runtime (warm pool members "
                          "included)\n# TYPE %s gauge\n",
                          name, name);
    for (size_t i = 0; i < osb_reg_count(srv->reg); i++) {
        const struct osb_sbx *s = osb_reg_at(srv->reg, i);
        for (size_t k = 0; k < srv->n_rts; k++)
            if (strcmp(s->runtime, osb_rt_name(srv->rts[k])) == 0)
                count[k][s->state]++;
    }
    for (size_t k = 0; k < srv->n_rts; k++)
        for (int st = 0; st < OSB_ST_COUNT; st++)
            rc |= osb_buf_addf(b, "%s{state=\"%s\",runtime=\"%s\"} %zu\n", name,
                               osb_state_name((enum osb_sbx_state)st), osb_rt_name(srv->rts[k]),
                               count[k][st]);
    return rc;
}

struct usage {
    const struct osb_sbx *s;
    struct osb_rt_stats st;
    bool net; /* rx, tx: the sandbox has a link */
    uint64_t rx, tx;
};

/* One series per running or paused sandbox ([metrics] per_sandbox); each
 * sandbox's cgroups are read once. */
static int per_sandbox(struct osb_server *srv, struct osb_buf *b)
{
    static const char *const fam[][3] = {
        {"opensandbox_sandbox_memory_bytes", "gauge", "Memory the sandbox's cgroup holds"},
        {"opensandbox_sandbox_cpu_seconds_total", "counter", "CPU time of the sandbox's cgroup"},
        {"opensandbox_sandbox_pids", "gauge", "Processes (tasks) in the sandbox"},
        {"opensandbox_sandbox_network_receive_bytes_total", "counter",
         "Bytes the sandbox received on its network link"},
        {"opensandbox_sandbox_network_transmit_bytes_total", "counter",
         "Bytes the sandbox sent on its network link"}};
    size_t n = 0, cap = osb_reg_count(srv->reg);
    struct usage *u = osb_xcalloc(cap ? cap : 1, sizeof *u);
    for (size_t i = 0; i < cap; i++) {
        const struct osb_sbx *s = osb_reg_at(srv->reg, i);
        struct osb_err err = {0};
        if (osb_backend_stats(srv, s, &u[n].st, &err) == 0) {
            u[n].net = osb_network_link_bytes(srv, s, &u[n].rx, &u[n].tx) == 0;
            u[n++].s = s;
        }
    }
    int rc = 0;
    for (int f = 0; f < 5; f++) {
        rc |= osb_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", fam[f][0], fam[f][2], fam[f][0],
                           fam[f][1]);
        for (size_t i = 0; i < n; i++) {
            if (f >= 3 && !u[i].net)
                continue;
            double v = f == 0   ? (double)u[i].st.memory_bytes
                       : f == 1 ? (double)u[i].st.cpu_usage_ns / 1e9
                       : f == 2 ? (double)u[i].st.pids
                       : f == 3 ? (double)u[i].rx
                                : (double)u[i].tx;
            rc |= osb_buf_addf(b, "%s{sandbox_id=\"%s\",runtime=\"%s\"} %.17g\n", fam[f][0],
                               u[i].s->id, u[i].s->runtime, v);
        }
    }
    free(u);
    return rc;
}

/* Each warm pool's members by state, from what GET /pools answers (the
 * pool names are the operator's, bounded by the pools there are). */
static int pools(struct osb_server *srv, struct osb_buf *b)
{
    static const char *const states[] = {"available", "starting", "allocated", "waiting"};
    int rc = osb_buf_addf(b, "# HELP opensandbox_pool_members Warm pool members by state "
                             "(waiting: claims waiting for a member)\n"
                             "# TYPE opensandbox_pool_members gauge\n");
    json_t *list = osb_pools_list(srv), *p;
    size_t i;
    json_array_foreach(json_object_get(list, "items"), i, p)
    {
        char name[160];
        osb_metrics_label(json_string_value(json_object_get(p, "name")), name, sizeof name);
        json_t *st = json_object_get(p, "status");
        for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
            rc |= osb_buf_addf(b, "opensandbox_pool_members{pool=\"%s\",state=\"%s\"} %lld\n", name,
                               states[k],
                               (long long)json_integer_value(json_object_get(st, states[k])));
    }
    json_decref(list);
    return rc;
}

static size_t open_fds(void)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* The process families every Prometheus client exports. */
static int process(struct osb_buf *b)
{
    long rss_pages = 0, tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    unsigned long ut = 0, st = 0;
    unsigned long long start = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%*s %ld", &rss_pages) != 1)
        rss_pages = 0;
    if (f)
        fclose(f);
    f = fopen("/proc/self/stat", "r");
    char line[1024] = "";
    if (f && fgets(line, sizeof line, f)) {
        const char *p = strrchr(line, ')');
        if (!p || sscanf(p + 2,
                         "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d "
                         "%*d %*d %*d %llu",
                         &ut, &st, &start) != 3)
            ut = st = 0, start = 0;
    }
    if (f)
        fclose(f);
    double boot = 0;
    f = fopen("/proc/stat", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %lf", &boot) == 1)
            break;
    if (f)
        fclose(f);
    int rc = gauge(b, "process_resident_memory_bytes", "Resident memory", (double)rss_pages * page);
    rc |= osb_buf_addf(b,
                       "# HELP process_cpu_seconds_total User and system CPU time\n"
                       "# TYPE process_cpu_seconds_total counter\n"
                       "process_cpu_seconds_total %.17g\n",
                       (double)(ut + st) / (double)tck);
    rc |= gauge(b, "process_open_fds", "Open file descriptors", (double)open_fds());
    rc |= gauge(b, "process_start_time_seconds", "Start time (Unix seconds)",
                boot + (double)start / (double)tck);
    return rc;
}

int osb_metrics_text(struct osb_server *srv, struct osb_buf *b)
{
    int rc = osb_buf_addf(b,
                          "# HELP opensandbox_build_info The server's version\n"
                          "# TYPE opensandbox_build_info gauge\n"
                          "opensandbox_build_info{version=\"%s\"} 1\n",
                          osb_version());
    rc |= sandboxes(srv, b);
    rc |= gauge(b, "opensandbox_admission_queue_length",
                "Create requests waiting for a slot ([server] max_concurrent_creates)",
                (double)osb_admit_queued(srv));
    rc |= osb_metrics_render(srv->metrics, b);
    rc |= osb_network_metrics(srv, b);
    rc |= pools(srv, b);
    if (srv->cfg->metrics.per_sandbox)
        rc |= per_sandbox(srv, b);
    rc |= process(b);
    return rc < 0 ? -1 : 0;
}

static void h_metrics(struct osb_http_req *req, void *ud)
{
    struct osb_buf b;
    osb_buf_init(&b, 64 << 20);
    if (osb_metrics_text(ud, &b) < 0)
        osb_apierr_reply(req, "METRICS::TOO_LARGE", "the metrics do not fit in 64 MiB");
    else
        osb_http_respond(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    osb_buf_free(&b);
}

/* [metrics] listen: a listener of its own that serves only /metrics, with
 * no API key (it shows counts, never a sandbox's data unless per_sandbox;
 * bind it where only the scraper reaches). */
int osb_metrics_listen(struct osb_server *srv, struct osb_err *err)
{
    const char *l = srv->cfg->metrics.listen;
    if (!l || !*l)
        return 0;
    const char *colon = strrchr(l, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == l || !colon[1] || *end || port < 1 || port > 65535)
        return osb_err_set(err, OSB_E_INVALID, "[metrics] listen `%s`: want host:port", l);
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - l), l);
    const struct osb_http_route r = {"GET", "/metrics", h_metrics,
                                     OSB_ROUTE_NO_BODY | OSB_ROUTE_PUBLIC, srv};
    srv->metrics_http = osb_http_server_new(srv->loop);
    osb_http_server_add_routes(srv->metrics_http, &r, 1);
    if (osb_http_listen_tcp(srv->metrics_http, host, (int)port, err) < 0)
        return -1;
    osb_info("metrics on http://%s/metrics (no API key)", l);
    return 0;
}

const struct osb_http_route osb_api_metrics_routes[] = {
    {"GET", "/metrics", h_metrics, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_metrics_nroutes = 1;
