/* /docs: the OpenAPI document as one readable page. Rendered from the
 * embedded JSON on each request (a few milliseconds, on a page people open
 * by hand), so the page can never disagree with /openapi.json. Descriptions
 * are Markdown in the document; they are shown as preformatted text rather
 * than parsed, which keeps this file small and every byte escaped. */
#include "server/apidocs.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "common/json.h"

/* Methods in the order a reader expects them. */
static const char *const methods[] = {"get", "post", "put", "patch", "delete", "head", "options"};
#define NMETHODS (sizeof methods / sizeof methods[0])

/* Every append ORs its result into rc; the caller checks it once. */
struct page {
    struct osb_buf *out;
    json_t *doc;
    int rc;
};

static const char style[] =
    "body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fff}"
    "header{background:#1f2d3d;color:#fff;padding:1em 2em}header a{color:#9cd}"
    "nav{position:fixed;top:0;bottom:0;left:0;width:20em;overflow:auto;padding:1em;"
    "background:#f4f6f8;border-right:1px solid #dde;font-size:13px}"
    "nav ul{list-style:none;padding-left:.5em}nav a{color:#1b1f24;text-decoration:none}"
    ".wrap{margin-left:22em}main{padding:0 2em 3em}"
    ".op{border:1px solid #dde;border-radius:6px;margin:1em 0;padding:.5em 1em}"
    ".m{display:inline-block;min-width:4.5em;text-align:center;border-radius:4px;color:#fff;"
    "font:bold 12px monospace;padding:2px 4px;margin-right:.5em}"
    ".get{background:#2b7bb9}.post{background:#2e8b57}.put{background:#b8860b}"
    ".patch{background:#8a5cb8}.delete{background:#c0392b}.head,.options{background:#666}"
    ".md{white-space:pre-wrap;font-size:14px;color:#333}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #dde;"
    "padding:3px 8px;text-align:left;vertical-align:top;font-size:14px}"
    "th{background:#f4f6f8}code{font-size:13px}.dep{text-decoration:line-through}"
    ".auth{font-size:13px;color:#555}";

static void put(struct page *p, const char *s)
{
    p->rc |= osb_buf_adds(p->out, s);
}

/* Text from the document, escaped for element content and attributes. */
static void esc(struct page *p, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': put(p, "&amp;"); break;
        case '<': put(p, "&lt;"); break;
        case '>': put(p, "&gt;"); break;
        case '"': put(p, "&quot;"); break;
        case '\'': put(p, "&#39;"); break;
        default: p->rc |= osb_buf_add(p->out, s, 1);
        }
    }
}

/* An anchor id: the prefix, then s with everything but [A-Za-z0-9] as '-'. */
static void anchor(struct page *p, const char *prefix, const char *a, const char *b)
{
    put(p, prefix);
    for (const char *s = a; s && *s; s++)
        p->rc |= osb_buf_add(p->out, isalnum((unsigned char)*s) ? s : "-", 1);
    for (const char *s = b; s && *s; s++)
        p->rc |= osb_buf_add(p->out, isalnum((unsigned char)*s) ? s : "-", 1);
}

static const char *str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* A node's target when it is a {"$ref": "#/components/..."}; else the node.
 * A few hops at most: a loop of references in the document ends here. */
static json_t *resolve(struct page *p, json_t *node)
{
    for (int hop = 0; hop < 8; hop++) {
        const char *ref = str(node, "$ref");
        if (!ref || strncmp(ref, "#/", 2) != 0)
            return node;
        json_t *at = p->doc;
        char part[128];
        for (const char *s = ref + 2; at && *s;) {
            size_t n = strcspn(s, "/");
            if (n >= sizeof part)
                return node;
            memcpy(part, s, n);
            part[n] = 0;
            at = json_object_get(at, part);
            s += n + (s[n] == '/');
        }
        if (!at)
            return node;
        node = at;
    }
    return node;
}

