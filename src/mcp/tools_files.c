/* File tools: upstream's names and parameters. file_read returns text (cut
 * at MCP_TEXT_MAX, with the range that reads on); file_write takes text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

#define SID \
    "\"sandbox_id\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Sandbox identifier.\"}"
#define CIM \
    "\"connect_if_missing\":{\"type\":\"boolean\",\"description\":\"Accepted for compatibility; sandboxes are always looked up on the server.\"}"
#define PATHS \
    "\"paths\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},\"description\":\"Absolute paths.\"}"

static const char *str(json_t *args, const char *k)
{
    return json_string_value(json_object_get(args, k));
}

/* "bytes=A-B" or "bytes=A-": false if malformed. */
static bool parse_range(const char *r, long long *off, long long *len)
{
    long long a, b;
    int n = 0;
    if (sscanf(r, "bytes=%lld-%n", &a, &n) != 1 || a < 0)
        return false;
    if (!r[n]) {
        *off = a, *len = -1;
        return true;
    }
    int m = 0;
    if (sscanf(r + n, "%lld%n", &b, &m) != 1 || r[n + m] || b < a)
        return false;
    *off = a, *len = b - a + 1;
    return true;
}

static json_t *t_read(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    const char *sid = str(args, "sandbox_id"), *path = str(args, "path");
    const char *range = str(args, "range_header");
    long long off = 0, len = -1;
    if (range && !parse_range(range, &off, &len))
        return snprintf(msg, cap, "range_header \"%s\": want bytes=START-END or bytes=START-",
                        range),
               NULL;
    /* Read one byte past the limit to know whether there is more. */
    long long want = len < 0 || len > MCP_TEXT_MAX ? MCP_TEXT_MAX + 1 : len;
    char *data;
    size_t n;
    struct osbc_error err;
    int rc = range || want ? osbc_file_read_range(c, sid, path, off, want, &data, &n, &err)
                           : osbc_file_read(c, sid, path, &data, &n, &err);
    if (rc < 0 && err.http_status == 416 && off == 0) /* an empty file has no byte 0 */
        rc = osbc_file_read(c, sid, path, &data, &n, &err);
    if (rc < 0)
        return mcp_fail(msg, cap, "file_read", &err);
    bool more = n > MCP_TEXT_MAX;
    json_t *r =
        json_pack("{s:s,s:o}", "path", path, "content", mcp_text(data, more ? MCP_TEXT_MAX : n));
    if (more) {
        char note[300];
        snprintf(note, sizeof note,
                 "Content cut at %d KB. Read on with range_header \"bytes=%lld-%lld\".",
                 MCP_TEXT_MAX / 1024, off + MCP_TEXT_MAX, off + 2LL * MCP_TEXT_MAX - 1);
        json_object_set_new(r, "truncated", json_true());
        json_object_set_new(r, "note", json_string(note));
    }
    free(data);
    return r;
}

/* mode as upstream: the octal digits written as a decimal number (755). */
static int mode_of(json_t *args, int def)
{
    json_t *v = json_object_get(args, "mode");
    if (!json_is_integer(v))
        return def;
    long long d = json_integer_value(v);
    return (int)(((d / 100) % 10) * 64 + ((d / 10) % 10) * 8 + d % 10);
}

static bool mode_ok(json_t *args, char *msg, size_t cap)
{
    json_t *v = json_object_get(args, "mode");
    long long d = json_is_integer(v) ? json_integer_value(v) : 0;
    if (d < 0 || d > 7777 || d % 10 > 7 || (d / 10) % 10 > 7 || (d / 100) % 10 > 7) {
        snprintf(msg, cap, "mode %lld: want octal digits written as a number, like 644", d);
        return false;
    }
    return true;
}

static json_t *t_write(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c || !mode_ok(args, msg, cap))
        return NULL;
    json_t *content = json_object_get(args, "content");
    struct osbc_file_attrs at = {mode_of(args, 0755), str(args, "owner"), str(args, "group")};
    struct osbc_error err;
    if (osbc_file_write(c, str(args, "sandbox_id"), str(args, "path"), json_string_value(content),
                        json_string_length(content), &at, &err) < 0)
        return mcp_fail(msg, cap, "file_write", &err);
    return json_pack("{s:s,s:I}", "path", str(args, "path"), "bytes",
                     (json_int_t)json_string_length(content));
}

/* The paths argument as a C array (pointing into args). */
static const char **paths(json_t *args, size_t *n)
{
    json_t *p = json_object_get(args, "paths");
    *n = json_array_size(p);
    const char **v = calloc(*n + 1, sizeof *v);
    for (size_t i = 0; v && i < *n; i++)
        v[i] = json_string_value(json_array_get(p, i));
    return v;
}

static json_t *t_delete(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    size_t n;
    const char **p = c ? paths(args, &n) : NULL;
    struct osbc_error err;
    json_t *r = NULL;
    if (p && osbc_file_remove(c, str(args, "sandbox_id"), p, n, &err) < 0)
        mcp_fail(msg, cap, "file_delete", &err);
    else if (p)
        r = json_pack("{s:s}", "status", "deleted");
    free(p);
    return r;
}

static json_t *t_rmdirs(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    size_t n;
    const char **p = c ? paths(args, &n) : NULL;
    struct osbc_error err;
    json_t *r = NULL;
    if (p && osbc_dir_remove(c, str(args, "sandbox_id"), p, n, &err) < 0)
        mcp_fail(msg, cap, "file_delete_directories", &err);
    else if (p)
        r = json_pack("{s:s}", "status", "deleted");
    free(p);
    return r;
}

