#include "execd/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/events.h"
#include "execd/execd.h"

#define SAMPLE_MS 1000
#define MIB (1024.0 * 1024.0)


/* ---- small file readers ---- */

static int read_text(const char *path, char *buf, size_t n)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r = OSB_RETRY(read(fd, buf, n - 1));
    if (r < 0)
        return -1;
    buf[r] = '\0';
    return 0;
}

static int read_u64(const char *dir, const char *file, uint64_t *out)
{
    char path[PATH_MAX], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (read_text(path, buf, sizeof buf) < 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    *out = v;
    return 0;
}

/* "key value" lines (memory.stat, cpu.stat, /proc/meminfo "Key: N kB"). */
static int read_keyed(const char *path, const char *key, uint64_t *out)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && (line[kl] == ' ' || line[kl] == ':')) {
            *out = strtoull(line + kl + 1, NULL, 10);
            return 0;
        }
    }
    return -1;
}

/* ---- cgroup discovery ---- */

static bool has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* The cgroup path of this process for a v1 controller (or "" for v2). */
static char *self_cgroup(const char *controller)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        bool match = *controller ? has_word(c1 + 1, controller) : c1[1] == '\0';
        if (match)
            return osb_xstrdup(c2 + 1);
    }
    return NULL;
}

/* Mount point and root of the cgroup mount holding `controller` (v1), or
 * of the cgroup2 mount when controller is "". */
static bool cgroup_mount(const char *controller, char *mnt, char *root, size_t n)
{
    _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        char r[1024], m[1024], fstype[64], super[1024];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
            continue;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        if ((*controller && (v2 || strcmp(fstype, "cgroup") || !has_word(super, controller))) ||
            (!*controller && !v2))
            continue;
        snprintf(mnt, n, "%s", m);
        snprintf(root, n, "%s", r);
        return true;
    }
    return false;
}

/* Directory of this process's cgroup for a controller; *at_root tells
 * whether it is the top of the hierarchy we can see. */
static char *cgroup_dir(const char *controller, bool *at_root)
{
    char mnt[1024], root[1024];
    _cleanup_free_ char *path = self_cgroup(controller);
    if (!path || !cgroup_mount(controller, mnt, root, sizeof mnt))
        return NULL;
    /* A mount made outside our cgroup namespace ("/../.."): our cgroup's
     * place in it cannot be named from here. */
    if (strncmp(root, "/..", 3) == 0)
        return NULL;
    const char *rel = path;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(path, root, rl) == 0)
        rel = path + rl;
    char *dir = osb_xasprintf("%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel);
    struct stat st;
    if (stat(dir, &st) < 0) { /* a cgroup namespace hides the path: the mount is ours */
        free(dir);
        dir = osb_xstrdup(mnt);
        rel = "/";
    }
    /* As the sandbox's PID 1 we are in a cgroup namespace whose root is the
     * sandbox's own cgroup, not the host's. */
    *at_root = (strcmp(rel, "/") == 0 || *rel == '\0') && getpid() != 1;
    return dir;
}

static bool file_exists(const char *dir, const char *file)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return access(path, R_OK) == 0;
}

static uint64_t mem_total_host(void)
{
    uint64_t kb = 0;
    read_keyed("/proc/meminfo", "MemTotal", &kb);
    return kb * 1024;
}

/* v1 memory when the controller is mounted; else v2 if it has the files.
 * At the root of the hierarchy without a limit, /proc/meminfo is better
 * (the root cgroup's usage counts every page cache page of the host). */
static void probe_memory(struct osb_metrics_src *cg)
{
    bool root = false;
    char *d = cgroup_dir("memory", &root);
    uint64_t limit = UINT64_MAX;
    if (d && file_exists(d, "memory.usage_in_bytes")) {
        read_u64(d, "memory.limit_in_bytes", &limit);
    } else {
        free(d);
        d = cgroup_dir("", &root);
        if (!d || !file_exists(d, "memory.current")) {
            free(d);
            return;
        }
        cg->mem_v2 = true;
        read_u64(d, "memory.max", &limit); /* "max" fails to parse: unlimited */
    }
    if (root && limit >= mem_total_host()) {
        free(d);
        return;
    }
    cg->mem = d;
}

