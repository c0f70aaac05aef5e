/* The MCP lifecycle on top of JSON-RPC: initialize negotiates the revision
 * (the client's when we serve it, else our newest, which the client may
 * then refuse), then ping, tools/list and tools/call. Requests other than
 * initialize and ping before initialize are refused, as the lifecycle
 * requires initialization to come first. */
#include <stdio.h>
#include <string.h>

#include "common/version.h"
#include "mcp/mcp.h"

const char *const mcp_revisions[] = {"2025-06-18", "2025-03-26", "2024-11-05", NULL};

bool mcp_revision_supported(const char *v)
{
    for (size_t i = 0; v && mcp_revisions[i]; i++)
        if (!strcmp(v, mcp_revisions[i]))
            return true;
    return false;
}

bool mcp_batches_allowed(const struct mcp *m)
{
    return m->version[0] && strcmp(m->version, "2025-06-18") != 0;
}

static const char instructions[] =
    "Use these tools to create and manage isolated sandboxes. Keep the sandbox_id that "
    "sandbox_create or sandbox_connect returns. Use command_run to execute shell commands "
    "(command_run_in_session keeps the directory and variables between calls), code_run for "
    "Python/JavaScript/... with state kept between calls, file_read/file_write for file IO, "
    "sandbox_get_endpoint to reach a port, and sandbox_kill when done. Long outputs are cut; "
    "the result's note says where the rest is (for large files, read ranges).";

static json_t *initialize(struct mcp *m, json_t *params, int *code, char *msg, size_t cap)
{
    json_t *want = json_object_get(params, "protocolVersion");
    json_t *caps = json_object_get(params, "capabilities");
    json_t *info = json_object_get(params, "clientInfo");
    if (!json_is_string(want) || (caps && !json_is_object(caps)) ||
        (info && !json_is_object(info))) {
        *code = RPC_INVALID_PARAMS;
        snprintf(msg, cap,
                 "Invalid params: initialize needs {protocolVersion: string, "
                 "capabilities: object, clientInfo: object}");
        return NULL;
    }
    const char *v = json_string_value(want);
    snprintf(m->version, sizeof m->version, "%s", mcp_revision_supported(v) ? v : mcp_revisions[0]);
    return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", m->version,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
                     "opensandbox-mcp", "title", "OpenSandbox", "version", osb_version(),
                     "instructions", instructions);
}

static json_t *call(struct mcp *m, json_t *params, int *code, char *msg, size_t cap)
{
    json_t *name = json_object_get(params, "name");
    json_t *args = json_object_get(params, "arguments");
    *code = RPC_INVALID_PARAMS;
    if (!json_is_string(name)) {
        snprintf(msg, cap, "Invalid params: tools/call needs {name: string, arguments?: object}");
        return NULL;
    }
    if (args && !json_is_object(args) && !json_is_null(args)) {
        snprintf(msg, cap, "Invalid params: tools/call arguments must be an object");
        return NULL;
    }
    json_t *res = mcp_tools_call(m, json_string_value(name), json_is_object(args) ? args : NULL);
    if (!res)
        snprintf(msg, cap, "Unknown tool: %s", json_string_value(name));
    return res;
}

json_t *mcp_request(struct mcp *m, const char *method, json_t *params, int *code, char *msg,
                    size_t cap)
{
    if (!strcmp(method, "initialize"))
        return initialize(m, params, code, msg, cap);
    if (!strcmp(method, "ping"))
        return json_object();
    bool known = !strcmp(method, "tools/list") || !strcmp(method, "tools/call");
    if (known && !m->version[0]) {
        *code = RPC_INVALID_REQUEST;
        snprintf(msg, cap, "Invalid Request: %s before initialize", method);
        return NULL;
    }
    if (!strcmp(method, "tools/list"))
        return json_pack("{s:O}", "tools", mcp_tools_list(m));
    if (!strcmp(method, "tools/call"))
        return call(m, params, code, msg, cap);
    *code = RPC_METHOD_NOT_FOUND;
    snprintf(msg, cap, "Method not found: %s", method);
    return NULL;
}

void mcp_notification(struct mcp *m, const char *method, json_t *params)
{
    /* notifications/initialized ends the handshake (nothing to do: requests
     * are served once initialize was answered); notifications/cancelled
     * names a request already answered, since requests are served one at a
     * time; others are ignored, as JSON-RPC asks. */
    (void)m, (void)method, (void)params;
}
