/* Sandbox tools: upstream's lifecycle tools plus pause/resume, snapshots and
 * egress. A sandbox id is resolved on the server every time, so
 * connect_if_missing (upstream's local registry switch) is accepted and
 * always true here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

#define SID \
    "\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Sandbox identifier.\"}"
#define CIM \
    "\"connect_if_missing\":{\"type\":\"boolean\",\"description\":\"Accepted for compatibility; sandboxes are always looked up on the server.\"}"
#define STRMAP(d) \
    "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":\"" d "\"}"

/* A string map argument into kv pairs (pointing into args). */
static struct osbc_kv *kvs(json_t *obj, size_t *n)
{
    *n = json_object_size(obj);
    struct osbc_kv *kv = calloc(*n + 1, sizeof *kv);
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach(obj, k, v) kv[i++] = (struct osbc_kv){k, json_string_value(v)};
    return kv;
}

static const char *str(json_t *args, const char *k)
{
    return json_string_value(json_object_get(args, k));
}

static double num(json_t *args, const char *k, double def)
{
    json_t *v = json_object_get(args, k);
    return json_is_number(v) ? json_number_value(v) : def;
}

static json_t *info_of(osbc_client *c, char *id, char *msg, size_t cap)
{
    char *json;
    struct osbc_error err;
    if (osbc_sandbox_get(c, id, &json, &err) < 0) {
        free(id);
        return mcp_fail(msg, cap, "get", &err);
    }
    json_t *info = mcp_doc(json, msg, cap);
    json_t *r = info ? json_pack("{s:s,s:o}", "sandbox_id", id, "info", info) : NULL;
    free(id);
    return r;
}

static json_t *create(struct mcp *m, json_t *args, const char *snapshot, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *user = str(args, "auth_username"), *pw = str(args, "auth_password");
    if (!user != !pw)
        return snprintf(msg, cap, "auth_username and auth_password must be provided together"),
               NULL;
    double t = num(args, "timeout_seconds", 600);
    struct osbc_create_opts o = {
        .image = snapshot ? NULL : str(args, "image"),
        .snapshot_id = snapshot,
        .image_username = user,
        .image_password = pw,
        .timeout_s = t <= 0 ? OSBC_TIMEOUT_NONE : (long)ceil(t),
        .skip_health_check = json_is_true(json_object_get(args, "skip_health_check")),
        .ready_timeout_ms = (long)(num(args, "ready_timeout_seconds", 30) * 1000),
    };
    struct osbc_kv *env = kvs(json_object_get(args, "env"), &o.n_env);
    struct osbc_kv *meta = kvs(json_object_get(args, "metadata"), &o.n_metadata);
    struct osbc_kv *res = kvs(json_object_get(args, "resource"), &o.n_resources);
    struct osbc_kv *ext = kvs(json_object_get(args, "extensions"), &o.n_extensions);
    o.env = env, o.metadata = meta, o.resources = res, o.extensions = ext;
    json_t *ep = json_object_get(args, "entrypoint");
    const char **argv = calloc(json_array_size(ep) + 1, sizeof *argv);
    for (size_t i = 0; i < json_array_size(ep); i++)
        argv[i] = json_string_value(json_array_get(ep, i));
    o.entrypoint = argv;
    o.n_entrypoint = json_array_size(ep);
    json_t *np = json_object_get(args, "network_policy");
    char *np_text = np ? json_dumps(np, JSON_COMPACT) : NULL;
    o.network_policy_json = np_text;
    char *id = NULL;
    struct osbc_error err;
    json_t *r = NULL;
    if (osbc_sandbox_create(c, &o, NULL, &id, &err) < 0)
        mcp_fail(msg, cap, "create", &err);
    else
        r = info_of(c, id, msg, cap);
    free(np_text);
    free(argv);
    free(env), free(meta), free(res), free(ext);
    return r;
}

static json_t *t_create(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    return create(m, args, NULL, msg, cap);
}

static json_t *t_create_from_snapshot(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    return create(m, args, str(args, "snapshot_id"), msg, cap);
}

static json_t *t_connect(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    const char *id = str(args, "sandbox_id");
    struct osbc_error err;
    if (!c)
        return NULL;
    if (!json_is_true(json_object_get(args, "skip_health_check")) &&
        osbc_sandbox_wait_ready(c, id, (long)(num(args, "connect_timeout_seconds", 30) * 1000),
                                &err) < 0)
        return mcp_fail(msg, cap, "connect", &err);
    return info_of(c, strdup(id), msg, cap);
}

/* A call that returns nothing: {"status": done}. */
#define SIMPLE(fn_name, call, what, done) \
    static json_t *fn_name(struct mcp *m, json_t *args, char *msg, size_t cap) \
    { \
        osbc_client *c = mcp_client(m, msg, cap); \
        const char *id = str(args, "sandbox_id"); \
        struct osbc_error err; \
        if (!c) \
            return NULL; \
        if ((call) < 0) \
            return mcp_fail(msg, cap, what, &err); \
        return json_pack("{s:s}", "status", done); \
    }
