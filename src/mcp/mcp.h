/* opensandbox-mcp: an MCP server (JSON-RPC 2.0 over stdio or streamable
 * HTTP) whose tools drive an OpenSandbox server through libopensandbox.
 *
 *   rpc.c       JSON-RPC 2.0: messages, batches, the error codes
 *   protocol.c  the MCP lifecycle: initialize, ping, tools/list, tools/call
 *   tools.c     the tool registry, argument checks (schema.c), results
 *   tools_*.c   the tools; shape.c turns server documents into upstream's
 *   http.c      the streamable HTTP transport; main.c options and stdio */
#ifndef OSB_MCP_H
#define OSB_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "osb/opensandbox.h"

/* A persistent code context, one per (sandbox, language), for code_run. */
struct mcp_ctx {
    char *sandbox, *language, *id;
};

struct mcp {
    struct osbc_config cfg;
    osbc_client *c; /* made on first use */
    json_t *tools;  /* the tools/list array, built once */
    struct mcp_ctx *ctxs;
    size_t n_ctxs;
    char version[16]; /* the negotiated protocol revision; "" before initialize */
};

/* ---- JSON-RPC 2.0 (rpc.c) ---- */

/* Answers one JSON-RPC message or batch: the response, or NULL when none is
 * due (notifications, responses). Never fails: bad input gets the JSON-RPC
 * error it deserves. */
json_t *mcp_handle(struct mcp *m, json_t *msg);
/* The same for raw text (not JSON: -32700). */
json_t *mcp_handle_text(struct mcp *m, const char *text, size_t len);
/* A JSON-RPC error response (id NULL: null). */
json_t *mcp_rpc_error(json_t *id, int code, const char *message);

enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
};

/* ---- the MCP lifecycle (protocol.c) ---- */

/* The revisions served, newest first. */
extern const char *const mcp_revisions[];
bool mcp_revision_supported(const char *v);
/* JSON-RPC batches: allowed by 2025-03-26 and 2024-11-05, removed in
 * 2025-06-18; refused before initialize. */
bool mcp_batches_allowed(const struct mcp *m);
/* A request's result, or NULL with *code and msg set. */
json_t *mcp_request(struct mcp *m, const char *method, json_t *params, int *code, char *msg,
                    size_t cap);
void mcp_notification(struct mcp *m, const char *method, json_t *params);

/* ---- tools (tools.c) ---- */

json_t *mcp_tools_list(struct mcp *m);
/* A CallToolResult {content, structuredContent, isError}; NULL for an
 * unknown tool. */
json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args);

/* A tool's handler: the structured result (an object), or NULL with msg.
 * Content blocks of its own (an image) go under MCP_CONTENT: they lead the
 * result's content and stay out of structuredContent. */
#define MCP_CONTENT "_content"
typedef json_t *(*mcp_tool_fn)(struct mcp *m, json_t *args, char *msg, size_t cap);

/* Tool annotations (MCP 2025-03-26+): hints for the client's UI. */
enum { MCP_READ_ONLY = 1, MCP_DESTRUCTIVE = 2, MCP_IDEMPOTENT = 4 };

/* An inputSchema object: its properties and required names, nothing else. */
#define MCP_OBJ(props, req) \
    "{'type':'object','properties':{" props "},'required':[" req "],'additionalProperties':false}"

struct mcp_tool {
    const char *name;
    const char *title;
    const char *description;
    /* The inputSchema as JSON written with ' for " (so the tables read
     * well); no schema text contains a real apostrophe. */
    const char *schema;
    unsigned hints;
    mcp_tool_fn fn;
};

/* Drops the code contexts kept for a sandbox that is gone (tools_exec.c). */
void mcp_forget_sandbox(struct mcp *m, const char *sandbox_id);

extern const struct mcp_tool mcp_sandbox_tools[];
extern const struct mcp_tool mcp_exec_tools[];
extern const struct mcp_tool mcp_file_tools[];
extern const struct mcp_tool mcp_desktop_tools[];

/* The client, made on first use; NULL with msg filled. */
osbc_client *mcp_client(struct mcp *m, char *msg, size_t cap);
/* Fills msg from a library error; returns NULL (for `return mcp_fail(...)`). */
json_t *mcp_fail(char *msg, size_t cap, const char *what, const struct osbc_error *err);
/* Fills msg; returns NULL. */
json_t *mcp_failf(char *msg, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parses a library JSON answer (NULL on bad JSON, with msg). Frees text. */
json_t *mcp_doc(char *text, char *msg, size_t cap);
/* Text as a JSON string: invalid UTF-8 bytes become U+FFFD. */
json_t *mcp_text(const char *s, size_t len);
/* An argument: a string, or NULL when absent or null. */
const char *mcp_str(json_t *args, const char *key);
/* A number argument, or def when absent or null. */
double mcp_num(json_t *args, const char *key, double def);
/* Milliseconds since the epoch. */
long long mcp_now_ms(void);

/* Output longer than this is cut in a tool result (with a note saying where
 * the rest is). */
#define MCP_TEXT_MAX (100 * 1024)

/* ---- upstream's result shapes (shape.c) ---- */

/* The server's Sandbox as the SDK's SandboxInfo (snake_case). Takes info. */
json_t *mcp_shape_sandbox(json_t *info);
/* ListSandboxesResponse as PagedSandboxInfos. Takes list. */
json_t *mcp_shape_sandbox_list(json_t *list);
/* execd's metrics as SandboxMetrics. Takes m. */
json_t *mcp_shape_metrics(json_t *m);
/* {"expiresAt"} as SandboxRenewResponse. Takes r. */
json_t *mcp_shape_renew(json_t *r);
/* Endpoint as SandboxEndpoint ({endpoint, headers}). Takes e. */
json_t *mcp_shape_endpoint(json_t *e);
/* A Snapshot as SnapshotInfo. Takes s. */
json_t *mcp_shape_snapshot(json_t *s);

/* ---- schema checks (schema.c) ---- */

/* Checks args against a tool's inputSchema (the subset the tools use: type
 * (one or a list), enum, minimum, maximum, minLength, minItems, properties,
 * required, additionalProperties, items). false with msg naming the field. */
bool mcp_schema_check(json_t *schema, json_t *args, char *msg, size_t cap);

/* ---- streamable HTTP (http.c) ---- */

/* Serves until a fatal error; returns the exit status. */
int mcp_http_serve(struct mcp *m, const char *listen_addr);

#endif
