/* opensandbox-mcp: an MCP server (JSON-RPC 2.0 over stdio or streamable
 * HTTP) whose tools drive an OpenSandbox server through libopensandbox. */
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
    char version[32]; /* the negotiated protocol revision */
    bool initialized;
};

/* Answers one JSON-RPC message or batch: the response, or NULL when none is
 * due (notifications). Never fails: bad input gets a JSON-RPC error. */
json_t *mcp_handle(struct mcp *m, json_t *msg);
/* The same for raw text (a parse error answers -32700). */
json_t *mcp_handle_text(struct mcp *m, const char *text, size_t len);

/* ---- tools (tools.c) ---- */
json_t *mcp_tools_list(struct mcp *m);
/* A CallToolResult: {content, structuredContent?, isError}. */
json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args);

/* A tool's handler: the structured result, or NULL with msg filled. */
typedef json_t *(*mcp_tool_fn)(struct mcp *m, json_t *args, char *msg, size_t cap);
struct mcp_tool {
    const char *name;
    const char *description;
    const char *schema; /* the inputSchema, JSON text */
    mcp_tool_fn fn;
};
/* The client, made on first use; NULL with msg filled. */
osbc_client *mcp_client(struct mcp *m, char *msg, size_t cap);
/* Fills msg from a library error; returns NULL (for `return mcp_fail(...)`). */
json_t *mcp_fail(char *msg, size_t cap, const char *what, const struct osbc_error *err);
/* Parses a library JSON answer (NULL on bad JSON, with msg). Frees text. */
json_t *mcp_doc(char *text, char *msg, size_t cap);
/* Text as a JSON string: invalid UTF-8 bytes become U+FFFD. */
json_t *mcp_text(const char *s, size_t len);

/* Output longer than this is cut in a tool result (with a note saying where
 * the rest is). */
#define MCP_TEXT_MAX (100 * 1024)

extern const struct mcp_tool mcp_sandbox_tools[];
extern const struct mcp_tool mcp_exec_tools[];
extern const struct mcp_tool mcp_file_tools[];

/* ---- schema checks (schema.c) ---- */
/* Checks args against a tool's inputSchema (the subset the tools use:
 * object, properties with type/enum/items, required, additionalProperties
 * false). false with msg naming the field. */
bool mcp_schema_check(json_t *schema, json_t *args, char *msg, size_t cap);

/* ---- streamable HTTP (http.c) ---- */
int mcp_http_serve(struct mcp *m, const char *listen_addr);

#endif