SIMPLE(t_kill, osbc_sandbox_delete(c, id, &err), "kill", "killed")
SIMPLE(t_pause, osbc_sandbox_pause(c, id, &err), "pause", "paused")
SIMPLE(t_resume,
       osbc_sandbox_resume(c, id, (long)(num(args, "ready_timeout_seconds", 30) * 1000), &err),
       "resume", "resumed")

/* A call that returns the server's document. */
#define DOC(fn_name, call, what) \
    static json_t *fn_name(struct mcp *m, json_t *args, char *msg, size_t cap) \
    { \
        osbc_client *c = mcp_client(m, msg, cap); \
        const char *id = str(args, "sandbox_id"); \
        char *json; \
        struct osbc_error err; \
        if (!c) \
            return NULL; \
        if ((call) < 0) \
            return mcp_fail(msg, cap, what, &err); \
        return mcp_doc(json, msg, cap); \
    }
DOC(t_get_info, osbc_sandbox_get(c, id, &json, &err), "get info")
DOC(t_renew, osbc_sandbox_renew(c, id, (long)ceil(num(args, "timeout_seconds", 0)), &json, &err),
    "renew")
DOC(t_metrics, osbc_sandbox_metrics(c, id, &json, &err), "metrics")
DOC(t_endpoint, osbc_sandbox_endpoint(c, id, (int)num(args, "port", 0), -1, &json, &err),
    "endpoint")
DOC(t_egress_get, osbc_egress_get(c, id, &json, &err), "egress get")

static json_t *t_health(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *id = str(args, "sandbox_id");
    struct osbc_error err;
    bool ok = osbc_sandbox_ping(c, id, &err) == 0;
    if (!ok && err.code != OSBC_E_HTTP)
        return mcp_fail(msg, cap, "healthcheck", &err);
    return json_pack("{s:s,s:b}", "sandbox_id", id, "healthy", ok);
}

static json_t *t_list(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    json_t *f = json_object_get(args, "filter");
    json_t *states = json_object_get(f, "states");
    struct osbc_list_opts o = {.page = (int)num(f, "page", 0),
                               .page_size = (int)num(f, "page_size", 0)};
    const char **st = calloc(json_array_size(states) + 1, sizeof *st);
    for (size_t i = 0; i < json_array_size(states); i++)
        st[i] = json_string_value(json_array_get(states, i));
    o.states = st;
    o.n_states = json_array_size(states);
    struct osbc_kv *meta = kvs(json_object_get(f, "metadata"), &o.n_metadata);
    o.metadata = meta;
    char *json;
    struct osbc_error err;
    json_t *r = osbc_sandbox_list(c, &o, &json, &err) < 0 ? mcp_fail(msg, cap, "list", &err)
                                                          : mcp_doc(json, msg, cap);
    free(st);
    free(meta);
    return r;
}

static json_t *t_snapshot(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    char *json, *sid;
    struct osbc_error err;
    if (osbc_snapshot_create(c, str(args, "sandbox_id"), str(args, "name"), &json, &sid, &err) < 0)
        return mcp_fail(msg, cap, "snapshot", &err);
    if (json_is_false(json_object_get(args, "wait"))) {
        free(sid);
        return mcp_doc(json, msg, cap);
    }
    free(json);
    int rc = osbc_snapshot_wait_ready(c, sid, 0, &json, &err);
    free(sid);
    return rc < 0 ? mcp_fail(msg, cap, "snapshot", &err) : mcp_doc(json, msg, cap);
}

static json_t *t_egress_patch(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    char *rules = json_dumps(json_object_get(args, "rules"), JSON_COMPACT), *json;
    struct osbc_error err;
    int rc = osbc_egress_patch(c, str(args, "sandbox_id"), rules, &json, &err);
    free(rules);
    if (rc < 0)
        return mcp_fail(msg, cap, "egress patch", &err);
    free(json);
    if (osbc_egress_get(c, str(args, "sandbox_id"), &json, &err) < 0)
        return mcp_fail(msg, cap, "egress get", &err);
    return mcp_doc(json, msg, cap);
}

#define CREATE_PROPS \
    "\"auth_username\":{\"type\":\"string\",\"description\":\"Registry username for private images.\"}," \
    "\"auth_password\":{\"type\":\"string\",\"description\":\"Registry password or token.\"}," \
    "\"timeout_seconds\":{\"type\":\"number\",\"description\":\"Sandbox lifetime in seconds (default 600; 0 for no expiry).\"}," \
    "\"ready_timeout_seconds\":{\"type\":\"number\",\"description\":\"Max time to wait for readiness (default 30).\"}," \
    "\"health_check_polling_interval_ms\":{\"type\":\"integer\",\"description\":\"Accepted for compatibility.\"}," \
    "\"skip_health_check\":{\"type\":\"boolean\",\"description\":\"Return before the sandbox answers.\"}," \
    "\"env\":" STRMAP( \
        "Environment variables.") "," \
                                  "\"metadata\":" STRMAP( \
                                      "Metadata labels.") "," \
                                                          "\"resource\":" STRMAP( \
                                                              "Resource limits, e.g. {\\\"cpu\\\":\\\"1\\\",\\\"memory\\\":\\\"2Gi\\\"}.") "," \
                                                                                                                                           "\"extensions\":" STRMAP( \
                                                                                                                                               "Opaque extension parameters.") "," \
                                                                                                                                                                               "\"network_policy\":{\"type\":\"object\",\"description\":\"Egress policy: {defaultAction: allow|deny, egress: [{action, target}]}.\",\"properties\":{\"defaultAction\":{\"type\":\"string\",\"enum\":[\"allow\",\"deny\"]},\"egress\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\",\"enum\":[\"allow\",\"deny\"]},\"target\":{\"type\":\"string\",\"minLength\":1}},\"required\":[\"action\",\"target\"]}}}}," \
                                                                                                                                                                               "\"entrypoint\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Entrypoint argv (default tail -f /dev/null).\"}"

