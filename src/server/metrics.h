/* The server's counters and histograms, rendered in Prometheus' text format
 * (docs/operations.md lists every family). Updated on the loop thread by
 * the code that sees the event; what can be read from state at scrape time
 * (sandboxes by state, the admission queue, the process) is not kept here
 * but rendered by the scrape handler (api_metrics.c). */
#ifndef OSB_SRV_METRICS_H
#define OSB_SRV_METRICS_H
#include <stddef.h>
#include <stdint.h>

struct osb_buf;
struct osb_metrics;

enum osb_metric_event {
    OSB_M_DELETE,
    OSB_M_PAUSE,
    OSB_M_RESUME,
    OSB_M_RENEW,
    OSB_M_EXPIRE, /* a sandbox deleted by its TTL */
    OSB_M_NEVENTS
};

struct osb_metrics *osb_metrics_new(void);
void osb_metrics_free(struct osb_metrics *m);

/* One HTTP request done: route is the matched pattern (NULL: none),
 * status 0 when the client went away before an answer. */
void osb_metrics_http(struct osb_metrics *m, const char *method, const char *route, int status,
                      double seconds);
/* One create job over: code NULL when the sandbox became ready (seconds:
 * request to ready), else the error code it was answered with. */
void osb_metrics_create(struct osb_metrics *m, const char *code, double seconds);
void osb_metrics_event(struct osb_metrics *m, enum osb_metric_event ev);
/* Outcomes of the server's other jobs: "ok" or the error's code/kind. */
enum osb_metric_job { OSB_M_PULL, OSB_M_SNAPSHOT, OSB_M_POOL_CLAIM, OSB_M_NJOBS };
void osb_metrics_job(struct osb_metrics *m, enum osb_metric_job job, const char *outcome);
/* Byte counters. */
enum osb_metric_bytes { OSB_M_PULL_BYTES, OSB_M_NBYTES };
void osb_metrics_add_bytes(struct osb_metrics *m, enum osb_metric_bytes which, uint64_t n);
/* A sandbox torn down (delete or expiry): seconds the teardown took. */
void osb_metrics_delete(struct osb_metrics *m, double seconds);
/* A snapshot made: the size of its own layer. */
void osb_metrics_snapshot_size(struct osb_metrics *m, uint64_t bytes);
/* A create's wait in the admission queue (0 when admitted at once). */
void osb_metrics_admission_wait(struct osb_metrics *m, double seconds);
/* One request the credential vault proxy handled: "injected",
 * "no-binding" or the refusal's code. */
void osb_metrics_vault(struct osb_metrics *m, const char *outcome);

/* Appends every family (HELP, TYPE, samples) to out: 0, or -1 when out is
 * full. */
int osb_metrics_render(const struct osb_metrics *m, struct osb_buf *out);
/* A label value with \, " and newline escaped, into out (NUL-terminated,
 * cut to fit). */
void osb_metrics_label(const char *v, char *out, size_t size);
#endif
