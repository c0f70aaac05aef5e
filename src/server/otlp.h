/* OpenTelemetry export: when OTEL_EXPORTER_OTLP_ENDPOINT (or the
 * _METRICS_/_LOGS_ variants) is set, the server posts what GET /metrics
 * shows and its log lines over OTLP/HTTP with the JSON encoding
 * (docs/operations.md). Posts run on the thread pool, one per signal at a
 * time; nothing waits for them. */
#ifndef OSB_SRV_OTLP_H
#define OSB_SRV_OTLP_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct osb_server;

/* Reads the environment and starts the timers; nothing when unset. */
int osb_otlp_open(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
/* Stops the timers (a post in flight finishes on its own). */
void osb_otlp_close(struct osb_server *srv);

/* otlp_conv.c: Prometheus text (osb_metrics_text) as the "metrics" array
 * of an OTLP ScopeMetrics: counters become cumulative monotonic sums,
 * gauges gauges, histograms explicit-bucket histograms (cumulative buckets
 * made per-bucket). start/now: Unix nanoseconds. NULL when a line does not
 * parse. */
json_t *osb_otlp_metrics(const char *text, size_t len, uint64_t start_ns, uint64_t now_ns);
#endif
