/* JSON-RPC 2.0 framing: one message or a batch in, the responses out.
 * Every malformed message gets its precise error (-32700 not JSON, -32600
 * not a request, -32601 unknown method, -32602 bad params); nothing here can
 * make the server exit. The methods themselves are protocol.c's. */
#include <stdio.h>
#include <string.h>

#include "mcp/mcp.h"

json_t *mcp_rpc_error(json_t *id, int code, const char *message)
{
    return json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", message);
}

/* An id as MCP allows it: a string or an integer (never null, never a
 * fraction). */
static bool id_ok(json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

static json_t *one(struct mcp *m, json_t *msg, bool in_batch)
{
    if (!json_is_object(msg))
        return mcp_rpc_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: not a JSON object");
    json_t *id = json_object_get(msg, "id");
    json_t *jmethod = json_object_get(msg, "method");
    const char *ver = json_string_value(json_object_get(msg, "jsonrpc"));
    json_t *reply_id = id_ok(id) ? id : NULL;
    if (!ver || strcmp(ver, "2.0") != 0)
        return mcp_rpc_error(reply_id, RPC_INVALID_REQUEST,
                             "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    if (!jmethod) {
        if (json_object_get(msg, "result") || json_object_get(msg, "error"))
            return NULL; /* a response to us: we send no requests, so nothing waits for it */
        return mcp_rpc_error(reply_id, RPC_INVALID_REQUEST, "Invalid Request: no \"method\"");
    }
    if (!json_is_string(jmethod))
        return mcp_rpc_error(reply_id, RPC_INVALID_REQUEST,
                             "Invalid Request: \"method\" must be a string");
    if (id && !id_ok(id))
        return mcp_rpc_error(NULL, RPC_INVALID_REQUEST,
                             "Invalid Request: \"id\" must be a string or an integer");
    const char *method = json_string_value(jmethod);
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params))
        return id ? mcp_rpc_error(id, RPC_INVALID_PARAMS,
                                  "Invalid params: \"params\" must be an object")
                  : NULL;
    if (in_batch && !strcmp(method, "initialize"))
        return mcp_rpc_error(reply_id, RPC_INVALID_REQUEST,
                             "Invalid Request: initialize must not be part of a batch");
    if (!id) { /* a notification: never answered, even when unknown */
        mcp_notification(m, method, params);
        return NULL;
    }
    int code = RPC_INTERNAL_ERROR;
    char text[512] = "";
    json_t *result = mcp_request(m, method, params, &code, text, sizeof text);
    if (!result)
        return mcp_rpc_error(id, code, text);
    return json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

json_t *mcp_handle(struct mcp *m, json_t *msg)
{
    if (!json_is_array(msg))
        return one(m, msg, false);
    if (!json_array_size(msg))
        return mcp_rpc_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: an empty batch");
    if (!mcp_batches_allowed(m)) {
        char text[200];
        snprintf(text, sizeof text,
                 "Invalid Request: MCP %s has no JSON-RPC batches; send one message at a time",
                 m->version[0] ? m->version : "before initialize");
        return mcp_rpc_error(NULL, RPC_INVALID_REQUEST, text);
    }
    json_t *out = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(msg, i, x)
    {
        json_t *r = one(m, x, true);
        if (r)
            json_array_append_new(out, r);
    }
    if (!json_array_size(out)) { /* only notifications: nothing at all comes back */
        json_decref(out);
        return NULL;
    }
    return out;
}

json_t *mcp_handle_text(struct mcp *m, const char *text, size_t len)
{
    json_error_t je;
    json_t *msg = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (!msg) {
        char buf[300];
        snprintf(buf, sizeof buf, "Parse error: %s (at byte %d)", je.text, je.position);
        return mcp_rpc_error(NULL, RPC_PARSE_ERROR, buf);
    }
    json_t *r = mcp_handle(m, msg);
    json_decref(msg);
    return r;
}
