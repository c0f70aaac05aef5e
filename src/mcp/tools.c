/* The tool registry: tools/list from the three tables, and tools/call with
 * the argument check first and every failure as a tool error (isError),
 * which the agent reads, never a protocol error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/xalloc.h"
#include "mcp/mcp.h"

static const struct mcp_tool *const tables[] = {mcp_sandbox_tools, mcp_exec_tools, mcp_file_tools,
                                                mcp_desktop_tools};

/* The schema text with ' turned into ". */
static json_t *load_schema(const struct mcp_tool *t)
{
    char *text = osb_xstrdup(t->schema);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t je;
    json_t *schema = json_loads(text, 0, &je);
    free(text);
    if (!schema) { /* a bug in a table: say so loudly, keep serving */
        fprintf(stderr, "opensandbox-mcp: schema of %s: %s at %d\n", t->name, je.text, je.position);
        schema = json_pack("{s:s}", "type", "object");
    }
    return schema;
}

static json_t *tool_entry(const struct mcp_tool *t)
{
    json_t *ann =
        json_pack("{s:s,s:b}", "title", t->title, "readOnlyHint", (t->hints & MCP_READ_ONLY) != 0);
    if (!(t->hints & MCP_READ_ONLY)) {
        json_object_set_new(ann, "destructiveHint", json_boolean(t->hints & MCP_DESTRUCTIVE));
        json_object_set_new(ann, "idempotentHint", json_boolean(t->hints & MCP_IDEMPOTENT));
    }
    return json_pack("{s:s,s:s,s:s,s:o,s:o}", "name", t->name, "title", t->title, "description",
                     t->description, "inputSchema", load_schema(t), "annotations", ann);
}

json_t *mcp_tools_list(struct mcp *m)
{
    if (m->tools)
        return m->tools;
    m->tools = json_array();
    for (size_t k = 0; k < sizeof tables / sizeof *tables; k++)
        for (const struct mcp_tool *t = tables[k]; t->name; t++)
            json_array_append_new(m->tools, tool_entry(t));
    return m->tools;
}

static const struct mcp_tool *find(struct mcp *m, const char *name, json_t **schema)
{
    json_t *list = mcp_tools_list(m);
    size_t i = 0;
    for (size_t k = 0; k < sizeof tables / sizeof *tables; k++)
        for (const struct mcp_tool *t = tables[k]; t->name; t++, i++)
            if (!strcmp(t->name, name)) {
                *schema = json_object_get(json_array_get(list, i), "inputSchema");
                return t;
            }
    return NULL;
}

static json_t *error_result(const char *text)
{
    return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError", 1);
}

json_t *mcp_tools_call(struct mcp *m, const char *name, json_t *args)
{
    json_t *schema = NULL;
    const struct mcp_tool *t = find(m, name, &schema);
    if (!t)
        return NULL;
    char msg[1024] = "", buf[1200];
    json_t *empty = args ? NULL : json_object();
    if (!args)
        args = empty;
    if (!mcp_schema_check(schema, args, msg, sizeof msg)) {
        json_decref(empty);
        snprintf(buf, sizeof buf, "Invalid arguments for %s: %s", name, msg);
        return error_result(buf);
    }
    json_t *r = t->fn(m, args, msg, sizeof msg);
    json_decref(empty);
    if (!r) {
        snprintf(buf, sizeof buf, "%s failed: %s", name, *msg ? msg : "unknown error");
        return error_result(buf);
    }
    /* The result as text (for clients before 2025-06-18 and for the model)
     * and as structuredContent, which must be an object. */
    json_t *content = json_incref(json_object_get(r, MCP_CONTENT));
    json_object_del(r, MCP_CONTENT);
    if (!json_is_array(content)) {
        json_decref(content);
        content = json_array();
    }
    char *text = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
    json_array_append_new(content,
                          json_pack("{s:s,s:s}", "type", "text", "text", text ? text : "{}"));
    free(text);
    return json_pack("{s:o,s:o,s:b}", "content", content, "structuredContent", r, "isError", 0);
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

json_t *mcp_failf(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
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

const char *mcp_str(json_t *args, const char *key)
{
    return json_string_value(json_object_get(args, key));
}

double mcp_num(json_t *args, const char *key, double def)
{
    json_t *v = json_object_get(args, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

long long mcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!k || k > left)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] >> 6) != 2)
            return 0;
    if (k == 2 && c < 0xc2) /* overlong */
        return 0;
    if (k == 3) {
        unsigned cp = ((c & 15u) << 12) | ((s[1] & 63u) << 6) | (s[2] & 63u);
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
    }
    if (k == 4) {
        unsigned cp = ((c & 7u) << 18) | ((s[1] & 63u) << 12) | ((s[2] & 63u) << 6) | (s[3] & 63u);
        if (cp < 0x10000 || cp > 0x10ffff)
            return 0;
    }
    return k;
}

json_t *mcp_text(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    if (j)
        return j;
    /* not UTF-8 (or a NUL): each bad byte becomes U+FFFD */
    char *o = osb_xmalloc(len * 3 + 1);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq((const unsigned char *)s + i, len - i);
        if (k) {
            memcpy(o + n, s + i, k);
            n += k;
            i += k;
        } else {
            memcpy(o + n, "\xef\xbf\xbd", 3);
            n += 3;
            i++;
        }
    }
    j = json_stringn(o, n);
    free(o);
    return j ? j : json_string("");
}
