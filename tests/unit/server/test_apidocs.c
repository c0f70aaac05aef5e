/* The /docs page renderer: the embedded document renders, text from the
 * document is escaped, references become links to schema anchors that
 * exist, a bad document or a full buffer is an error, never half a page. */
#include "server/apidocs.h"

#include <stdlib.h>
#include <string.h>

#include "tap.h"

static const char doc[] =
    "{\"openapi\":\"3.1.0\",\"info\":{\"title\":\"T <x>\",\"version\":\"1\","
    "\"description\":\"a & b\"},"
    "\"tags\":[{\"name\":\"A\"}],"
    "\"security\":[{\"k\":[]}],"
    "\"paths\":{\"/things/{id}\":{\"parameters\":[{\"$ref\":\"#/components/parameters/Id\"}],"
    "\"get\":{\"tags\":[\"A\"],\"summary\":\"<script>alert(1)</script>\","
    "\"responses\":{\"200\":{\"description\":\"ok\",\"content\":{\"application/json\":"
    "{\"schema\":{\"$ref\":\"#/components/schemas/Thing\"}}}}}},"
    "\"delete\":{\"security\":[],\"responses\":{\"204\":{\"description\":\"gone\"}}}}},"
    "\"components\":{\"securitySchemes\":{\"k\":{\"type\":\"apiKey\",\"in\":\"header\","
    "\"name\":\"X-Key\"}},\"parameters\":{\"Id\":{\"name\":\"id\",\"in\":\"path\","
    "\"required\":true,\"schema\":{\"type\":\"string\"}}},"
    "\"schemas\":{\"Thing\":{\"type\":\"object\",\"required\":[\"n\"],\"properties\":{"
    "\"n\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/components/schemas/Thing\"}},"
    "\"s\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}}}}}}";

static int has(const struct osb_buf *b, const char *s)
{
    return strstr(b->data, s) != NULL;
}

static void test_small(void)
{
    struct osb_buf b;
    struct osb_err err = {0};
    osb_buf_init(&b, 1 << 20);
    OK(osb_apidocs_render(doc, strlen(doc), &b, &err) == 0, "a small document renders");
    OK(strncmp(b.data, "<!DOCTYPE html>", 15) == 0, "an HTML page");
    OK(has(&b, "<title>T &lt;x&gt;</title>"), "the title, escaped");
    OK(!has(&b, "<script"), "a summary's markup is escaped, never live");
    OK(has(&b, "&lt;script&gt;alert(1)&lt;/script&gt;"), "the summary is shown as text");
    OK(has(&b, "id=\"op-get-things--id-\""), "the operation has an anchor");
    OK(has(&b, "href=\"#op-get-things--id-\""), "the table of contents links to it");
    OK(has(&b, "<code>id</code></td><td>path</td>"), "a referenced path parameter is shown");
    OK(has(&b, "href=\"#schema-Thing\">Thing</a>"), "a schema reference is a link");
    OK(has(&b, "id=\"schema-Thing\""), "the schema has its anchor");
    OK(has(&b, "array of <a href=\"#schema-Thing\">"), "array of a named schema");
    OK(has(&b, "(<code>a</code>, <code>b</code>)"), "an enum lists its values");
    OK(has(&b, "the <code>X-Key</code> header"), "the document's security by default");
    OK(has(&b, "No credential needed."), "an empty security list: no credential");
    OK(has(&b, "<h2>Other</h2>"), "an operation of no tag goes under Other");
    OK(has(&b, "a &amp; b"), "the description, escaped");
    OK(!has(&b, "http://") && !has(&b, "https://"), "nothing is fetched from elsewhere");
    osb_buf_free(&b);
}

static void test_errors(void)
{
    struct osb_buf b;
    struct osb_err err = {0};
    osb_buf_init(&b, 1 << 20);
    OK(osb_apidocs_render("{\"a\":", 5, &b, &err) < 0, "a document that does not parse fails");
    osb_buf_free(&b);
    osb_buf_init(&b, 512);
    err = (struct osb_err){0};
    OK(osb_apidocs_render(doc, strlen(doc), &b, &err) < 0, "a page over the buffer's cap fails");
    IS_INT(err.code, OSB_E_TOOBIG, "... as too big");
    osb_buf_free(&b);
}

static void test_embedded(void)
{
    struct osb_buf b;
    struct osb_err err = {0};
    osb_buf_init(&b, 8 << 20);
    IS_INT(strlen((const char *)osb_openapi_json), osb_openapi_json_len,
           "the embedded document is NUL-terminated at its length");
    OK(osb_apidocs_render((const char *)osb_openapi_json, osb_openapi_json_len, &b, &err) == 0,
       "the embedded document renders");
    OK(has(&b, "/sandboxes/{sandboxId}/renew-expiration"), "with upstream's routes");
    OK(has(&b, "/pools/{poolName}") && has(&b, "/sandboxes/batch"), "and ours");
    osb_buf_free(&b);
}

int main(void)
{
    test_small();
    test_errors();
    test_embedded();
    return tap_done();
}
