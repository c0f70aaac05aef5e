/* File tools: upstream's names, parameters and results. file_read returns
 * text (cut at MCP_TEXT_MAX on a character boundary, with the range that
 * reads on); file_write takes text. utf-8 (the default) and latin-1 are the
 * encodings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/xalloc.h"
#include "mcp/mcp.h"

#define SID \
    "'sandbox_id':{'type':'string','minLength':1,'description':'Target sandbox identifier.'}"
#define CIM \
    "'connect_if_missing':{'type':'boolean','default':false,'description':'Accepted for " \
    "compatibility; sandboxes are always looked up on the server, no sandbox_connect needed.'}"
#define PATHS "'type':'array','minItems':1,'items':{'type':'string','minLength':1}"
#define ENCODING \
    "'encoding':{'type':'string','default':'utf-8','description':'Text encoding: utf-8 or " \
    "latin-1.'}"
#define MODE "'type':'integer','minimum':0,'maximum':7777,'default':755"
#define OWNER \
    "'owner':{'type':['string','null'],'default':null,'description':'Owner username.'}," \
    "'group':{'type':['string','null'],'default':null,'description':'Group name.'}"
#define ENTRIES "'type':'array','minItems':1"
#define DIR_ENTRY \
    "{'type':'object','properties':{'path':{'type':'string','minLength':1,'description':" \
    "'Directory path.'},'mode':{" MODE \
    ",'description':'Unix permissions for the directory.'}," OWNER \
    "},'required':['path'],'additionalProperties':false}"
#define MOVE_ENTRY \
    "{'type':'object','properties':{'source':{'type':'string','minLength':1,'description':" \
    "'Source path of the file or directory to move.'},'destination':{'type':'string'," \
    "'minLength':1,'description':'Destination path.'}},'required':['source','destination']," \
    "'additionalProperties':false}"
#define REPLACE_ENTRY \
    "{'type':'object','properties':{'path':{'type':'string','minLength':1,'description':" \
    "'Target file path.'},'old_content':{'type':'string','minLength':1,'description':'Exact " \
    "text to find.'},'new_content':{'type':'string','description':'Replacement text.'}}," \
    "'required':['path','old_content','new_content'],'additionalProperties':false}"

/* 1: utf-8, 2: latin-1, 0: unknown (msg says so). */
static int encoding(json_t *args, char *msg, size_t cap)
{
    const char *e = mcp_str(args, "encoding");
    if (!e || !strcasecmp(e, "utf-8") || !strcasecmp(e, "utf8") || !strcasecmp(e, "utf_8"))
        return 1;
    if (!strcasecmp(e, "latin-1") || !strcasecmp(e, "latin1") || !strcasecmp(e, "iso-8859-1") ||
        !strcasecmp(e, "iso8859-1"))
        return 2;
    snprintf(msg, cap, "encoding \"%s\": want utf-8 or latin-1", e);
    return 0;
}

/* "bytes=A-B", "bytes=A-" or "bytes=-N" (the last N bytes: *off = -N). */
static bool parse_range(const char *r, long long *off, long long *len)
{
    long long a, b;
    int n = 0, k = 0;
    if (sscanf(r, "bytes=-%lld%n", &a, &n) == 1 && !r[n] && a > 0) {
        *off = -a, *len = -1;
        return true;
    }
    n = 0;
    if (sscanf(r, "bytes=%lld-%n", &a, &n) != 1 || a < 0 || !n)
        return false;
    if (!r[n]) {
        *off = a, *len = -1;
        return true;
    }
    if (sscanf(r + n, "%lld%n", &b, &k) != 1 || r[n + k] || b < a)
        return false;
    *off = a, *len = b - a + 1;
    return true;
}

/* The file's size, or -1 with msg. */
static long long file_size(osbc_client *c, const char *sid, const char *path, char *msg, size_t cap)
{
    char *json;
    struct osbc_error err;
    const char *p[] = {path};
    if (osbc_file_info(c, sid, p, 1, &json, &err) < 0)
        return mcp_fail(msg, cap, path, &err), -1;
    json_t *info = mcp_doc(json, msg, cap);
    json_t *size = json_object_get(json_object_get(info, path), "size");
    long long n = json_is_integer(size) ? json_integer_value(size) : -1;
    json_decref(info);
    if (n < 0)
        snprintf(msg, cap, "%s: the server gave no size", path);
    return n;
}

