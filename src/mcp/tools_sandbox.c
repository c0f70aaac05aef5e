/* Sandbox tools: upstream's lifecycle tools (same names, parameters and
 * results) plus pause/resume, snapshots and egress. A sandbox id is looked
 * up on the server every time, so upstream's connect_if_missing switch (for
 * its per-process registry) is accepted and changes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "mcp/mcp.h"

/* ---- schema fragments (JSON with ' for ") */
#define SID \
    "'sandbox_id':{'type':'string','minLength':1,'description':'Target sandbox identifier.'}"
#define CIM \
    "'connect_if_missing':{'type':'boolean','default':false,'description':'Accepted for " \
    "compatibility; sandboxes are always looked up on the server, no sandbox_connect needed.'}"
/* a string map (nullable): the start of its schema, a description follows */
#define STRMAP "'type':['object','null'],'additionalProperties':{'type':'string'},'default':null"
#define RULE \
    "{'type':'object','properties':{'action':{'type':'string','enum':['allow','deny']," \
    "'description':'Allow or deny matching targets.'},'target':{'type':'string','minLength':1," \
    "'description':'A domain (example.com, *.example.com), an IP address or a CIDR.'}}," \
    "'required':['action','target'],'additionalProperties':false}"
#define POLICY \
    "'network_policy':{'type':['object','null'],'default':null,'description':'Optional egress " \
    "network policy, e.g. {defaultAction: deny, egress: [{action: allow, target: pypi.org}]}; " \
    "defaultAction defaults to deny.','properties':{'defaultAction':{'type':['string','null']," \
    "'enum':['allow','deny',null]},'default_action':{'type':['string','null'],'enum':['allow'," \
    "'deny',null]},'egress':{'type':['array','null'],'items':" RULE ",'description':'Egress " \
    "rules evaluated in order.'}},'additionalProperties':false}"
#define CREATE_PROPS \
    "'timeout_seconds':{'type':'number','minimum':0,'default':600,'description':'Sandbox " \
    "lifetime in seconds (absolute TTL); 0: no expiry (kill it yourself).'}," \
    "'ready_timeout_seconds':{'type':'number','minimum':0,'default':30,'description':'Max time " \
    "to wait for readiness checks.'}," \
    "'health_check_polling_interval_ms':{'type':'integer','minimum':0,'default':200," \
    "'description':'Interval between health checks in ms (accepted; the client polls on its " \
    "own schedule).'}," \
    "'skip_health_check':{'type':'boolean','default':false,'description':'If true, return " \
    "before readiness checks complete.'}," \
    "'env':{" STRMAP ",'description':'Environment variables for the sandbox.'}," \
    "'metadata':{" STRMAP ",'description':'Custom metadata for the sandbox (string map).'}," \
    "'resource':{" STRMAP ",'description':'Resource limits as a string map, e.g. {\\'cpu\\': " \
    "\\'1\\', \\'memory\\': \\'2Gi\\'} (the default).'}," POLICY "," \
    "'extensions':{" STRMAP ",'description':'Opaque extension parameters passed through to the " \
    "server.'}," \
    "'entrypoint':{'type':['array','null'],'items':{'type':'string'},'minItems':1," \
    "'default':null,'description':'Entrypoint command list (default: tail -f /dev/null).'}"

/* A string map argument as kv pairs (pointing into args); NULL when absent. */
static struct osbc_kv *kvs(json_t *obj, size_t *n)
{
    *n = 0;
    if (!json_is_object(obj))
        return NULL;
    struct osbc_kv *kv = osb_xcalloc(json_object_size(obj) + 1, sizeof *kv);
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) kv[(*n)++] = (struct osbc_kv){k, json_string_value(v)};
    return kv;
}

/* network_policy as the API's NetworkPolicy: defaultAction deny unless
 * given (as upstream's model defaults it), default_action accepted too. */
static char *policy_json(json_t *np)
{
    if (!json_is_object(np))
        return NULL;
    json_t *p = json_object();
    json_t *da = json_object_get(np, "defaultAction");
    if (!da)
        da = json_object_get(np, "default_action");
    if (!da)
        json_object_set_new(p, "defaultAction", json_string("deny"));
    else if (json_is_string(da))
        json_object_set(p, "defaultAction", da);
    json_t *eg = json_object_get(np, "egress");
    if (json_is_array(eg))
        json_object_set(p, "egress", eg);
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return text;
}