/* The schema name of a {"$ref": "#/components/schemas/Name"}, or NULL. */
static const char *schema_ref(json_t *node)
{
    const char *ref = str(node, "$ref");
    const char *pre = "#/components/schemas/";
    return ref && strncmp(ref, pre, strlen(pre)) == 0 ? ref + strlen(pre) : NULL;
}

static void md(struct page *p, json_t *obj, const char *key)
{
    const char *s = str(obj, key);
    if (!s)
        return;
    put(p, "<div class=\"md\">");
    esc(p, s);
    put(p, "</div>");
}

/* ------------------------------------------------------------- types */

static void type_of(struct page *p, json_t *schema, int depth);

static void type_list(struct page *p, json_t *arr, const char *sep, int depth)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (i)
            put(p, sep);
        type_of(p, v, depth + 1);
    }
}

static void type_enum(struct page *p, json_t *arr)
{
    size_t i;
    json_t *v;
    put(p, " (");
    json_array_foreach(arr, i, v)
    {
        put(p, i ? ", <code>" : "<code>");
        if (json_is_string(v))
            esc(p, json_string_value(v));
        else
            put(p, json_is_integer(v) ? "number" : "value");
        put(p, "</code>");
    }
    put(p, ")");
}

/* A schema in a few words: a link for a named one, "array of X", the
 * alternatives of oneOf/anyOf/allOf, else its type, format and enum. */
static void type_of(struct page *p, json_t *schema, int depth)
{
    const char *name = schema_ref(schema);
    json_t *t = json_object_get(schema, "type");
    if (name) {
        put(p, "<a href=\"#");
        anchor(p, "schema-", name, NULL);
        put(p, "\">");
        esc(p, name);
        put(p, "</a>");
    } else if (depth > 4 || !json_is_object(schema)) {
        put(p, "any");
    } else if (json_object_get(schema, "oneOf") || json_object_get(schema, "anyOf")) {
        json_t *alt = json_object_get(schema, "oneOf");
        type_list(p, alt ? alt : json_object_get(schema, "anyOf"), " | ", depth);
    } else if (json_object_get(schema, "allOf")) {
        type_list(p, json_object_get(schema, "allOf"), " &amp; ", depth);
    } else if (json_is_string(t) && !strcmp(json_string_value(t), "array")) {
        put(p, "array of ");
        type_of(p, json_object_get(schema, "items"), depth + 1);
    } else if (json_is_array(t)) {
        type_list(p, t, " | ", depth);
    } else {
        esc(p, json_is_string(t) ? json_string_value(t) : "any");
    }
    if (!name && str(schema, "format")) {
        put(p, " <small>");
        esc(p, str(schema, "format"));
        put(p, "</small>");
    }
    if (!name && json_is_array(json_object_get(schema, "enum")))
        type_enum(p, json_object_get(schema, "enum"));
}

/* -------------------------------------------------------- operations */

static void param_row(struct page *p, json_t *param)
{
    param = resolve(p, param);
    put(p, "<tr><td><code>");
    esc(p, str(param, "name"));
    put(p, "</code></td><td>");
    esc(p, str(param, "in"));
    put(p, "</td><td>");
    type_of(p, json_object_get(param, "schema"), 0);
    put(p, json_is_true(json_object_get(param, "required")) ? "</td><td>yes" : "</td><td>");
    put(p, "</td><td>");
    md(p, param, "description");
    put(p, "</td></tr>");
}

/* The path item's parameters, then the operation's own. */
static void params(struct page *p, json_t *item, json_t *op)
{
    json_t *lists[2] = {json_object_get(item, "parameters"), json_object_get(op, "parameters")};
    if (!json_array_size(lists[0]) && !json_array_size(lists[1]))
        return;
    put(p, "<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>type</th>"
           "<th>required</th><th>description</th></tr>");
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *v;
        json_array_foreach(lists[l], i, v) param_row(p, v);
    }
    put(p, "</table>");
}

/* "application/json: Schema" for each media type of a body or response. */
static void content(struct page *p, json_t *c)
{
    const char *type;
    json_t *media;
    json_object_foreach(c, type, media)
    {
        put(p, "<div><code>");
        esc(p, type);
        put(p, "</code>");
        if (json_object_get(media, "schema")) {
            put(p, ": ");
            type_of(p, json_object_get(media, "schema"), 0);
        }
        put(p, "</div>");
    }
}