const struct mcp_tool mcp_sandbox_tools[] = {
    {"sandbox_create",
     "Create a sandbox from an image and wait until it is ready. Returns sandbox_id and its info.",
     "{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Image reference, e.g. python:3.11 (\\\"host\\\": the server's built-in image).\"}," CREATE_PROPS
     "},\"required\":[\"image\"],\"additionalProperties\":false}",
     t_create},
    {"sandbox_connect",
     "Connect to an existing sandbox (waits until it answers). Returns sandbox_id and its info.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"connect_timeout_seconds\":{\"type\":\"number\"},\"health_check_polling_interval_ms\":{\"type\":\"integer\"},\"skip_health_check\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_connect},
    {"sandbox_kill", "Terminate a sandbox.",
     "{\"type\":\"object\",\"properties\":{" SID
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_kill},
    {"sandbox_get_info", "Fetch a sandbox's info (state, image, metadata, expiry).",
     "{\"type\":\"object\",\"properties\":{" SID
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_get_info},
    {"sandbox_list", "List sandboxes, optionally filtered by states and metadata, paginated.",
     "{\"type\":\"object\",\"properties\":{\"filter\":{\"type\":\"object\",\"properties\":{\"states\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"metadata\":" STRMAP(
         "Metadata that must match.") ",\"page\":{\"type\":\"integer\",\"minimum\":1},\"page_size\":{\"type\":\"integer\",\"minimum\":1}},\"additionalProperties\":false}},\"additionalProperties\":false}",
     t_list},
    {"sandbox_renew", "Renew a sandbox's expiration: it expires timeout_seconds from now.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"timeout_seconds\":{\"type\":\"number\",\"minimum\":1}},\"required\":[\"sandbox_id\",\"timeout_seconds\"],\"additionalProperties\":false}",
     t_renew},
    {"sandbox_get_metrics", "A sandbox's CPU and memory use.",
     "{\"type\":\"object\",\"properties\":{" SID "," CIM
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_metrics},
    {"sandbox_healthcheck", "Whether a sandbox answers.",
     "{\"type\":\"object\",\"properties\":{" SID "," CIM
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_health},
    {"sandbox_get_endpoint",
     "The endpoint (host:port/path and headers) that reaches a port inside the sandbox.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"port\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Port inside the sandbox.\"}," CIM
     "},\"required\":[\"sandbox_id\",\"port\"],\"additionalProperties\":false}",
     t_endpoint},
    {"sandbox_pause", "Pause (freeze) a running sandbox.",
     "{\"type\":\"object\",\"properties\":{" SID
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_pause},
    {"sandbox_resume", "Resume a paused sandbox and wait until it answers.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"ready_timeout_seconds\":{\"type\":\"number\"}},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_resume},
    {"snapshot_create",
     "Snapshot a running sandbox's filesystem; waits until the snapshot is Ready unless wait is false.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"name\":{\"type\":\"string\",\"minLength\":1},\"wait\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_snapshot},
    {"sandbox_create_from_snapshot",
     "Create a sandbox from a snapshot. Returns sandbox_id and its info.",
     "{\"type\":\"object\",\"properties\":{\"snapshot_id\":{\"type\":\"string\",\"minLength\":1}," CREATE_PROPS
     "},\"required\":[\"snapshot_id\"],\"additionalProperties\":false}",
     t_create_from_snapshot},
    {"egress_get", "A sandbox's egress (outbound network) policy.",
     "{\"type\":\"object\",\"properties\":{" SID
     "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     t_egress_get},
    {"egress_patch",
     "Add or change egress rules (new rules win over old ones for the same target). Returns the policy.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"rules\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string\",\"enum\":[\"allow\",\"deny\"]},\"target\":{\"type\":\"string\",\"minLength\":1,\"description\":\"A domain (pypi.org, *.example.com) or an address/CIDR.\"}},\"required\":[\"action\",\"target\"],\"additionalProperties\":false}}},\"required\":[\"sandbox_id\",\"rules\"],\"additionalProperties\":false}",
     t_egress_patch},
    {NULL, NULL, NULL, NULL},
};
