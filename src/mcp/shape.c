/* Server documents in the shapes upstream's MCP server returns: its tools
 * answer with the Python SDK's models (SandboxInfo, PagedSandboxInfos,
 * SandboxMetrics, ...) dumped in snake_case, so an agent prompt or script
 * written against upstream reads the same fields here. */
#include <string.h>

#include "mcp/mcp.h"

/* v, or null when absent. */
static json_t *or_null(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

static json_t *status(json_t *s)
{
    if (!json_is_object(s))
        return json_pack("{s:s,s:n,s:n,s:n}", "state", "Unknown", "reason", "message",
                         "last_transition_at");
    return json_pack("{s:o,s:o,s:o,s:o}", "state", or_null(json_object_get(s, "state")), "reason",
                     or_null(json_object_get(s, "reason")), "message",
                     or_null(json_object_get(s, "message")), "last_transition_at",
                     or_null(json_object_get(s, "lastTransitionAt")));
}

static json_t *sandbox(json_t *s)
{
    json_t *img = json_object_get(s, "image"), *image = json_null();
    if (json_is_object(img)) {
        json_t *auth = json_object_get(img, "auth");
        image = json_pack("{s:o,s:o}", "image", or_null(json_object_get(img, "uri")), "auth",
                          json_is_object(auth) ? json_incref(auth) : json_null());
    }
    json_t *meta = json_object_get(s, "metadata");
    json_t *r =
        json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", or_null(json_object_get(s, "id")),
                  "status", status(json_object_get(s, "status")), "entrypoint",
                  or_null(json_object_get(s, "entrypoint")), "expires_at",
                  or_null(json_object_get(s, "expiresAt")), "created_at",
                  or_null(json_object_get(s, "createdAt")), "image", image, "snapshot_id",
                  or_null(json_object_get(s, "snapshotId")), "platform",
                  or_null(json_object_get(s, "platform")), "metadata",
                  json_is_object(meta) ? json_incref(meta) : json_object());
    return r;
}

json_t *mcp_shape_sandbox(json_t *info)
{
    json_t *r = sandbox(info);
    json_decref(info);
    return r;
}

json_t *mcp_shape_sandbox_list(json_t *list)
{
    json_t *items = json_array(), *x;
    size_t i;
    json_array_foreach(json_object_get(list, "items"), i, x)
        json_array_append_new(items, sandbox(x));
    json_t *p = json_object_get(list, "pagination");
    json_t *pg = json_object_get(p, "page"), *ps = json_object_get(p, "pageSize");
    json_t *ti = json_object_get(p, "totalItems"), *tp = json_object_get(p, "totalPages");
    json_t *r = json_pack("{s:o,s:{s:I,s:I,s:I,s:I,s:b}}", "sandbox_infos", items, "pagination",
                          "page", pg ? json_integer_value(pg) : (json_int_t)1, "page_size",
                          ps ? json_integer_value(ps) : (json_int_t)10, "total_items",
                          ti ? json_integer_value(ti) : (json_int_t)0, "total_pages",
                          tp ? json_integer_value(tp) : (json_int_t)0, "has_next_page",
                          json_is_true(json_object_get(p, "hasNextPage")));
    json_decref(list);
    return r;
}

/* The first of two names a value may have. */
static json_t *either(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    return or_null(v ? v : json_object_get(o, b));
}

json_t *mcp_shape_metrics(json_t *m)
{
    json_t *r = json_pack("{s:o,s:o,s:o,s:o,s:o}", "cpu_count", either(m, "cpu_count", "cpuCount"),
                          "cpu_used_percentage", either(m, "cpu_used_pct", "cpu_used_percentage"),
                          "memory_total_in_mib", either(m, "mem_total_mib", "memory_total_in_mib"),
                          "memory_used_in_mib", either(m, "mem_used_mib", "memory_used_in_mib"),
                          "timestamp", either(m, "timestamp", "ts"));
    json_decref(m);
    return r;
}

json_t *mcp_shape_renew(json_t *r)
{
    json_t *out = json_pack("{s:o}", "expires_at", either(r, "expiresAt", "expires_at"));
    json_decref(r);
    return out;
}

json_t *mcp_shape_endpoint(json_t *e)
{
    json_t *h = json_object_get(e, "headers");
    json_t *out = json_pack("{s:o,s:o}", "endpoint", or_null(json_object_get(e, "endpoint")),
                            "headers", json_is_object(h) ? json_incref(h) : json_object());
    json_decref(e);
    return out;
}

json_t *mcp_shape_snapshot(json_t *s)
{
    json_t *out = json_pack(
        "{s:o,s:o,s:o,s:o,s:o}", "id", or_null(json_object_get(s, "id")), "sandbox_id",
        either(s, "sandboxId", "sandbox_id"), "name", or_null(json_object_get(s, "name")), "status",
        status(json_object_get(s, "status")), "created_at", either(s, "createdAt", "created_at"));
    json_decref(s);
    return out;
}
