/* libFuzzer target for the TOML parser (the config file) and the quantity
 * parsers (config sizes, resourceLimits). A document that parses is
 * written back as TOML (inline forms only) and must parse to the same JSON;
 * a failure must leave an error message with a line and column. The first
 * line of the input is also fed to the quantity parsers, whose results
 * must agree with each other. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/quantity.h"
#include "common/toml.h"
#include "must.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void emit(struct osb_buf *b, json_t *v);

static void emit_string(struct osb_buf *b, const char *s, size_t n)
{
    MUST(osb_buf_adds(b, "\""));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            MUST(osb_buf_addf(b, "\\%c", c));
        else if (c < 0x20 || c == 0x7f)
            MUST(osb_buf_addf(b, "\\u%04X", c));
        else
            MUST(osb_buf_add(b, &s[i], 1));
    }
    MUST(osb_buf_adds(b, "\""));
}

static void emit_real(struct osb_buf *b, double d)
{
    char t[64];
    snprintf(t, sizeof t, "%.17g", d);
    MUST(osb_buf_adds(b, t));
    if (!strpbrk(t, ".e"))
        MUST(osb_buf_adds(b, ".0"));
}

static void emit_object(struct osb_buf *b, json_t *v)
{
    const char *k;
    json_t *x;
    int first = 1;
    MUST(osb_buf_adds(b, "{"));
    json_object_foreach(v, k, x)
    {
        MUST(osb_buf_adds(b, first ? "" : ", "));
        first = 0;
        emit_string(b, k, strlen(k));
        MUST(osb_buf_adds(b, " = "));
        emit(b, x);
    }
    MUST(osb_buf_adds(b, "}"));
}

static void emit(struct osb_buf *b, json_t *v)
{
    size_t i;
    json_t *x;
    switch (json_typeof(v)) {
    case JSON_OBJECT: emit_object(b, v); break;
    case JSON_ARRAY:
        MUST(osb_buf_adds(b, "["));
        json_array_foreach(v, i, x)
        {
            emit(b, x);
            MUST(osb_buf_adds(b, ",\n"));
        }
        MUST(osb_buf_adds(b, "]"));
        break;
    case JSON_STRING: emit_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: MUST(osb_buf_addf(b, "%lld", (long long)json_integer_value(v))); break;
    case JSON_REAL: emit_real(b, json_real_value(v)); break;
    case JSON_TRUE: MUST(osb_buf_adds(b, "true")); break;
    case JSON_FALSE: MUST(osb_buf_adds(b, "false")); break;
    case JSON_NULL: abort(); /* TOML has no null */
    }
}

static int depth(json_t *v)
{
    int d = 0, c;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) if ((c = depth(x)) > d) d = c;
        return d + 1;
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) if ((c = depth(x)) > d) d = c;
        return d + 1;
    }
    return 0;
}

static void round_trip(json_t *doc)
{
    if (depth(doc) > OSB_TOML_MAX_DEPTH) /* root keys are not inline */
        return;
    struct osb_buf b;
    osb_buf_init(&b, SIZE_MAX);
    const char *k;
    json_t *x;
    json_object_foreach(doc, k, x)
    {
        emit_string(&b, k, strlen(k));
        MUST(osb_buf_adds(&b, " = "));
        emit(&b, x);
        MUST(osb_buf_adds(&b, "\n"));
    }
    json_t *again = NULL;
    struct osb_err e = {0};
    if (osb_toml_parse(b.data ? b.data : "", b.len, &again, NULL, &e) < 0) {
        fprintf(stderr, "re-parse failed: %s\n%s\n", e.msg, b.data);
        abort();
    }
    if (!json_equal(doc, again)) {
        fprintf(stderr, "round trip differs:\n%s\n", b.data);
        abort();
    }
    json_decref(again);
    osb_buf_free(&b);
}

static void check_quantities(const uint8_t *data, size_t size)
{
    char s[64];
    size_t n = 0;
    while (n < size && n < sizeof s - 1 && data[n] != '\n')
        n++;
    memcpy(s, data, n);
    s[n] = 0;
    int64_t b = -1, m = -1;
    int rb = osb_quantity_bytes(s, &b), rm = osb_quantity_millicpu(s, &m);
    if ((rb == 0 && b < 0) || (rm == 0 && m < 0))
        abort();
    if (rm == 0 && rb < 0)
        abort(); /* a value that fits in millicpu fits in units */
    /* bytes = ceil(v), millicpu = ceil(1000 v) */
    if (rb == 0 && rm == 0 && !(m <= b * 1000 && (b == 0 || m > (b - 1) * 1000)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_quantities(data, size);
    json_t *doc = NULL, *lines = NULL;
    struct osb_err e = {0};
    int rc = osb_toml_parse((const char *)data, size, &doc, &lines, &e);
    if (rc < 0) {
        if (doc || lines || e.code != OSB_E_INVALID || strncmp(e.msg, "line ", 5) != 0)
            abort();
        return 0;
    }
    if (!json_is_object(doc) || !json_is_object(lines))
        abort();
    round_trip(doc);
    json_decref(doc);
    json_decref(lines);
    return 0;
}