/* {sandbox_id, info} as upstream's SandboxInfoResponse. Frees id. */
static json_t *info_response(osbc_client *c, char *id, char *msg, size_t cap)
{
    char *json;
    struct osbc_error err;
    json_t *info = NULL;
    if (osbc_sandbox_get(c, id, &json, &err) < 0)
        mcp_fail(msg, cap, "get info", &err);
    else
        info = mcp_doc(json, msg, cap);
    json_t *r =
        info ? json_pack("{s:s,s:o}", "sandbox_id", id, "info", mcp_shape_sandbox(info)) : NULL;
    free(id);
    return r;
}

static json_t *create(struct mcp *m, json_t *args, const char *snapshot, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *user = mcp_str(args, "auth_username"), *pw = mcp_str(args, "auth_password");
    if ((user && *user) || (pw && *pw))
        if (!user || !*user || !pw || !*pw)
            return mcp_failf(msg, cap, "auth_username and auth_password must be provided together");
    double t = mcp_num(args, "timeout_seconds", 600);
    struct osbc_create_opts o = {
        .image = mcp_str(args, "image"),
        .snapshot_id = snapshot,
        .image_username = user && *user ? user : NULL,
        .image_password = pw && *pw ? pw : NULL,
        .timeout_s = t <= 0 ? OSBC_TIMEOUT_NONE : (long)ceil(t),
        .skip_health_check = json_is_true(json_object_get(args, "skip_health_check")),
        .ready_timeout_ms = (long)(mcp_num(args, "ready_timeout_seconds", 30) * 1000),
    };
    if (o.ready_timeout_ms <= 0)
        o.ready_timeout_ms = 1;
    struct osbc_kv *env = kvs(json_object_get(args, "env"), &o.n_env);
    struct osbc_kv *meta = kvs(json_object_get(args, "metadata"), &o.n_metadata);
    struct osbc_kv *res = kvs(json_object_get(args, "resource"), &o.n_resources);
    struct osbc_kv *ext = kvs(json_object_get(args, "extensions"), &o.n_extensions);
    o.env = env, o.metadata = meta, o.resources = res, o.extensions = ext;
    json_t *ep = json_object_get(args, "entrypoint");
    const char **argv = osb_xcalloc(json_array_size(ep) + 1, sizeof *argv);
    for (size_t i = 0; i < json_array_size(ep); i++)
        argv[i] = json_string_value(json_array_get(ep, i));
    o.entrypoint = json_array_size(ep) ? argv : NULL;
    o.n_entrypoint = json_array_size(ep);
    char *np = policy_json(json_object_get(args, "network_policy"));
    o.network_policy_json = np;
    char *id = NULL;
    struct osbc_error err;
    json_t *r = NULL;
    if (osbc_sandbox_create(c, &o, NULL, &id, &err) < 0)
        mcp_fail(msg, cap, "create", &err);
    else
        r = info_response(c, id, msg, cap);
    free(np);
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
    return create(m, args, mcp_str(args, "snapshot_id"), msg, cap);
}

static json_t *t_connect(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    const char *id = mcp_str(args, "sandbox_id");
    struct osbc_error err;
    if (!c)
        return NULL;
    long ms = (long)(mcp_num(args, "connect_timeout_seconds", 30) * 1000);
    if (!json_is_true(json_object_get(args, "skip_health_check")) &&
        osbc_sandbox_wait_ready(c, id, ms > 0 ? ms : 1, &err) < 0)
        return mcp_fail(msg, cap, "connect", &err);
    return info_response(c, osb_xstrdup(id), msg, cap);
}

/* A call that returns nothing: {"status": done}, as upstream's StatusResponse. */
#define SIMPLE(fn_name, call, what, done) \
    static json_t *fn_name(struct mcp *m, json_t *args, char *msg, size_t cap) \
    { \
        osbc_client *c = mcp_client(m, msg, cap); \
        const char *id = mcp_str(args, "sandbox_id"); \
        struct osbc_error err; \
        if (!c) \
            return NULL; \
        if ((call) < 0) \
            return mcp_fail(msg, cap, what, &err); \
        return json_pack("{s:s}", "status", done); \
    }
