#include "server/metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/xalloc.h"

#define NBUCKETS 14
/* Seconds: a request on the loop is sub-millisecond, a create tens of
 * milliseconds, a pull or a cold start seconds. */
static const double secs[NBUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,    0.25,  0.5,    1,     2.5,  5,     10};
/* Bytes: a snapshot of a few written files to one of a filled disk. */
static const double sizes[NBUCKETS] = {
    65536.0,      262144.0,    1048576.0,   4194304.0,   16777216.0,   67108864.0,   268435456.0,
    1073741824.0, 2147483648., 4294967296., 8589934592., 17179869184., 34359738368., 68719476736.};

/* One labelled sample of a family: a counter, or a histogram. */
struct series {
    char *labels; /* rendered: name="value",... */
    uint64_t n;
    double sum;
    uint64_t b[NBUCKETS];
};

struct family {
    const char *name, *help;
    const double *bounds; /* a histogram's; NULL: a counter */
    struct series *s;
    size_t n;
};

enum {
    F_HTTP,
    F_HTTP_SECONDS,
    F_CREATES,
    F_CREATE_SECONDS,
    F_ADMIT_SECONDS,
    F_EVENTS,
    F_PULLS,
    F_PULL_BYTES,
    F_SNAPSHOTS,
    F_SNAPSHOT_BYTES,
    F_DELETE_SECONDS,
    F_CLAIMS,
    F_VAULT,
    F_N
};

struct osb_metrics {
    struct family f[F_N];
};

static void family(struct osb_metrics *m, int i, const char *name, const char *help, bool histo)
{
    m->f[i].name = name;
    m->f[i].help = help;
    m->f[i].bounds = histo ? secs : NULL;
}

struct osb_metrics *osb_metrics_new(void)
{
    struct osb_metrics *m = osb_xcalloc(1, sizeof *m);
    family(m, F_HTTP, "opensandbox_http_requests_total",
           "HTTP requests answered, by method, route and status (0: the client went away)", false);
    family(m, F_HTTP_SECONDS, "opensandbox_http_request_duration_seconds",
           "HTTP request time, first byte to the end of the answer, by route", true);
    family(m, F_CREATES, "opensandbox_sandbox_creates_total",
           "Create requests over, by outcome (ok, or the error code answered)", false);
    family(m, F_CREATE_SECONDS, "opensandbox_sandbox_create_seconds",
           "Create request to a ready sandbox", true);
    family(m, F_ADMIT_SECONDS, "opensandbox_admission_wait_seconds",
           "Time a create waited in the admission queue", true);
    family(m, F_PULLS, "opensandbox_image_pulls_total", "Image pulls over, by outcome", false);
    family(m, F_PULL_BYTES, "opensandbox_image_pulled_bytes_total",
           "Size of the pulled images' own layers (layers already in the store count too)", false);
    family(m, F_SNAPSHOTS, "opensandbox_snapshots_total", "Snapshots taken, by outcome", false);
    family(m, F_SNAPSHOT_BYTES, "opensandbox_snapshot_size_bytes",
           "Size of each snapshot taken (its own layer)", true);
    m->f[F_SNAPSHOT_BYTES].bounds = sizes;
    family(m, F_DELETE_SECONDS, "opensandbox_sandbox_delete_seconds",
           "Time to tear a sandbox down (a delete request or its expiry)", true);
    family(m, F_CLAIMS, "opensandbox_pool_claims_total",
           "Creates that asked a warm pool, by outcome (a ready member, or a fresh create)", false);
    family(m, F_EVENTS, "opensandbox_sandbox_operations_total",
           "Deletes, pauses, resumes, renewals and expiries", false);
    family(m, F_VAULT, "opensandbox_vault_requests_total",
           "Requests the credential vault proxy handled, by outcome (injected, no-binding, or "
           "the refusal's code)",
           false);
    return m;
}

void osb_metrics_free(struct osb_metrics *m)
{
    if (!m)
        return;
    for (int i = 0; i < F_N; i++) {
        for (size_t k = 0; k < m->f[i].n; k++)
            free(m->f[i].s[k].labels);
        free(m->f[i].s);
    }
    free(m);
}

void osb_metrics_label(const char *v, char *out, size_t size)
{
    size_t o = 0;
    for (; *v && o + 3 < size; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n') {
            out[o++] = '\\';
            out[o++] = *v == '\n' ? 'n' : *v;
        } else {
            out[o++] = *v;
        }
    }
    out[o] = 0;
}

/* The series with these labels, made on first use. Label sets are bounded
 * by construction (route patterns, status codes, error codes). */
static struct series *series_of(struct family *f, const char *labels)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->s[i].labels, labels) == 0)
            return &f->s[i];
    f->s = osb_xrealloc(f->s, (f->n + 1) * sizeof *f->s);
    f->s[f->n] = (struct series){.labels = osb_xstrdup(labels)};
    return &f->s[f->n++];
}

static void observe(const struct family *f, struct series *s, double v)
{
    s->n++;
    s->sum += v;
    for (int i = 0; i < NBUCKETS; i++)
        if (v <= f->bounds[i])
            s->b[i]++;
}