static json_t *t_search(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    char *json;
    struct osbc_error err;
    if (!c)
        return NULL;
    if (osbc_file_search(c, str(args, "sandbox_id"), str(args, "path"), str(args, "pattern"), &json,
                         &err) < 0)
        return mcp_fail(msg, cap, "file_search", &err);
    json_t *list = mcp_doc(json, msg, cap);
    return list ? json_pack("{s:o}", "files", list) : NULL;
}

static json_t *t_mkdirs(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(args, "entries"), i, e)
    {
        if (!mode_ok(e, msg, cap))
            return NULL;
        struct osbc_file_attrs at = {mode_of(e, 0755), str(e, "owner"), str(e, "group")};
        const char *p[] = {str(e, "path")};
        struct osbc_error err;
        if (osbc_dir_create(c, str(args, "sandbox_id"), p, 1, &at, &err) < 0)
            return mcp_fail(msg, cap, p[0], &err);
    }
    return json_pack("{s:s}", "status", "created");
}

static json_t *t_move(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(args, "entries"), i, e)
    {
        const char *src = str(e, "source") ? str(e, "source") : str(e, "src");
        const char *dst = str(e, "destination") ? str(e, "destination") : str(e, "dest");
        struct osbc_error err;
        if (!src || !dst)
            return snprintf(msg, cap, "entries[%zu]: source and destination are required", i), NULL;
        if (osbc_file_move(c, str(args, "sandbox_id"), src, dst, &err) < 0)
            return mcp_fail(msg, cap, src, &err);
    }
    return json_pack("{s:s}", "status", "moved");
}

static json_t *t_replace(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(args, "entries"), i, e)
    {
        long count;
        struct osbc_error err;
        if (osbc_file_replace(c, str(args, "sandbox_id"), str(e, "path"), str(e, "old_content"),
                              str(e, "new_content"), &count, &err) < 0) {
            json_decref(out);
            return mcp_fail(msg, cap, str(e, "path"), &err);
        }
        json_array_append_new(out, json_pack("{s:s,s:I}", "path", str(e, "path"), "replaced_count",
                                             (json_int_t)count));
    }
    return json_pack("{s:o}", "results", out);
}

const struct mcp_tool mcp_file_tools[] = {
    {"file_read", "Read a text file from a sandbox (cut at 100 KB; range_header reads a part).",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"path\":{\"type\":\"string\",\"minLength\":1},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"utf8\"]},\"range_header\":{\"type\":\"string\",\"description\":\"A byte range, e.g. bytes=0-1023.\"}," CIM
     "},\"required\":[\"sandbox_id\",\"path\"],\"additionalProperties\":false}",
     t_read},
    {"file_write", "Write text to a file (replaced; parent directories made).",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"path\":{\"type\":\"string\",\"minLength\":1},\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"utf8\"]},\"mode\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Permissions as octal digits, e.g. 644 (default 755).\"},\"owner\":{\"type\":\"string\"},\"group\":{\"type\":\"string\"}," CIM
     "},\"required\":[\"sandbox_id\",\"path\",\"content\"],\"additionalProperties\":false}",
     t_write},
    {"file_delete", "Delete files (a missing file is not an error).",
     "{\"type\":\"object\",\"properties\":{" SID "," PATHS "," CIM
     "},\"required\":[\"sandbox_id\",\"paths\"],\"additionalProperties\":false}",
     t_delete},
    {"file_search", "Find files under path whose name matches a glob (recursive).",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"path\":{\"type\":\"string\",\"minLength\":1},\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Glob on the file name, e.g. *.py.\"}," CIM
     "},\"required\":[\"sandbox_id\",\"path\",\"pattern\"],\"additionalProperties\":false}",
     t_search},
    {"file_create_directories", "Create directories (with parents).",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},\"mode\":{\"type\":\"integer\",\"minimum\":0},\"owner\":{\"type\":\"string\"},\"group\":{\"type\":\"string\"}},\"required\":[\"path\"],\"additionalProperties\":false}}," CIM
     "},\"required\":[\"sandbox_id\",\"entries\"],\"additionalProperties\":false}",
     t_mkdirs},
    {"file_delete_directories", "Delete directories recursively.",
     "{\"type\":\"object\",\"properties\":{" SID "," PATHS "," CIM
     "},\"required\":[\"sandbox_id\",\"paths\"],\"additionalProperties\":false}",
     t_rmdirs},
    {"file_move", "Move or rename files and directories.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"source\":{\"type\":\"string\",\"minLength\":1},\"destination\":{\"type\":\"string\",\"minLength\":1},\"src\":{\"type\":\"string\",\"minLength\":1},\"dest\":{\"type\":\"string\",\"minLength\":1}},\"additionalProperties\":false}}," CIM
     "},\"required\":[\"sandbox_id\",\"entries\"],\"additionalProperties\":false}",
     t_move},
    {"file_replace_contents", "Replace every occurrence of old_content with new_content in files.",
     "{\"type\":\"object\",\"properties\":{" SID
     ",\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},\"old_content\":{\"type\":\"string\",\"minLength\":1},\"new_content\":{\"type\":\"string\"}},\"required\":[\"path\",\"old_content\",\"new_content\"],\"additionalProperties\":false}}," CIM
     "},\"required\":[\"sandbox_id\",\"entries\"],\"additionalProperties\":false}",
     t_replace},
    {NULL, NULL, NULL, NULL},
};
