/* JSON-RPC 2.0 and the MCP lifecycle: initialize (revision negotiation),
 * ping, tools/list, tools/call. Every malformed message gets its precise
 * JSON-RPC error; nothing here can make the server exit. */
#include <stdio.h>
#include <string.h>

#include "common/version.h"
#include "mcp/mcp.h"

static const char *const revisions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

static json_t *rpc_error(json_t *id, int code, const char *message)
{
    return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", message);
}

static json_t *rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

static json_t *initialize(struct mcp *m, json_t *params)
{
    const char *want = json_string_value(json_object_get(params, "protocolVersion"));
    const char *use = revisions[0];
    for (size_t i = 0; want && i < sizeof revisions / sizeof *revisions; i++)
        if (!strcmp(want, revisions[i]))
            use = revisions[i];
    snprintf(m->version, sizeof m->version, "%s", use);
    m->initialized = true;
    return json_pack(
        "{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", use, "capabilities", "tools",
        "listChanged", 0, "serverInfo", "name", "opensandbox-mcp", "title", "OpenSandbox",
        "version", osb_version(), "instructions",
        "Use these tools to create and manage isolated sandboxes. Keep the sandbox_id that "
        "sandbox_create returns. Use command_run to execute shell commands, code_run for "
        "Python/JavaScript/... with state kept between calls, file_read/file_write for file "
        "IO, and sandbox_kill when done. Long outputs are cut; the result says where the "
        "rest is.");
}

static json_t *call(struct mcp *m, json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!json_is_object(params) || !name)
        return rpc_error(id, -32602, "tools/call needs params {name, arguments}");
    if (args && !json_is_object(args))
        return rpc_error(id, -32602, "tools/call: arguments must be an object");
    json_t *res = mcp_tools_call(m, name, args);
    if (!res) {
        char msg[300];
        snprintf(msg, sizeof msg, "Unknown tool: %s", name);
        return rpc_error(id, -32602, msg);
    }
    return rpc_result(id, res);
}

static json_t *one(struct mcp *m, json_t *msg)
{
    if (!json_is_object(msg))
        return rpc_error(NULL, -32600, "Invalid Request: not a JSON object");
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *ver = json_string_value(json_object_get(msg, "jsonrpc"));
    bool has_id = id && (json_is_string(id) || json_is_integer(id));
    if (id && !has_id && !json_is_null(id))
        return rpc_error(NULL, -32600, "Invalid Request: id must be a string or an integer");
    if (!ver || strcmp(ver, "2.0") != 0)
        return rpc_error(id, -32600, "Invalid Request: jsonrpc must be \"2.0\"");
    if (!method) {
        if (json_object_get(msg, "result") || json_object_get(msg, "error"))
            return NULL; /* a response to us: we send no requests, ignore it */
        return rpc_error(id, -32600, "Invalid Request: no method");
    }
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params) && !json_is_array(params))
        return has_id ? rpc_error(id, -32602, "params must be an object") : NULL;
    if (!has_id) /* a notification: notifications/initialized, cancelled, ... */
        return NULL;
    if (!strcmp(method, "initialize"))
        return rpc_result(id, initialize(m, params));
    if (!strcmp(method, "ping"))
        return rpc_result(id, json_object());
    if (!strcmp(method, "tools/list"))
        return rpc_result(id, json_pack("{s:O}", "tools", mcp_tools_list(m)));
    if (!strcmp(method, "tools/call"))
        return call(m, id, params);
    if (!strcmp(method, "resources/list"))
        return rpc_result(id, json_pack("{s:[]}", "resources"));
    if (!strcmp(method, "prompts/list"))
        return rpc_result(id, json_pack("{s:[]}", "prompts"));
    char text[300];
    snprintf(text, sizeof text, "Method not found: %s", method);
    return rpc_error(id, -32601, text);
}

json_t *mcp_handle(struct mcp *m, json_t *msg)
{
    if (!json_is_array(msg))
        return one(m, msg);
    if (!json_array_size(msg))
        return rpc_error(NULL, -32600, "Invalid Request: an empty batch");
    json_t *out = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(msg, i, x)
    {
        json_t *r = one(m, x);
        if (r)
            json_array_append_new(out, r);
    }
    if (!json_array_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *mcp_handle_text(struct mcp *m, const char *text, size_t len)
{
    json_error_t je;
    json_t *msg = json_loadb(text, len, 0, &je);
    if (!msg) {
        char buf[300];
        snprintf(buf, sizeof buf, "Parse error: %s", je.text);
        return rpc_error(NULL, -32700, buf);
    }
    json_t *r = mcp_handle(m, msg);
    json_decref(msg);
    return r;
}