static void body(struct page *p, json_t *op)
{
    json_t *rb = resolve(p, json_object_get(op, "requestBody"));
    if (!rb)
        return;
    put(p, json_is_true(json_object_get(rb, "required")) ? "<h4>Request body (required)</h4>"
                                                         : "<h4>Request body</h4>");
    md(p, rb, "description");
    content(p, json_object_get(rb, "content"));
}

static void responses(struct page *p, json_t *op)
{
    const char *status;
    json_t *r;
    put(p, "<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th></tr>");
    json_object_foreach(json_object_get(op, "responses"), status, r)
    {
        r = resolve(p, r);
        put(p, "<tr><td><code>");
        esc(p, status);
        put(p, "</code></td><td>");
        md(p, r, "description");
        put(p, "</td><td>");
        content(p, json_object_get(r, "content"));
        put(p, "</td></tr>");
    }
    put(p, "</table>");
}

/* Who may call: the operation's security, else the document's; an empty
 * list means no credential at all. */
static void auth(struct page *p, json_t *op)
{
    json_t *sec = json_object_get(op, "security");
    if (!sec)
        sec = json_object_get(p->doc, "security");
    if (!json_array_size(sec)) {
        put(p, "<p class=\"auth\">No credential needed.</p>");
        return;
    }
    json_t *schemes = json_object_get(json_object_get(p->doc, "components"), "securitySchemes");
    size_t i;
    json_t *req;
    json_array_foreach(sec, i, req)
    {
        const char *name;
        json_t *v;
        json_object_foreach(req, name, v)
        {
            json_t *s = json_object_get(schemes, name);
            put(p, "<p class=\"auth\">Credential: the <code>");
            esc(p, str(s, "name") ? str(s, "name") : name);
            put(p, "</code> ");
            esc(p, str(s, "in") ? str(s, "in") : "");
            put(p, ".</p>");
        }
    }
}

static void operation(struct page *p, const char *path, const char *method, json_t *item,
                      json_t *op)
{
    bool dep = json_is_true(json_object_get(op, "deprecated"));
    put(p, "<section class=\"op\" id=\"");
    anchor(p, "op-", method, path);
    put(p, "\"><h3><span class=\"m ");
    put(p, method);
    put(p, "\">");
    for (const char *m = method; *m; m++)
        p->rc |= osb_buf_addf(p->out, "%c", toupper((unsigned char)*m));
    put(p, dep ? "</span><code class=\"dep\">" : "</span><code>");
    esc(p, path);
    put(p, "</code></h3><p><b>");
    esc(p, str(op, "summary"));
    put(p, dep ? "</b> (deprecated)</p>" : "</b></p>");
    auth(p, op);
    md(p, op, "description");
    params(p, item, op);
    body(p, op);
    responses(p, op);
    put(p, "</section>");
}

/* ---------------------------------------------------------------- tags */

static const char *op_tag(json_t *op)
{
    const char *t = json_string_value(json_array_get(json_object_get(op, "tags"), 0));
    return t ? t : "Other";
}

static bool tag_listed(struct page *p, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(p->doc, "tags"), i, t)
    {
        if (str(t, "name") && !strcmp(str(t, "name"), name))
            return true;
    }
    return false;
}

/* Calls fn for every operation of tag (NULL: of no listed tag), in the
 * document's path order and the methods' reading order. */
static void each_op(struct page *p, const char *tag,
                    void (*fn)(struct page *, const char *, const char *, json_t *, json_t *))
{
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(p->doc, "paths"), path, item)
    {
        for (size_t m = 0; m < NMETHODS; m++) {
            json_t *op = json_object_get(item, methods[m]);
            if (!op)
                continue;
            const char *t = op_tag(op);
            if (tag ? !strcmp(t, tag) : !tag_listed(p, t))
                fn(p, path, methods[m], item, op);
        }
    }
}