/* Where to cut data at most max bytes long so no UTF-8 character is split. */
static size_t cut_at(const char *data, size_t n, size_t max, bool utf8)
{
    if (n <= max)
        return n;
    size_t k = max;
    while (utf8 && k > max - 3 && ((unsigned char)data[k] & 0xc0) == 0x80)
        k--;
    return k;
}

static json_t *latin1_text(const char *s, size_t n)
{
    char *o = osb_xmalloc(n * 2 + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            o[k++] = (char)c;
        } else {
            o[k++] = (char)(0xc0 | (c >> 6));
            o[k++] = (char)(0x80 | (c & 0x3f));
        }
    }
    json_t *j = json_stringn(o, k);
    free(o);
    return j;
}

static json_t *t_read(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    int enc = encoding(args, msg, cap);
    if (!c || !enc)
        return NULL;
    const char *sid = mcp_str(args, "sandbox_id"), *path = mcp_str(args, "path");
    const char *range = mcp_str(args, "range_header");
    long long off = 0, len = -1;
    if (range && !parse_range(range, &off, &len))
        return mcp_failf(msg, cap,
                         "range_header \"%s\": want bytes=START-END, bytes=START- or "
                         "bytes=-LAST",
                         range);
    if (off < 0) { /* the last -off bytes */
        long long size = file_size(c, sid, path, msg, cap);
        if (size < 0)
            return NULL;
        off = size + off > 0 ? size + off : 0;
    }
    /* One byte past the limit tells whether there is more. */
    long long want = len < 0 || len > MCP_TEXT_MAX ? MCP_TEXT_MAX + 1 : len;
    char *data;
    size_t n;
    struct osbc_error err;
    int rc = osbc_file_read_range(c, sid, path, off, want, &data, &n, &err);
    if (rc < 0 && err.http_status == 416 && off == 0) /* an empty file has no byte 0 */
        rc = osbc_file_read(c, sid, path, &data, &n, &err);
    if (rc < 0)
        return mcp_fail(msg, cap, "file_read", &err);
    size_t show = cut_at(data, n, MCP_TEXT_MAX, enc == 1);
    json_t *r = json_pack("{s:s,s:o}", "path", path, "content",
                          enc == 1 ? mcp_text(data, show) : latin1_text(data, show));
    if (show < n) {
        char note[400];
        long long next = off + (long long)show;
        snprintf(note, sizeof note,
                 "Content cut at %zu bytes (the limit is %d KB). Read on with range_header "
                 "\"bytes=%lld-%lld\" (and so on until a result has no note).",
                 show, MCP_TEXT_MAX / 1024, next, next + MCP_TEXT_MAX - 1);
        json_object_set_new(r, "truncated", json_true());
        json_object_set_new(r, "note", json_string(note));
    }
    free(data);
    return r;
}

/* mode as upstream: the octal digits written as a decimal number (755). */
static bool mode_of(json_t *args, int *mode, char *msg, size_t cap)
{
    long long d = (long long)mcp_num(args, "mode", 755);
    if (d < 0 || d > 7777 || d % 10 > 7 || (d / 10) % 10 > 7 || (d / 100) % 10 > 7 ||
        (d / 1000) % 10 > 7) {
        snprintf(msg, cap, "mode %lld: want octal digits written as a number, like 644", d);
        return false;
    }
    *mode = (int)((d / 1000) % 10 * 512 + (d / 100) % 10 * 64 + (d / 10) % 10 * 8 + d % 10);
    return true;
}

/* text (UTF-8) as latin-1 bytes; false when a character has no latin-1 byte. */
static bool to_latin1(const char *s, size_t n, char **out, size_t *out_len)
{
    char *o = osb_xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x80) {
            o[k++] = (char)ch;
        } else if ((ch == 0xc2 || ch == 0xc3) && i + 1 < n) {
            o[k++] = (char)(((ch & 3) << 6) | ((unsigned char)s[++i] & 0x3f));
        } else {
            free(o);
            return false;
        }
    }
    *out = o, *out_len = k;
    return true;
}

