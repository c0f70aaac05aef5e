/* src/server/cdp.c: which proxied requests are CDP discovery, and how their
 * answers are rewritten: webSocketDebuggerUrl and devtoolsFrontendUrl of the
 * proxied port move to the external route (ws or wss), everything else (a
 * page's url, another port's URL, non-JSON) stays. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/cdp.h"
#include "tap.h"

#define ROUTE "/sandboxes/S/proxy/9222"

/* The rewritten body's value of key in element i (-1: the root), or NULL. */
static char *field(const char *out, int i, const char *key)
{
    json_t *root = json_loads(out, 0, NULL);
    json_t *o = i < 0 ? root : json_array_get(root, (size_t)i);
    const char *v = json_string_value(json_object_get(o, key));
    char *r = v ? strdup(v) : NULL;
    json_decref(root);
    return r;
}

static char *rewrite(struct osb_http_rewrite *rw, const char *body, size_t *n)
{
    return rw->fn(rw->ud, body, strlen(body), n);
}

static void discovery(void)
{
    OK(osb_cdp_is_discovery("GET", "json/version"), "discovery: json/version");
    OK(osb_cdp_is_discovery("GET", "json/list/"), "discovery: json/list/");
    OK(osb_cdp_is_discovery("GET", "json"), "discovery: json");
    OK(!osb_cdp_is_discovery("PUT", "json/version"), "discovery: GET only");
    OK(!osb_cdp_is_discovery("GET", "json/new"), "discovery: not json/new");
    OK(!osb_cdp_is_discovery("GET", "devtools/browser/x"), "discovery: not the socket");
    OK(!osb_cdp_is_discovery("GET", NULL), "discovery: not the port's root");
}

static void version(void)
{
    struct osb_http_rewrite rw;
    osb_cdp_rewrite(&rw, 9222, false, "sbx.example:8080", ROUTE);
    OK(strcmp(rw.content_type, "application/json") == 0 && rw.max == OSB_CDP_MAX_ANSWER,
       "rewrite: JSON answers up to the cap");
    size_t n = 0;
    char *out = rewrite(&rw,
                        "{\"Browser\":\"Chrome/1\",\"webSocketDebuggerUrl\":"
                        "\"ws://127.0.0.1:9222/devtools/browser/B\"}",
                        &n);
    char *ws = out ? field(out, -1, "webSocketDebuggerUrl") : NULL;
    char *br = out ? field(out, -1, "Browser") : NULL;
    OK(out && n == strlen(out), "version: a new body and its length");
    OK(ws && strcmp(ws, "ws://sbx.example:8080" ROUTE "/devtools/browser/B") == 0,
       "version: the socket through the proxy route");
    OK(br && strcmp(br, "Chrome/1") == 0, "version: other fields kept");
    free(out);
    free(ws);
    free(br);
    OK(!rewrite(&rw, "{\"webSocketDebuggerUrl\":\"ws://127.0.0.1:9223/devtools/browser/B\"}", &n),
       "version: another port's URL is not ours: body kept");
    OK(!rewrite(&rw, "not json", &n), "version: not JSON: body kept");
    OK(!rewrite(&rw, "{\"Browser\":\"x\"}", &n), "version: no URL: body kept");
    rw.free_ud(rw.ud);
}

static void list(void)
{
    struct osb_http_rewrite rw;
    osb_cdp_rewrite(&rw, 9222, true, "h:1", ROUTE);
    size_t n = 0;
    char *out = rewrite(
        &rw,
        "[{\"url\":\"http://127.0.0.1:9222/x\",\"webSocketDebuggerUrl\":"
        "\"ws://localhost:9222/devtools/page/P\",\"devtoolsFrontendUrl\":"
        "\"/devtools/inspector.html?ws=127.0.0.1:9222/devtools/page/P\"},"
        "{\"devtoolsFrontendUrl\":\"https://f.example/i.html?a=1&ws=[::1]:9222/devtools/page/Q\"}]",
        &n);
    char *ws = out ? field(out, 0, "webSocketDebuggerUrl") : NULL;
    char *url = out ? field(out, 0, "url") : NULL;
    char *fe = out ? field(out, 0, "devtoolsFrontendUrl") : NULL;
    char *fe2 = out ? field(out, 1, "devtoolsFrontendUrl") : NULL;
    OK(ws && strcmp(ws, "wss://h:1" ROUTE "/devtools/page/P") == 0, "list: wss behind TLS");
    OK(url && strcmp(url, "http://127.0.0.1:9222/x") == 0, "list: a page's own url kept");
    OK(fe && strcmp(fe, ROUTE "/devtools/inspector.html?wss=h:1" ROUTE "/devtools/page/P") == 0,
       "list: a relative frontend below the route, its ws= parameter rewritten");
    OK(fe2 && strcmp(fe2, "https://f.example/i.html?a=1&wss=h:1" ROUTE "/devtools/page/Q") == 0,
       "list: a hosted frontend's &ws= parameter rewritten");
    free(out);
    free(ws);
    free(url);
    free(fe);
    free(fe2);
    rw.free_ud(rw.ud);
}

int main(void)
{
    discovery();
    version();
    list();
    return tap_done();
}