static void toc_entry(struct page *p, const char *path, const char *method, json_t *item,
                      json_t *op)
{
    (void)item;
    (void)op;
    put(p, "<li><a href=\"#");
    anchor(p, "op-", method, path);
    put(p, "\"><span class=\"m ");
    put(p, method);
    put(p, "\">");
    put(p, method);
    put(p, "</span>");
    esc(p, path);
    put(p, "</a></li>");
}

static void toc(struct page *p)
{
    size_t i;
    json_t *t;
    put(p, "<nav><b>Operations</b>");
    json_array_foreach(json_object_get(p->doc, "tags"), i, t)
    {
        put(p, "<div>");
        esc(p, str(t, "name"));
        put(p, "</div><ul>");
        each_op(p, str(t, "name"), toc_entry);
        put(p, "</ul>");
    }
    put(p, "<div>Other</div><ul>");
    each_op(p, NULL, toc_entry);
    put(p, "</ul><b><a href=\"#schemas\">Schemas</a></b></nav>");
}

static void tags(struct page *p)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(p->doc, "tags"), i, t)
    {
        put(p, "<h2>");
        esc(p, str(t, "name"));
        put(p, "</h2>");
        md(p, t, "description");
        each_op(p, str(t, "name"), operation);
    }
    put(p, "<h2>Other</h2>");
    each_op(p, NULL, operation);
}

/* ------------------------------------------------------------- schemas */

static void property_rows(struct page *p, json_t *schema)
{
    json_t *required = json_object_get(schema, "required");
    const char *name;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), name, prop)
    {
        bool req = false;
        size_t i;
        json_t *r;
        json_array_foreach(required, i, r) req |= !strcmp(json_string_value(r) ?: "", name);
        put(p, "<tr><td><code>");
        esc(p, name);
        put(p, "</code></td><td>");
        type_of(p, prop, 0);
        put(p, req ? "</td><td>yes</td><td>" : "</td><td></td><td>");
        md(p, prop, "description");
        put(p, "</td></tr>");
    }
}

static void schemas(struct page *p)
{
    const char *name;
    json_t *s;
    put(p, "<h2 id=\"schemas\">Schemas</h2>");
    json_object_foreach(json_object_get(json_object_get(p->doc, "components"), "schemas"), name, s)
    {
        put(p, "<section class=\"op\" id=\"");
        anchor(p, "schema-", name, NULL);
        put(p, "\"><h3>");
        esc(p, name);
        put(p, "</h3><p>");
        type_of(p, s, 0);
        put(p, "</p>");
        md(p, s, "description");
        if (json_object_size(json_object_get(s, "properties"))) {
            put(p, "<table><tr><th>field</th><th>type</th><th>required</th>"
                   "<th>description</th></tr>");
            property_rows(p, s);
            put(p, "</table>");
        }
        put(p, "</section>");
    }
}

/* ---------------------------------------------------------------- page */

static void head(struct page *p)
{
    json_t *info = json_object_get(p->doc, "info");
    put(p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>");
    esc(p, str(info, "title"));
    put(p, "</title><style>");
    put(p, style);
    put(p, "</style></head><body>");
    toc(p);
    put(p, "<div class=\"wrap\"><header><h1>");
    esc(p, str(info, "title"));
    put(p, "</h1><p>API version ");
    esc(p, str(info, "version"));
    put(p, " &middot; OpenAPI ");
    esc(p, str(p->doc, "openapi"));
    put(p, " &middot; <a href=\"/openapi.json\">/openapi.json</a></p></header><main>");
    md(p, info, "description");
}

int osb_apidocs_render(const char *json, size_t len, struct osb_buf *out, struct osb_err *err)
{
    json_t *doc;
    if (osb_json_parse_object(json, len, false, &doc, err) < 0)
        return -1;
    struct page p = {.out = out, .doc = doc, .rc = 0};
    head(&p);
    tags(&p);
    schemas(&p);
    put(&p, "</main></div></body></html>\n");
    json_decref(doc);
    if (p.rc)
        return osb_err_set(err, OSB_E_TOOBIG, "the API page is larger than its buffer");
    return 0;
}