SIMPLE(t_pause, osbc_sandbox_pause(c, id, &err), "pause", "paused")
SIMPLE(t_resume,
       osbc_sandbox_resume(c, id, (long)fmax(1, mcp_num(args, "ready_timeout_seconds", 30) * 1000),
                           &err),
       "resume", "resumed")

static json_t *t_kill(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    const char *id = mcp_str(args, "sandbox_id");
    struct osbc_error err;
    if (!c)
        return NULL;
    if (osbc_sandbox_delete(c, id, &err) < 0)
        return mcp_fail(msg, cap, "kill", &err);
    mcp_forget_sandbox(m, id); /* its code contexts went with it */
    return json_pack("{s:s}", "status", "killed");
}

/* A call that returns a server document, in upstream's shape. */
#define DOC(fn_name, call, what, shape) \
    static json_t *fn_name(struct mcp *m, json_t *args, char *msg, size_t cap) \
    { \
        osbc_client *c = mcp_client(m, msg, cap); \
        const char *id = mcp_str(args, "sandbox_id"); \
        char *json; \
        struct osbc_error err; \
        if (!c) \
            return NULL; \
        if ((call) < 0) \
            return mcp_fail(msg, cap, what, &err); \
        json_t *doc = mcp_doc(json, msg, cap); \
        return doc ? shape(doc) : NULL; \
    }
DOC(t_get_info, osbc_sandbox_get(c, id, &json, &err), "get info", mcp_shape_sandbox)
DOC(t_renew,
    osbc_sandbox_renew(c, id, (long)ceil(mcp_num(args, "timeout_seconds", 0)), &json, &err),
    "renew", mcp_shape_renew)
DOC(t_metrics, osbc_sandbox_metrics(c, id, &json, &err), "metrics", mcp_shape_metrics)
DOC(t_endpoint, osbc_sandbox_endpoint(c, id, (int)mcp_num(args, "port", 0), -1, &json, &err),
    "endpoint", mcp_shape_endpoint)
DOC(t_egress_get, osbc_egress_get(c, id, &json, &err), "egress get", )

/* Healthy when the sandbox is Running and execd answers /ping; an unknown
 * sandbox is an error (upstream fails to connect to it). */
static json_t *t_health(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *id = mcp_str(args, "sandbox_id");
    char *json;
    struct osbc_error err;
    if (osbc_sandbox_get(c, id, &json, &err) < 0)
        return mcp_fail(msg, cap, "healthcheck", &err);
    json_t *info = mcp_doc(json, msg, cap);
    if (!info)
        return NULL;
    const char *state =
        json_string_value(json_object_get(json_object_get(info, "status"), "state"));
    bool ok = state && !strcmp(state, "Running") && osbc_sandbox_ping(c, id, &err) == 0;
    json_decref(info);
    return json_pack("{s:s,s:b}", "sandbox_id", id, "healthy", ok);
}

static json_t *t_list(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    json_t *f = json_object_get(args, "filter");
    json_t *states = json_object_get(f, "states");
    struct osbc_list_opts o = {.page = (int)mcp_num(f, "page", 0),
                               .page_size = (int)mcp_num(f, "page_size", 0)};
    const char **st = osb_xcalloc(json_array_size(states) + 1, sizeof *st);
    for (size_t i = 0; i < json_array_size(states); i++)
        st[i] = json_string_value(json_array_get(states, i));
    o.states = st;
    o.n_states = json_array_size(states);
    struct osbc_kv *meta = kvs(json_object_get(f, "metadata"), &o.n_metadata);
    o.metadata = meta;
    char *json;
    struct osbc_error err;
    json_t *r = NULL;
    if (osbc_sandbox_list(c, &o, &json, &err) < 0)
        mcp_fail(msg, cap, "list", &err);
    else if ((r = mcp_doc(json, msg, cap)))
        r = mcp_shape_sandbox_list(r);
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
    if (osbc_snapshot_create(c, mcp_str(args, "sandbox_id"), mcp_str(args, "name"), &json, &sid,
                             &err) < 0)
        return mcp_fail(msg, cap, "snapshot", &err);
    if (json_is_false(json_object_get(args, "wait"))) {
        free(sid);
        json_t *doc = mcp_doc(json, msg, cap);
        return doc ? mcp_shape_snapshot(doc) : NULL;
    }
    free(json);
    long ms = (long)(mcp_num(args, "wait_timeout_seconds", 300) * 1000);
    int rc = osbc_snapshot_wait_ready(c, sid, ms > 0 ? ms : 1, &json, &err);
    free(sid);
    if (rc < 0)
        return mcp_fail(msg, cap, "snapshot", &err);
    json_t *doc = mcp_doc(json, msg, cap);
    return doc ? mcp_shape_snapshot(doc) : NULL;
}