static json_t *t_write(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    int enc = encoding(args, msg, cap), mode;
    if (!c || !enc || !mode_of(args, &mode, msg, cap))
        return NULL;
    json_t *content = json_object_get(args, "content");
    const char *data = json_string_value(content);
    size_t len = json_string_length(content);
    char *conv = NULL;
    if (enc == 2) {
        if (!to_latin1(data, len, &conv, &len))
            return mcp_failf(msg, cap, "content has characters latin-1 cannot encode");
        data = conv;
    }
    struct osbc_file_attrs at = {mode, mcp_str(args, "owner"), mcp_str(args, "group")};
    struct osbc_error err;
    int rc = osbc_file_write(c, mcp_str(args, "sandbox_id"), mcp_str(args, "path"), data, len, &at,
                             &err);
    free(conv);
    if (rc < 0)
        return mcp_fail(msg, cap, "file_write", &err);
    return json_pack("{s:s}", "status", "written");
}

/* The paths argument as a C array (pointing into args). */
static const char **paths(json_t *args, size_t *n)
{
    json_t *p = json_object_get(args, "paths");
    *n = json_array_size(p);
    const char **v = osb_xcalloc(*n + 1, sizeof *v);
    for (size_t i = 0; i < *n; i++)
        v[i] = json_string_value(json_array_get(p, i));
    return v;
}

/* file_delete / file_delete_directories: one library call on the paths. */
static json_t *remove_paths(struct mcp *m, json_t *args, char *msg, size_t cap,
                            int (*call)(osbc_client *, const char *, const char *const *, size_t,
                                        struct osbc_error *),
                            const char *what)
{
    osbc_client *c = mcp_client(m, msg, cap);
    if (!c)
        return NULL;
    size_t n;
    const char **p = paths(args, &n);
    struct osbc_error err;
    int rc = call(c, mcp_str(args, "sandbox_id"), p, n, &err);
    free(p);
    return rc < 0 ? mcp_fail(msg, cap, what, &err) : json_pack("{s:s}", "status", "deleted");
}

static json_t *t_delete(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    return remove_paths(m, args, msg, cap, osbc_file_remove, "file_delete");
}

static json_t *t_rmdirs(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    return remove_paths(m, args, msg, cap, osbc_dir_remove, "file_delete_directories");
}

/* upstream returns list[EntryInfo]; FastMCP wraps a list as {"result": [...]}. */
static json_t *t_search(struct mcp *m, json_t *args, char *msg, size_t cap)
{
    osbc_client *c = mcp_client(m, msg, cap);
    char *json;
    struct osbc_error err;
    if (!c)
        return NULL;
    if (osbc_file_search(c, mcp_str(args, "sandbox_id"), mcp_str(args, "path"),
                         mcp_str(args, "pattern"), &json, &err) < 0)
        return mcp_fail(msg, cap, "file_search", &err);
    json_t *list = mcp_doc(json, msg, cap);
    if (!list)
        return NULL;
    if (!json_is_array(list)) {
        json_decref(list);
        return mcp_failf(msg, cap, "file_search: the server's answer is not a list");
    }
    size_t total = json_array_size(list), keep = total;
    char *text = json_dumps(list, JSON_COMPACT);
    while (keep && text && strlen(text) > MCP_TEXT_MAX) { /* a huge match list: keep the head */
        keep = keep / 2;
        while (json_array_size(list) > keep)
            json_array_remove(list, json_array_size(list) - 1);
        free(text);
        text = json_dumps(list, JSON_COMPACT);
    }
    free(text);
    json_t *r = json_pack("{s:o}", "result", list);
    if (keep < total) {
        char note[300];
        snprintf(note, sizeof note,
                 "%zu of %zu matches shown; narrow path or pattern to see the others.", keep,
                 total);
        json_object_set_new(r, "truncated", json_true());
        json_object_set_new(r, "note", json_string(note));
    }
    return r;
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
        int mode;
        if (!mode_of(e, &mode, msg, cap))
            return NULL;
        struct osbc_file_attrs at = {mode, mcp_str(e, "owner"), mcp_str(e, "group")};
        const char *p[] = {mcp_str(e, "path")};
        struct osbc_error err;
        if (osbc_dir_create(c, mcp_str(args, "sandbox_id"), p, 1, &at, &err) < 0)
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
        const char *src = mcp_str(e, "source"), *dst = mcp_str(e, "destination");
        struct osbc_error err;
        if (osbc_file_move(c, mcp_str(args, "sandbox_id"), src, dst, &err) < 0)
            return mcp_fail(msg, cap, src, &err);
    }
    return json_pack("{s:s}", "status", "moved");
}

