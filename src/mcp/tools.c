/* The tool registry: tools/list from the three tables, and tools/call with
 * the argument check first and every failure as a tool error (isError),
 * which the agent reads, never a protocol error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

static const struct mcp_tool *const tables[] = {mcp_sandbox_tools, mcp_exec_tools, mcp_file_tools};

static const struct mcp_tool *find(const char *name, json_t **schema, struct mcp *m)
{
    json_t *list = mcp_tools_list(m);
    size_t k = 0;
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const struct mcp_tool *x = tables[t]; x->name; x++, k++)
            if (!strcmp(x->name, name)) {
                *schema = json_object_get(json_array_get(list, k), "inputSchema");
                return x;
            }
    return NULL;
}

json_t *mcp_tools_list(struct mcp *m)
{
    if (m->tools)
        return m->tools;
    m->tools = json_array();
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const struct mcp_tool *x = tables[t]; x->name; x++) {
            json_error_t je;
            json_t *schema = json_loads(x->schema, 0, &je);
            if (!schema) { /* a bug in a table: say so loudly, keep serving */
                fprintf(stderr, "opensandbox-mcp: schema of %s: %s\n", x->name, je.text);
                schema = json_pack("{s:s}", "type", "object");
            }
            json_array_append_new(m->tools,
                                  json_pack("{s:s,s:s,s:o}", "name", x->name, "description",
                                            x->description, "inputSchema", schema));
        }
    return m->tools;
}

static json_t *text_result(const char *text, bool is_error)
{
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
                     is_error);
}

json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args)
{
    json_t *schema = NULL;
    const struct mcp_tool *t = find(name, &schema, m);
    if (!t)
        return NULL;
    char msg[1024] = "";
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    if (!mcp_schema_check(schema, args, msg, sizeof msg)) {
        json_decref(empty);
        char buf[1200];
        snprintf(buf, sizeof buf, "Invalid arguments for %s: %s", name, msg);
        return text_result(buf, true);
    }
    json_t *r = t->fn(m, args, msg, sizeof msg);
    json_decref(empty);
    if (!r) {
        char buf[1200];
        snprintf(buf, sizeof buf, "%s failed: %s", name, *msg ? msg : "unknown error");
        return text_result(buf, true);
    }
    char *text = json_dumps(r, JSON_INDENT(2) | JSON_ENCODE_ANY);
    json_t *res = text_result(text ? text : "null", false);
    free(text);
    /* structuredContent must be an object (MCP 2025-06-18). */
    if (json_is_object(r))
        json_object_set(res, "structuredContent", r);
    json_decref(r);
    return res;
}

osbc_client *mcp_client(struct mcp *m, char *msg, size_t cap)
{
    if (m->c)
        return m->c;
    struct osbc_error err;
    m->cfg.user_agent = "opensandbox-mcp";
    if (osbc_client_new(&m->cfg, &m->c, &err) < 0) {
        snprintf(msg, cap, "connection settings: %s", err.message);
        return NULL;
    }
    return m->c;
}

json_t *mcp_fail(char *msg, size_t cap, const char *what, const struct osbc_error *err)
{
    if (err->server_code[0])
        snprintf(msg, cap, "%s: %s (%s, HTTP %d)", what, err->message, err->server_code,
                 err->http_status);
    else
        snprintf(msg, cap, "%s: %s", what, err->message);
    return NULL;
}

json_t *mcp_doc(char *text, char *msg, size_t cap)
{
    json_t *j = json_loads(text ? text : "", JSON_DECODE_ANY, NULL);
    free(text);
    if (!j)
        snprintf(msg, cap, "the server's answer is not JSON");
    return j;
}

json_t *mcp_text(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    if (j)
        return j;
    /* not UTF-8: replace each bad byte with U+FFFD */
    char *o = malloc(len * 3 + 1);
    size_t n = 0;
    for (size_t i = 0; o && i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = k && i + k <= len;
        for (size_t x = 1; ok && x < k; x++)
            ok = ((unsigned char)s[i + x] >> 6) == 2;
        if (ok && k > 1) {
            json_t *t = json_stringn(s + i, k);
            ok = t != NULL;
            json_decref(t);
        }
        if (ok && c) {
            memcpy(o + n, s + i, k);
            n += k;
            i += k;
        } else {
            memcpy(o + n, "\xef\xbf\xbd", 3);
            n += 3;
            i++;
        }
    }
    j = o ? json_stringn(o, n) : NULL;
    free(o);
    return j ? j : json_string("");
}