static json_t *t_egress_patch(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *id = mcp_str(args, "sandbox_id");
    char *rules = json_dumps(json_object_get(args, "rules"), JSON_COMPACT), *json;
    struct osbc_error err;
    int rc = osbc_egress_patch(c, id, rules, &json, &err);
    free(rules);
    if (rc < 0)
        return mcp_fail(msg, cap, "egress patch", &err);
    free(json);
    if (osbc_egress_get(c, id, &json, &err) < 0)
        return mcp_fail(msg, cap, "egress get", &err);
    return mcp_doc(json, msg, cap);
}


const struct mcp_tool mcp_sandbox_tools[] = {
    {"sandbox_create", "Create sandbox",
     "Create a sandbox from an image and wait until it is ready (unless skip_health_check). "
     "Returns {sandbox_id, info}; keep the sandbox_id for the other tools.",
     MCP_OBJ(
         "'image':{'type':'string','minLength':1,'description':'Container image reference (e.g. "
         "python:3.11; host: the server’s built-in image).'},"
         "'auth_username':{'type':['string','null'],'default':null,'description':'Registry "
         "username for private images.'},"
         "'auth_password':{'type':['string','null'],'default':null,'description':'Registry "
         "password/token for private images.'}," CREATE_PROPS,
         "'image'"),
     0, t_create},
    {"sandbox_connect", "Connect to sandbox",
     "Connect to an existing sandbox: waits until it answers (unless skip_health_check). "
     "Returns {sandbox_id, info}.",
     MCP_OBJ(SID
             ",'connect_timeout_seconds':{'type':'number','minimum':0,'default':30,'description':"
             "'Max time to wait for readiness.'},"
             "'health_check_polling_interval_ms':{'type':'integer','minimum':0,'default':200,"
             "'description':'Interval between health checks in ms (accepted).'},"
             "'skip_health_check':{'type':'boolean','default':false,'description':'If true, "
             "return without waiting for readiness.'}",
             "'sandbox_id'"),
     MCP_READ_ONLY, t_connect},
    {"sandbox_kill", "Kill sandbox", "Terminate a sandbox by ID. Returns {status: killed}.",
     MCP_OBJ(SID, "'sandbox_id'"), MCP_DESTRUCTIVE | MCP_IDEMPOTENT, t_kill},
    {"sandbox_get_info", "Get sandbox info",
     "Fetch a sandbox’s info: id, status {state, reason, message}, image, entrypoint, metadata, "
     "created_at, expires_at.",
     MCP_OBJ(SID, "'sandbox_id'"), MCP_READ_ONLY, t_get_info},
    {"sandbox_list", "List sandboxes",
     "List sandboxes matching filter criteria. Returns {sandbox_infos, pagination}.",
     MCP_OBJ(
         "'filter':{'type':['object','null'],'default':null,'description':'SandboxFilter: states "
         "(OR), metadata (AND, exact), page (1-indexed), page_size.','properties':{'states':{"
         "'type':['array','null'],'items':{'type':'string'},'description':'Sandbox states, e.g. "
         "Running, Paused.'},'metadata':{" STRMAP ",'description':'Metadata key-value pairs that "
         "must match.'},'page':{'type':['integer','null'],'minimum':0,'description':'Page number "
         "(1-indexed).'},'page_size':{'type':['integer','null'],'minimum':1,'description':'Items "
         "per page.'}},'additionalProperties':false}",
         ""),
     MCP_READ_ONLY, t_list},
    {"sandbox_renew", "Renew sandbox",
     "Renew a sandbox’s expiration: it now expires timeout_seconds from now. Returns "
     "{expires_at}.",
     MCP_OBJ(SID ",'timeout_seconds':{'type':'number','minimum':1,'description':'New lifetime in "
                 "seconds, counted from now.'}",
             "'sandbox_id','timeout_seconds'"),
     MCP_IDEMPOTENT, t_renew},
    {"sandbox_get_metrics", "Get sandbox metrics",
     "Resource metrics of a sandbox: cpu_count, cpu_used_percentage, memory_total_in_mib, "
     "memory_used_in_mib, timestamp.",
     MCP_OBJ(SID "," CIM, "'sandbox_id'"), MCP_READ_ONLY, t_metrics},
    {"sandbox_healthcheck", "Check sandbox health",
     "Check whether a sandbox is healthy (running and answering). Returns {sandbox_id, "
     "healthy}.",
     MCP_OBJ(SID "," CIM, "'sandbox_id'"), MCP_READ_ONLY, t_health},
    {"sandbox_get_endpoint", "Get sandbox endpoint",
     "The network endpoint that reaches a port inside the sandbox: {endpoint (host:port/path, "
     "no scheme), headers (to send with every request)}.",
     MCP_OBJ(SID ",'port':{'type':'integer','minimum':1,'maximum':65535,'description':'Port number "
                 "inside the sandbox.'}," CIM,
             "'sandbox_id','port'"),
     MCP_READ_ONLY, t_endpoint},
    {"sandbox_pause", "Pause sandbox",
     "Pause (freeze) a running sandbox; its processes and memory are kept. Returns {status: "
     "paused}.",
     MCP_OBJ(SID, "'sandbox_id'"), MCP_IDEMPOTENT, t_pause},
    {"sandbox_resume", "Resume sandbox",
     "Resume a paused sandbox and wait until it answers. Returns {status: resumed}.",
     MCP_OBJ(SID ",'ready_timeout_seconds':{'type':'number','minimum':0,'default':30,'description':"
                 "'Max time to wait until it answers.'}",
             "'sandbox_id'"),
     MCP_IDEMPOTENT, t_resume},
    {"snapshot_create", "Snapshot sandbox",
     "Snapshot a sandbox’s filesystem; waits until the snapshot is Ready unless wait is false. "
     "Returns the snapshot {id, sandbox_id, name, status, created_at}; use its id with "
     "sandbox_create_from_snapshot.",
     MCP_OBJ(SID
             ",'name':{'type':['string','null'],'minLength':1,'description':'Optional snapshot "
             "name.'},'wait':{'type':'boolean','default':true,'description':'Wait until the "
             "snapshot is Ready (or Failed).'},'wait_timeout_seconds':{'type':'number','minimum':0,"
             "'default':300,'description':'Max time to wait.'}",
             "'sandbox_id'"),
     0, t_snapshot},
    {"sandbox_create_from_snapshot", "Create sandbox from snapshot",
     "Create a sandbox from a snapshot (made with snapshot_create) and wait until it is ready. "
     "Returns {sandbox_id, info}.",
     MCP_OBJ(
         "'snapshot_id':{'type':'string','minLength':1,'description':'Snapshot identifier.'}," CREATE_PROPS,
         "'snapshot_id'"),
     0, t_create_from_snapshot},
    {"egress_get", "Get egress policy",
     "A sandbox’s egress (outbound network) policy: {mode, enforcementMode, policy: "
     "{defaultAction, egress: [{action, target}]}}. Only sandboxes created with a "
     "network_policy have one.",
     MCP_OBJ(SID, "'sandbox_id'"), MCP_READ_ONLY, t_egress_get},
    {"egress_patch", "Change egress rules",
     "Add or change egress rules of a sandbox created with a network_policy; a new rule "
     "replaces an old one for the same target and is evaluated first. Returns the policy after "
     "the change.",
     MCP_OBJ(SID ",'rules':{'type':'array','minItems':1,'items':" RULE
                 ",'description':'Rules to add or change.'}",
             "'sandbox_id','rules'"),
     MCP_IDEMPOTENT, t_egress_patch},
    {NULL, NULL, NULL, NULL, 0, NULL},
};