/* upstream returns list[ContentReplaceResult], wrapped as {"result": [...]}. */
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
        if (osbc_file_replace(c, mcp_str(args, "sandbox_id"), mcp_str(e, "path"),
                              mcp_str(e, "old_content"), mcp_str(e, "new_content"), &count,
                              &err) < 0) {
            json_decref(out);
            return mcp_fail(msg, cap, mcp_str(e, "path"), &err);
        }
        json_array_append_new(out, json_pack("{s:s,s:I}", "path", mcp_str(e, "path"),
                                             "replaced_count", (json_int_t)count));
    }
    return json_pack("{s:o}", "result", out);
}


const struct mcp_tool mcp_file_tools[] = {
    {"file_read", "Read file",
     "Read a text file from the sandbox. Returns {path, content}. At most 100 KB come back; a "
     "longer file’s result has a note with the range_header that reads on (use ranges for large "
     "files: bytes=0-1023, bytes=4096-, bytes=-2000 for the last 2000 bytes).",
     MCP_OBJ(SID
             ",'path':{'type':'string','minLength':1,'description':'File path to read.'}," ENCODING
             ",'range_header':{'type':['string','null'],'default':null,'description':"
             "'Optional byte range, e.g. bytes=0-1023.'}," CIM,
             "'sandbox_id','path'"),
     MCP_READ_ONLY, t_read},
    {"file_write", "Write file",
     "Write a text file inside the sandbox (replaced if it exists; parent directories are "
     "made). Returns {status: written}.",
     MCP_OBJ(SID
             ",'path':{'type':'string','minLength':1,'description':'Destination file path.'},"
             "'content':{'type':'string','description':'File content.'}," ENCODING ",'mode':{" MODE
             ",'description':'Unix file permissions as octal digits, e.g. 644.'}," OWNER "," CIM,
             "'sandbox_id','path','content'"),
     MCP_DESTRUCTIVE | MCP_IDEMPOTENT, t_write},
    {"file_delete", "Delete files",
     "Delete files inside the sandbox (a missing file is not an error). Returns {status: "
     "deleted}.",
     MCP_OBJ(SID ",'paths':{" PATHS ",'description':'File paths to delete.'}," CIM,
             "'sandbox_id','paths'"),
     MCP_DESTRUCTIVE | MCP_IDEMPOTENT, t_delete},
    {"file_search", "Search files",
     "Search for files under a directory (recursively) whose name matches a glob pattern. "
     "Returns {result: [{path, type, mode, owner, group, size, modified_at, created_at}]}.",
     MCP_OBJ(SID
             ",'path':{'type':'string','minLength':1,'description':'Base directory to search.'},"
             "'pattern':{'type':'string','minLength':1,'description':'Glob pattern (e.g. "
             "*.py).'}," CIM,
             "'sandbox_id','path','pattern'"),
     MCP_READ_ONLY, t_search},
    {"file_create_directories", "Create directories",
     "Create directories (with their parents) inside the sandbox. Returns {status: created}.",
     MCP_OBJ(SID ",'entries':{" ENTRIES ",'items':" DIR_ENTRY ",'description':'Directory entries "
                 "(path, mode, owner, group).'}," CIM,
             "'sandbox_id','entries'"),
     MCP_IDEMPOTENT, t_mkdirs},
    {"file_delete_directories", "Delete directories",
     "Delete directories (recursively) inside the sandbox. Returns {status: deleted}.",
     MCP_OBJ(SID ",'paths':{" PATHS ",'description':'Directory paths to delete.'}," CIM,
             "'sandbox_id','paths'"),
     MCP_DESTRUCTIVE | MCP_IDEMPOTENT, t_rmdirs},
    {"file_move", "Move files",
     "Move or rename files or directories inside the sandbox. Returns {status: moved}.",
     MCP_OBJ(SID ",'entries':{" ENTRIES ",'items':" MOVE_ENTRY ",'description':'Move entries "
                 "(source, destination).'}," CIM,
             "'sandbox_id','entries'"),
     MCP_DESTRUCTIVE, t_move},
    {"file_replace_contents", "Replace file contents",
     "Replace every occurrence of old_content with new_content in files. Returns {result: "
     "[{path, replaced_count}]} (0: old_content was not found).",
     MCP_OBJ(SID ",'entries':{" ENTRIES ",'items':" REPLACE_ENTRY ",'description':'Replace entries "
                 "(path, old_content, new_content).'}," CIM,
             "'sandbox_id','entries'"),
     MCP_DESTRUCTIVE, t_replace},
    {NULL, NULL, NULL, NULL, 0, NULL},
};