void osb_metrics_http(struct osb_metrics *m, const char *method, const char *route, int status,
                      double seconds)
{
    char r[256], me[32], l[400];
    osb_metrics_label(route ? route : "(none)", r, sizeof r);
    osb_metrics_label(method, me, sizeof me);
    snprintf(l, sizeof l, "method=\"%s\",route=\"%s\",status=\"%d\"", me, r, status);
    series_of(&m->f[F_HTTP], l)->n++;
    snprintf(l, sizeof l, "route=\"%s\"", r);
    observe(&m->f[F_HTTP_SECONDS], series_of(&m->f[F_HTTP_SECONDS], l), seconds);
}

void osb_metrics_create(struct osb_metrics *m, const char *code, double seconds)
{
    char c[128], l[160];
    osb_metrics_label(code ? code : "ok", c, sizeof c);
    snprintf(l, sizeof l, "outcome=\"%s\"", c);
    series_of(&m->f[F_CREATES], l)->n++;
    if (!code)
        observe(&m->f[F_CREATE_SECONDS], series_of(&m->f[F_CREATE_SECONDS], ""), seconds);
}

void osb_metrics_event(struct osb_metrics *m, enum osb_metric_event ev)
{
    static const char *const names[OSB_M_NEVENTS] = {"delete", "pause", "resume", "renew",
                                                     "expire"};
    char l[64];
    snprintf(l, sizeof l, "operation=\"%s\"", names[ev]);
    series_of(&m->f[F_EVENTS], l)->n++;
}

void osb_metrics_job(struct osb_metrics *m, enum osb_metric_job job, const char *outcome)
{
    static const int fam[OSB_M_NJOBS] = {F_PULLS, F_SNAPSHOTS, F_CLAIMS};
    char o[128], l[160];
    osb_metrics_label(outcome, o, sizeof o);
    snprintf(l, sizeof l, "outcome=\"%s\"", o);
    series_of(&m->f[fam[job]], l)->n++;
}

void osb_metrics_add_bytes(struct osb_metrics *m, enum osb_metric_bytes which, uint64_t n)
{
    (void)which; /* one kind so far */
    series_of(&m->f[F_PULL_BYTES], "")->n += n;
}

void osb_metrics_admission_wait(struct osb_metrics *m, double seconds)
{
    observe(&m->f[F_ADMIT_SECONDS], series_of(&m->f[F_ADMIT_SECONDS], ""), seconds);
}

void osb_metrics_delete(struct osb_metrics *m, double seconds)
{
    observe(&m->f[F_DELETE_SECONDS], series_of(&m->f[F_DELETE_SECONDS], ""), seconds);
}

void osb_metrics_snapshot_size(struct osb_metrics *m, uint64_t bytes)
{
    observe(&m->f[F_SNAPSHOT_BYTES], series_of(&m->f[F_SNAPSHOT_BYTES], ""), (double)bytes);
}

void osb_metrics_vault(struct osb_metrics *m, const char *outcome)
{
    char o[128], l[160];
    osb_metrics_label(outcome, o, sizeof o);
    snprintf(l, sizeof l, "outcome=\"%s\"", o);
    series_of(&m->f[F_VAULT], l)->n++;
}

/* name{labels,extra} value */
static int sample(struct osb_buf *out, const char *name, const char *labels, const char *extra,
                  double v)
{
    bool any = *labels || *extra;
    return osb_buf_addf(out, "%s%s%s%s%s%s %.17g\n", name, any ? "{" : "", labels,
                        *labels && *extra ? "," : "", extra, any ? "}" : "", v);
}

static int render_histogram(const struct family *f, const struct series *s, struct osb_buf *out)
{
    char name[160], le[48];
    int rc = 0;
    snprintf(name, sizeof name, "%s_bucket", f->name);
    for (int i = 0; i < NBUCKETS; i++) {
        snprintf(le, sizeof le, "le=\"%g\"", f->bounds[i]);
        rc |= sample(out, name, s->labels, le, (double)s->b[i]);
    }
    rc |= sample(out, name, s->labels, "le=\"+Inf\"", (double)s->n);
    snprintf(name, sizeof name, "%s_sum", f->name);
    rc |= sample(out, name, s->labels, "", s->sum);
    snprintf(name, sizeof name, "%s_count", f->name);
    rc |= sample(out, name, s->labels, "", (double)s->n);
    return rc;
}

int osb_metrics_render(const struct osb_metrics *m, struct osb_buf *out)
{
    int rc = 0;
    for (int i = 0; i < F_N; i++) {
        const struct family *f = &m->f[i];
        rc |= osb_buf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
                           f->bounds ? "histogram" : "counter");
        for (size_t k = 0; k < f->n; k++)
            rc |= f->bounds ? render_histogram(f, &f->s[k], out)
                            : sample(out, f->name, f->s[k].labels, "", (double)f->s[k].n);
    }
    return rc < 0 ? -1 : 0;
}
