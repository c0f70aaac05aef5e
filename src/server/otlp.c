/* The OTLP/HTTP JSON exporter (otlp.h): two timers on the loop, one post
 * per signal in flight on the thread pool (libcurl), log lines queued from
 * any thread under a mutex. */
#include "server/otlp.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/version.h"
#include "common/xalloc.h"
#include "server/server.h"

#define MAX_QUEUED_LOGS 10000

/* One post: built on the loop, sent on the pool. */
struct post {
    uv_work_t work;
    struct osb_otlp *o;
    bool *busy;
    char *url, *body;
    long status;
    char error[CURL_ERROR_SIZE];
};

struct osb_otlp {
    struct osb_server *srv;
    char *metrics_url, *logs_url;
    struct curl_slist *headers;
    uv_timer_t mtimer, ltimer;
    bool metrics_busy, logs_busy, closing, warned;
    int pending; /* timers and posts not yet done with o */
    uint64_t start_ns;
    json_t *resource;
    pthread_mutex_t mu;
    json_t *logs; /* logRecords waiting */
    size_t dropped;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long env_ms(const char *name, long def)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end && x > 0 ? x : def;
}

/* ------------------------------------------------------------ posting */

static void post_work(uv_work_t *w)
{
    struct post *p = w->data;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(p->error, sizeof p->error, "curl_easy_init failed");
        return;
    }
    curl_easy_setopt(c, CURLOPT_URL, p->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->o->headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, p->error);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &p->status);
    curl_easy_cleanup(c);
}

static void release(struct osb_otlp *o);

static void post_done(uv_work_t *w, int status)
{
    struct post *p = w->data;
    struct osb_otlp *o = p->o;
    *p->busy = false;
    bool ok = status == 0 && p->status >= 200 && p->status < 300;
    if (!ok && !o->warned) /* once per failing streak: the log is exported too */
        osb_warn("OTLP export to %s failed: %s", p->url,
                 p->error[0] ? p->error
                 : p->status ? "HTTP error status"
                             : "cancelled");
    o->warned = !ok;
    free(p->body);
    free(p);
    release(o);
}

static void post(struct osb_otlp *o, const char *url, bool *busy, json_t *req)
{
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body)
        return;
    struct post *p = osb_xcalloc(1, sizeof *p);
    p->o = o;
    p->busy = busy;
    p->url = (char *)url;
    p->body = body;
    p->work.data = p;
    *busy = true;
    o->pending++;
    uv_queue_work(o->srv->loop, &p->work, post_work, post_done);
}

/* ------------------------------------------------------------ signals */

static void on_metrics(uv_timer_t *t)
{
    struct osb_otlp *o = t->data;
    if (o->metrics_busy)
        return; /* the last one is still out: skip a beat rather than pile up */
    struct osb_buf b;
    osb_buf_init(&b, 64 << 20);
    json_t *m = osb_metrics_text(o->srv, &b) == 0
                    ? osb_otlp_metrics(b.data, b.len, o->start_ns, now_ns())
                    : NULL;
    osb_buf_free(&b);
    if (!m)
        return;
    post(o, o->metrics_url, &o->metrics_busy,
         json_pack("{s:[{s:O,s:[{s:{s:s,s:s},s:o}]}]}", "resourceMetrics", "resource", o->resource,
                   "scopeMetrics", "scope", "name", "opensandbox-server", "version", osb_version(),
                   "metrics", m));
}

static void on_log(void *ud, enum osb_log_level lvl, const char *msg)
{
    static const int sev[] = {17, 13, 9, 5}; /* OTLP SeverityNumber: ERROR WARN INFO DEBUG */
    static const char *const text[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    struct osb_otlp *o = ud;
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)now_ns());
    pthread_mutex_lock(&o->mu);
    if (json_array_size(o->logs) < MAX_QUEUED_LOGS)
        json_array_append_new(o->logs, json_pack("{s:s,s:i,s:s,s:{s:s}}", "timeUnixNano", t,
                                                 "severityNumber", sev[lvl], "severityText",
                                                 text[lvl], "body", "stringValue", msg));
    else
        o->dropped++;
    pthread_mutex_unlock(&o->mu);
}

static void on_logs(uv_timer_t *t)
{
    struct osb_otlp *o = t->data;
    if (o->logs_busy)
        return;
    pthread_mutex_lock(&o->mu);
    json_t *recs = o->logs;
    o->logs = json_array();
    pthread_mutex_unlock(&o->mu);
    if (json_array_size(recs) == 0) {
        json_decref(recs);
        return;
    }
    post(o, o->logs_url, &o->logs_busy,
         json_pack("{s:[{s:O,s:[{s:{s:s,s:s},s:o}]}]}", "resourceLogs", "resource", o->resource,
                   "scopeLogs", "scope", "name", "opensandbox-server", "version", osb_version(),
                   "logRecords", recs));
}