static void probe_cpu(struct osb_metrics_src *cg)
{
    bool root = false, qroot = false;
    char *acct = cgroup_dir("cpuacct", &root);
    char *quota = cgroup_dir("cpu", &qroot);
    if (acct && file_exists(acct, "cpuacct.usage")) {
        cg->version = 1;
    } else {
        free(acct);
        free(quota);
        acct = cgroup_dir("", &root);
        quota = acct ? osb_xstrdup(acct) : NULL;
        if (!acct || !file_exists(acct, "cpu.stat")) {
            free(acct);
            free(quota);
            return;
        }
        cg->version = 2;
    }
    cg->cpu_quota = quota;
    cg->cpu_acct = root ? NULL : acct; /* the root cgroup: /proc/stat */
    if (root)
        free(acct);
}

static void probe(struct osb_metrics_src *cg)
{
    if (cg->probed)
        return;
    cg->probed = true;
    probe_memory(cg);
    probe_cpu(cg);
    osb_debug("metrics: cpu from %s, memory from %s", cg->cpu_acct ? cg->cpu_acct : "/proc/stat",
              cg->mem ? cg->mem : "/proc/meminfo");
}

/* ---- CPU ---- */

static double online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (double)n : 1;
}

/* A v1 (cpu.cfs_*) or v2 (cpu.max) quota in CPUs; 0: none. */
static double cgroup_quota(const struct osb_metrics_src *cg)
{
    if (!cg->cpu_quota)
        return 0;
    if (cg->version == 1) {
        uint64_t quota, period;
        if (read_u64(cg->cpu_quota, "cpu.cfs_period_us", &period) == 0 && period &&
            read_u64(cg->cpu_quota, "cpu.cfs_quota_us", &quota) == 0 && quota < (1ULL << 62))
            return (double)quota / (double)period;
        return 0;
    }
    char path[PATH_MAX], buf[64];
    unsigned long long quota, period;
    snprintf(path, sizeof path, "%s/cpu.max", cg->cpu_quota);
    if (read_text(path, buf, sizeof buf) == 0 && sscanf(buf, "%llu %llu", &quota, &period) == 2 &&
        period)
        return (double)quota / (double)period;
    return 0;
}

/* CPUs the sandbox may use: its cgroup's quota, else the runtime's word
 * (--cpus), capped by the CPUs we can run on. */
static double cpu_count(const struct osb_metrics_src *cg)
{
    double cpus = online_cpus(), q = cgroup_quota(cg);
    if (q <= 0)
        q = cg->cpu_limit;
    return q > 0 && q < cpus ? q : cpus;
}

