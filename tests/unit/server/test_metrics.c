/* src/server/metrics.c and otlp_conv.c, the pure parts: what the counters
 * and histograms render in Prometheus' text format (labels escaped, buckets
 * cumulative, +Inf, _sum and _count), and the OTLP JSON the converter makes
 * of that text (per-bucket counts adding up to the count). */
#include <jansson.h>
#include <string.h>

#include "common/buf.h"
#include "server/metrics.h"
#include "server/otlp.h"
#include "tap.h"

static char *render(struct osb_metrics *m)
{
    struct osb_buf b;
    osb_buf_init(&b, 1 << 20);
    OK(osb_metrics_render(m, &b) == 0, "renders");
    size_t n;
    return osb_buf_steal(&b, &n);
}

int main(void)
{
    char l[64];
    osb_metrics_label("a\"b\\c\nd", l, sizeof l);
    IS_STR(l, "a\\\"b\\\\c\\nd", "a label value escapes \", \\ and newline");

    struct osb_metrics *m = osb_metrics_new();
    osb_metrics_http(m, "GET", "/v1/sandboxes/:sandboxId", 404, 0.002);
    osb_metrics_http(m, "GET", "/v1/sandboxes/:sandboxId", 404, 0.2);
    osb_metrics_http(m, "POST", NULL, 0, 20);
    osb_metrics_create(m, NULL, 0.015);
    osb_metrics_create(m, "SANDBOX::START_FAILED", 1);
    osb_metrics_event(m, OSB_M_PAUSE);
    osb_metrics_vault(m, "VAULT::HOST_MISMATCH");
    char *t = render(m);
    OK(strstr(t, "opensandbox_http_requests_total{method=\"GET\",route=\"/v1/sandboxes/"
                 ":sandboxId\",status=\"404\"} 2\n"),
       "a counter by method, route and status");
    OK(strstr(t,
              "opensandbox_http_requests_total{method=\"POST\",route=\"(none)\",status=\"0\"} 1"),
       "no route: (none); no answer: status 0");
    OK(strstr(t, "opensandbox_http_request_duration_seconds_bucket{route=\"/v1/sandboxes/"
                 ":sandboxId\",le=\"0.0025\"} 1\n"),
       "histogram buckets are cumulative (0.002 is under 0.0025)");
    OK(strstr(t, "le=\"0.25\"} 2\n"), "  both under 0.25");
    OK(strstr(t,
              "opensandbox_http_request_duration_seconds_bucket{route=\"(none)\",le=\"10\"} 0\n"),
       "  20 s is above the last bound");
    OK(strstr(t,
              "opensandbox_http_request_duration_seconds_bucket{route=\"(none)\",le=\"+Inf\"} 1\n"),
       "  but in +Inf");
    OK(strstr(t, "opensandbox_http_request_duration_seconds_count{route=\"(none)\"} 1\n") &&
           strstr(t, "opensandbox_http_request_duration_seconds_sum{route=\"(none)\"} 20\n"),
       "  _count and _sum");
    OK(strstr(t, "opensandbox_sandbox_creates_total{outcome=\"ok\"} 1\n") &&
           strstr(t, "opensandbox_sandbox_creates_total{outcome=\"SANDBOX::START_FAILED\"} 1\n"),
       "creates by outcome");
    OK(strstr(t, "opensandbox_sandbox_create_seconds_count 1\n"),
       "only the ready one is in the create-to-ready histogram (no labels)");
    OK(strstr(t, "# TYPE opensandbox_sandbox_create_seconds histogram\n"), "TYPE lines");

    json_t *o = osb_otlp_metrics(t, strlen(t), 1, 2);
    OK(o && json_is_array(o), "the text converts to OTLP metrics");
    json_t *x, *h = NULL, *c = NULL;
    size_t i;
    json_array_foreach(o, i, x)
    {
        const char *n = json_string_value(json_object_get(x, "name"));
        if (n && !strcmp(n, "opensandbox_http_request_duration_seconds"))
            h = x;
        if (n && !strcmp(n, "opensandbox_sandbox_creates_total"))
            c = x;
    }
    json_t *sum = json_object_get(c, "sum");
    OK(sum && json_is_true(json_object_get(sum, "isMonotonic")) &&
           json_integer_value(json_object_get(sum, "aggregationTemporality")) == 2,
       "a counter is a monotonic cumulative sum");
    json_t *pts = json_object_get(json_object_get(h, "histogram"), "dataPoints");
    OK(json_array_size(pts) == 2, "a histogram data point per label set");
    json_array_foreach(pts, i, x)
    {
        json_t *b = json_object_get(x, "bucketCounts");
        long long total = 0;
        for (size_t k = 0; k < json_array_size(b); k++)
            total += strtoll(json_string_value(json_array_get(b, k)), NULL, 10);
        OK(json_array_size(b) == json_array_size(json_object_get(x, "explicitBounds")) + 1 &&
               total == strtoll(json_string_value(json_object_get(x, "count")), NULL, 10),
           "  per-bucket counts, one more than the bounds, adding up to the count");
    }
    OK(osb_otlp_metrics("# TYPE x counter\nx{a=\"b} 1\n", 26, 1, 2) == NULL,
       "a line that does not parse: NULL");
    json_decref(o);
    free(t);
    osb_metrics_free(m);
    return tap_done();
}