/* ------------------------------------------------------------ life */

static void release(struct osb_otlp *o)
{
    if (--o->pending > 0 || !o->closing)
        return;
    json_decref(o->resource);
    json_decref(o->logs);
    curl_slist_free_all(o->headers);
    pthread_mutex_destroy(&o->mu);
    free(o->metrics_url);
    free(o->logs_url);
    free(o);
}

static void timer_closed(uv_handle_t *h)
{
    release(h->data);
}

/* signal's URL: its own variable as is, else the base one + "/v1/<signal>". */
static char *url_of(const char *own, const char *signal)
{
    const char *v = getenv(own), *base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (v && *v)
        return osb_xstrdup(v);
    if (!base || !*base)
        return NULL;
    size_t n = strlen(base);
    return osb_xasprintf("%.*s/v1/%s", (int)(n && base[n - 1] == '/' ? n - 1 : n), base, signal);
}

/* Content-Type and OTEL_EXPORTER_OTLP_HEADERS ("k=v,k2=v2"). */
static struct curl_slist *headers(void)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    const char *v = getenv("OTEL_EXPORTER_OTLP_HEADERS");
    char *copy = v ? osb_xstrdup(v) : NULL, *save = NULL;
    for (char *kv = copy ? strtok_r(copy, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || strpbrk(kv, "\r\n"))
            continue;
        *eq = 0;
        char *line = osb_xasprintf("%s: %s", kv, eq + 1);
        h = curl_slist_append(h, line);
        free(line);
    }
    free(copy);
    return h;
}

static json_t *resource(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    const char *name = getenv("OTEL_SERVICE_NAME");
    return json_pack("{s:[{s:s,s:{s:s}},{s:s,s:{s:s}},{s:s,s:{s:s}}]}", "attributes", "key",
                     "service.name", "value", "stringValue",
                     name && *name ? name : "opensandbox-server", "key", "service.version", "value",
                     "stringValue", osb_version(), "key", "host.name", "value", "stringValue",
                     host);
}

static void start_timer(struct osb_otlp *o, uv_timer_t *t, uv_timer_cb cb, long ms)
{
    uv_timer_init(o->srv->loop, t);
    t->data = o;
    o->pending++;
    uv_timer_start(t, cb, (uint64_t)ms, (uint64_t)ms);
}

int osb_otlp_open(struct osb_server *srv, struct osb_err *err)
{
    (void)err;
    const char *off = getenv("OTEL_SDK_DISABLED");
    char *m = url_of("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "metrics"),
         *l = url_of("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "logs");
    if ((off && !strcmp(off, "true")) || (!m && !l)) {
        free(m);
        free(l);
        return 0;
    }
    struct osb_otlp *o = osb_xcalloc(1, sizeof *o);
    o->srv = srv;
    o->metrics_url = m;
    o->logs_url = l;
    o->headers = headers();
    o->resource = resource();
    o->logs = json_array();
    o->start_ns = now_ns();
    pthread_mutex_init(&o->mu, NULL);
    srv->otlp = o;
    const char *proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL");
    if (proto && strcmp(proto, "http/json") != 0)
        osb_warn("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/json is spoken; using it", proto);
    if (m)
        start_timer(o, &o->mtimer, on_metrics, env_ms("OTEL_METRIC_EXPORT_INTERVAL", 60000));
    if (l) {
        start_timer(o, &o->ltimer, on_logs, env_ms("OTEL_BLRP_SCHEDULE_DELAY", 1000));
        osb_log_set_sink(on_log, o);
    }
    osb_info("OpenTelemetry export (OTLP/HTTP JSON): metrics %s, logs %s", m ? m : "off",
             l ? l : "off");
    return 0;
}

void osb_otlp_close(struct osb_server *srv)
{
    struct osb_otlp *o = srv->otlp;
    if (!o)
        return;
    srv->otlp = NULL;
    osb_log_set_sink(NULL, NULL);
    o->closing = true;
    o->pending++; /* released below, after the timers' closes are queued */
    if (o->metrics_url)
        uv_close((uv_handle_t *)&o->mtimer, timer_closed);
    if (o->logs_url)
        uv_close((uv_handle_t *)&o->ltimer, timer_closed);
    release(o);
}