static int host_ticks(uint64_t *busy, uint64_t *total)
{
    char buf[512];
    if (read_text("/proc/stat", buf, sizeof buf) < 0 || strncmp(buf, "cpu ", 4) != 0)
        return -1;
    unsigned long long v[10] = {0};
    int n = sscanf(buf + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    if (n < 4)
        return -1;
    /* guest time is already counted in user/nice. */
    uint64_t t = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    *total = t;
    *busy = t - v[3] - v[4]; /* minus idle and iowait, like gopsutil */
    return 0;
}

int osb_metrics_cpu_sample(struct osb_metrics_src *cg, struct osb_cpu_sample *s,
                           struct osb_err *err)
{
    probe(cg);
    memset(s, 0, sizeof *s);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->mono_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (cg->cpu_acct) {
        uint64_t usec = 0;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/cpu.stat", cg->cpu_acct);
        if (cg->version == 1 ? read_u64(cg->cpu_acct, "cpuacct.usage", &s->usage_ns) == 0
                             : read_keyed(path, "usage_usec", &usec) == 0) {
            if (cg->version == 2)
                s->usage_ns = usec * 1000;
            s->cgroup = true;
            return 0;
        }
    }
    if (host_ticks(&s->busy, &s->total) < 0)
        return osb_err_set(err, OSB_E_SYS, "failed to get CPU percent: cannot read /proc/stat");
    return 0;
}

static double cpu_pct(const struct osb_cpu_sample *a, const struct osb_cpu_sample *b, double cpus)
{
    double pct = 0;
    if (a->cgroup && b->cgroup) {
        double wall = (double)(b->mono_ns - a->mono_ns);
        if (wall > 0 && b->usage_ns >= a->usage_ns)
            pct = (double)(b->usage_ns - a->usage_ns) / (wall * cpus) * 100.0;
    } else if (!a->cgroup && !b->cgroup && b->total > a->total) {
        pct = (double)(b->busy - a->busy) / (double)(b->total - a->total) * 100.0;
    }
    return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

/* ---- memory ---- */

static int mem_host(double *total, double *used)
{
    uint64_t t = 0, fr = 0, buf = 0, cached = 0, srecl = 0;
    if (read_keyed("/proc/meminfo", "MemTotal", &t) < 0 ||
        read_keyed("/proc/meminfo", "MemFree", &fr) < 0)
        return -1;
    read_keyed("/proc/meminfo", "Buffers", &buf);
    read_keyed("/proc/meminfo", "Cached", &cached);
    read_keyed("/proc/meminfo", "SReclaimable", &srecl);
    uint64_t u = fr + buf + cached + srecl < t ? t - fr - buf - cached - srecl : 0;
    *total = (double)t * 1024 / MIB;
    *used = (double)u * 1024 / MIB;
    return 0;
}

static int mem_cgroup(const struct osb_metrics_src *cg, double *total, double *used)
{
    uint64_t limit = UINT64_MAX, usage, inactive = 0;
    char stat[PATH_MAX];
    snprintf(stat, sizeof stat, "%s/memory.stat", cg->mem);
    if (cg->mem_v2) {
        if (read_u64(cg->mem, "memory.current", &usage) < 0)
            return -1;
        read_u64(cg->mem, "memory.max", &limit);
        read_keyed(stat, "inactive_file", &inactive);
    } else {
        if (read_u64(cg->mem, "memory.usage_in_bytes", &usage) < 0)
            return -1;
        read_u64(cg->mem, "memory.limit_in_bytes", &limit);
        read_keyed(stat, "total_inactive_file", &inactive);
    }
    uint64_t host = mem_total_host();
    if (host && limit > host)
        limit = host;
    /* Like `docker stats`: inactive page cache is reclaimable, not used. */
    *total = (double)limit / MIB;
    *used = (double)(usage > inactive ? usage - inactive : 0) / MIB;
    return 0;
}

int osb_metrics_read(struct osb_metrics_src *cg, const struct osb_cpu_sample *a,
                     const struct osb_cpu_sample *b, struct osb_metrics *m, struct osb_err *err)
{
    probe(cg);
    m->cpu_count = cpu_count(cg);
    m->cpu_used_pct = cpu_pct(a, b, m->cpu_count);
    bool cgroup = cg->mem && mem_cgroup(cg, &m->mem_total_mib, &m->mem_used_mib) == 0;
    if (!cgroup && mem_host(&m->mem_total_mib, &m->mem_used_mib) < 0)
        return osb_err_set(err, OSB_E_SYS, "failed to get memory info");
    /* gVisor's /proc/meminfo shows the host cgroup's limit, which holds the
     * Sentry's own headroom as well: the runtime's word is the sandbox's. */
    if (!cgroup && cg->mem_limit && (double)cg->mem_limit / MIB < m->mem_total_mib)
        m->mem_total_mib = (double)cg->mem_limit / MIB;
    m->timestamp = osb_now_ms();
    return 0;
}

/* Go prints the shortest representation; %.15g is close and never shows
 * binary noise (12.35, not 12.350000000000001). */
static void num(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.15g", v);
}

void osb_metrics_json(const struct osb_metrics *m, char *buf, size_t n)
{
    char c[32], p[32], t[32], u[32];
    num(c, sizeof c, m->cpu_count);
    num(p, sizeof p, m->cpu_used_pct);
    num(t, sizeof t, m->mem_total_mib);
    num(u, sizeof u, m->mem_used_mib);
    snprintf(buf, n,
             "{\"cpu_count\":%s,\"cpu_used_pct\":%s,\"mem_total_mib\":%s,\"mem_used_mib\":%s,"
             "\"timestamp\":%lld}",
             c, p, t, u, (long long)m->timestamp);
}

/* ---- handlers ---- */

/* The module's state (x->metrics). */
struct osb_execd_metrics {
    struct osb_execd *x;
    struct osb_metrics_src src;
};

struct sampler {
    struct osb_execd_metrics *m;
    struct osb_http_req *req;
    uv_timer_t timer;
    struct osb_cpu_sample last;
    bool watch;
};

static void sampler_free(uv_handle_t *h)
{
    free(h->data);
}

static void sampler_end(struct sampler *s)
{
    if (s->req)
        osb_http_req_on_close(s->req, NULL, NULL);
    s->req = NULL;
    uv_timer_stop(&s->timer);
    uv_close((uv_handle_t *)&s->timer, sampler_free);
}

static void sampler_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct sampler *s = ud;
    s->req = NULL;
    sampler_end(s);
}

/* One reading against the previous sample; 0 on success. */
static int sample_json(struct sampler *s, char *buf, size_t n, struct osb_err *err)
{
    struct osb_cpu_sample now;
    struct osb_metrics m;
    if (osb_metrics_cpu_sample(&s->m->src, &now, err) < 0 ||
        osb_metrics_read(&s->m->src, &s->last, &now, &m, err) < 0)
        return -1;
    s->last = now;
    osb_metrics_json(&m, buf, n);
    return 0;
}

static void on_tick(uv_timer_t *t)
{
    struct sampler *s = t->data;
    struct osb_err err = {0};
    char buf[512];
    if (!s->watch) {
        struct osb_http_req *req = s->req;
        osb_http_req_on_close(req, NULL, NULL);
        s->req = NULL;
        if (sample_json(s, buf, sizeof buf, &err) < 0)
            osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error reading runtime metrics. %s",
                                   err.msg);
        else
            osb_http_respond(req, 200, "application/json; charset=utf-8", buf, strlen(buf));
        sampler_end(s);
        return;
    }
    if (osb_http_write(s->req, NULL, 0) > OSB_WRITE_HIGH_WATER)
        return; /* a client that does not read gets no backlog */
    if (sample_json(s, buf, sizeof buf - 1, &err) < 0) {
        json_t *e = json_pack("{ss}", "error", err.msg);
        char *j = osb_json_dump(e, NULL);
        snprintf(buf, sizeof buf - 1, "%s", j);
        free(j);
        json_decref(e);
    }
    size_t len = strlen(buf);
    buf[len++] = '\n'; /* both writers above left one byte for it */
    osb_http_write(s->req, buf, len);
}

