/* Prometheus text to OTLP JSON metrics (otlp.h). The text is ours
 * (osb_metrics_text): HELP and TYPE before each family's samples. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "server/otlp.h"

struct conv {
    json_t *metrics;  /* the array built */
    json_t *cur;      /* the family's metric object */
    char name[160];   /* the family's name */
    char type[16];    /* counter | gauge | histogram */
    const char *help; /* borrowed until the TYPE line */
    size_t help_len;
    uint64_t start, now;
};

static json_t *attr(const char *k, const char *v)
{
    return json_pack("{s:s,s:{s:s}}", "key", k, "value", "stringValue", v);
}

/* name{k="v",...} value -> name, attributes (le apart), value. */
static int parse_sample(char *line, char **name, json_t **attrs, char *le, size_t le_size,
                        double *v)
{
    char *p = line + strcspn(line, "{ ");
    *attrs = json_array();
    *le = 0;
    bool labels = *p == '{';
    *p++ = 0;
    *name = line;
    while (labels && *p && *p != '}') {
        char *k = p, *eq = strchr(p, '=');
        if (!eq || eq[1] != '"')
            return -1;
        *eq = 0;
        char *o = eq + 2, *val = o;
        for (p = eq + 2; *p && *p != '"'; p++)
            *o++ = *p == '\\' && p[1] ? (++p, *p == 'n' ? '\n' : *p) : *p;
        if (*p != '"')
            return -1;
        *o = 0;
        p++;
        if (strcmp(k, "le") == 0)
            snprintf(le, le_size, "%s", val);
        else
            json_array_append_new(*attrs, attr(k, val));
        if (*p == ',')
            p++;
    }
    if (labels && *p++ != '}')
        return -1;
    char *end;
    *v = strtod(p, &end);
    return end == p ? -1 : 0;
}

/* The data point of these attributes in the family (made on first use). */
static json_t *point(struct conv *c, json_t *attrs)
{
    const char *kind = !strcmp(c->type, "counter")     ? "sum"
                       : !strcmp(c->type, "histogram") ? "histogram"
                                                       : "gauge";
    json_t *pts = json_object_get(json_object_get(c->cur, kind), "dataPoints"), *p;
    size_t i;
    json_array_foreach(pts, i, p) if (json_equal(json_object_get(p, "attributes"), attrs))
    {
        json_decref(attrs);
        return p;
    }
    p = json_pack("{s:o,s:s,s:s}", "attributes", attrs, "startTimeUnixNano", "0", "timeUnixNano",
                  "0");
    char t[24];
    snprintf(t, sizeof t, "%llu", (unsigned long long)c->start);
    json_object_set_new(p, "startTimeUnixNano", json_string(t));
    snprintf(t, sizeof t, "%llu", (unsigned long long)c->now);
    json_object_set_new(p, "timeUnixNano", json_string(t));
    json_array_append_new(pts, p);
    return p;
}

static void begin_family(struct conv *c, const char *name, const char *type)
{
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->type, sizeof c->type, "%s", type);
    json_t *data = json_pack("{s:[]}", "dataPoints");
    if (!strcmp(type, "counter"))
        json_object_set_new(data, "isMonotonic", json_true());
    if (strcmp(type, "gauge") != 0) /* 2: cumulative */
        json_object_set_new(data, "aggregationTemporality", json_integer(2));
    const char *kind = !strcmp(type, "counter")     ? "sum"
                       : !strcmp(type, "histogram") ? "histogram"
                                                    : "gauge";
    c->cur = json_pack("{s:s,s:s%,s:o}", "name", name, "description", c->help ? c->help : "",
                       c->help ? c->help_len : 0, kind, data);
    json_array_append_new(c->metrics, c->cur);
}

/* A histogram's _bucket (cumulative, by le), _sum or _count sample. */
static void histogram_sample(struct conv *c, const char *suffix, json_t *attrs, const char *le,
                             double v)
{
    json_t *p = point(c, attrs);
    if (!strcmp(suffix, "_sum")) {
        json_object_set_new(p, "sum", json_real(v));
    } else if (!strcmp(suffix, "_count")) {
        char n[32];
        snprintf(n, sizeof n, "%.0f", v);
        json_object_set_new(p, "count", json_string(n));
    } else { /* _bucket: kept cumulative here, made per-bucket at the end */
        if (!json_object_get(p, "bucketCounts")) {
            json_object_set_new(p, "bucketCounts", json_array());
            json_object_set_new(p, "explicitBounds", json_array());
        }
        json_array_append_new(json_object_get(p, "bucketCounts"), json_real(v));
        if (strcmp(le, "+Inf") != 0)
            json_array_append_new(json_object_get(p, "explicitBounds"),
                                  json_real(strtod(le, NULL)));
    }
}

static void sample(struct conv *c, const char *name, json_t *attrs, const char *le, double v)
{
    size_t n = strlen(c->name);
    if (!strcmp(c->type, "histogram") && !strncmp(name, c->name, n)) {
        histogram_sample(c, name + n, attrs, le, v);
        return;
    }
    json_object_set_new(point(c, attrs), "asDouble", json_real(v));
}

/* Cumulative bucket counts to per-bucket ones (as strings, OTLP's uint64). */
static void per_bucket(json_t *metrics)
{
    json_t *m, *p;
    size_t i, k;
    json_array_foreach(metrics, i, m)
    {
        json_t *pts = json_object_get(json_object_get(m, "histogram"), "dataPoints");
        json_array_foreach(pts, k, p)
        {
            json_t *b = json_object_get(p, "bucketCounts"), *out = json_array();
            double prev = 0;
            for (size_t j = 0; j < json_array_size(b); j++) {
                double cum = json_real_value(json_array_get(b, j));
                char s[32];
                snprintf(s, sizeof s, "%.0f", cum - prev);
                json_array_append_new(out, json_string(s));
                prev = cum;
            }
            json_object_set_new(p, "bucketCounts", out);
        }
    }
}

static int line_of(struct conv *c, char *line)
{
    if (!strncmp(line, "# HELP ", 7)) {
        char *sp = strchr(line + 7, ' ');
        c->help = sp ? sp + 1 : "";
        c->help_len = strlen(c->help);
        return 0;
    }
    if (!strncmp(line, "# TYPE ", 7)) {
        char *sp = strchr(line + 7, ' ');
        if (!sp)
            return -1;
        *sp = 0;
        begin_family(c, line + 7, sp + 1);
        c->help = NULL;
        return 0;
    }
    if (!*line || *line == '#')
        return 0;
    char *name, le[32];
    json_t *attrs;
    double v;
    int r = c->cur ? parse_sample(line, &name, &attrs, le, sizeof le, &v) : -1;
    if (r == 0)
        sample(c, name, attrs, le, v);
    else if (c->cur)
        json_decref(attrs);
    return r;
}

json_t *osb_otlp_metrics(const char *text, size_t len, uint64_t start_ns, uint64_t now_ns)
{
    struct conv c = {.metrics = json_array(), .start = start_ns, .now = now_ns};
    char *copy = osb_xstrndup(text, len), *save = NULL;
    int r = 0;
    for (char *line = strtok_r(copy, "\n", &save); line && r == 0;
         line = strtok_r(NULL, "\n", &save))
        r = line_of(&c, line);
    free(copy);
    if (r < 0) {
        json_decref(c.metrics);
        return NULL;
    }
    per_bucket(c.metrics);
    return c.metrics;
}