static void start_sampler(struct osb_execd_metrics *m, struct osb_http_req *req, bool watch)
{
    struct osb_err err = {0};
    struct sampler *s = osb_xcalloc(1, sizeof *s);
    s->m = m;
    if (osb_metrics_cpu_sample(&m->src, &s->last, &err) < 0) {
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "error reading runtime metrics. %s",
                               err.msg);
        free(s);
        return;
    }
    s->req = req;
    s->watch = watch;
    uv_timer_init(m->x->loop, &s->timer);
    s->timer.data = s;
    uv_timer_start(&s->timer, on_tick, SAMPLE_MS, watch ? SAMPLE_MS : 0);
    osb_http_req_on_close(req, sampler_gone, s);
    if (watch)
        osb_http_sse_start(req);
}

static void h_metrics(struct osb_http_req *req, void *ud)
{
    start_sampler(ud, req, false);
}

static void h_watch(struct osb_http_req *req, void *ud)
{
    start_sampler(ud, req, true);
}

void osb_execd_metrics_routes(struct osb_execd *x)
{
    struct osb_execd_metrics *m = osb_xcalloc(1, sizeof *m);
    m->x = x;
    m->src.cpu_limit = x->cpu_limit;
    m->src.mem_limit = x->mem_limit;
    x->metrics = m;
    const struct osb_http_route routes[] = {
        {"GET", "/metrics", h_metrics, 0, m},
        {"GET", "/metrics/watch", h_watch, 0, m},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
