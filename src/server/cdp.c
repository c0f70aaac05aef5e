/* CDP discovery answers rewritten for the outside (cdp.h). The answer is
 * parsed and only webSocketDebuggerUrl and devtoolsFrontendUrl change: a
 * page's own "url" may well be http://127.0.0.1:... and must stay. */
#include "server/cdp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"

struct cdp_rw {
    char *scheme; /* "ws" or "wss" */
    char *host;   /* the client's Host */
    char *route;  /* "/sandboxes/{id}/proxy/{port}" or the signed one */
    char *inside[3];
};

bool osb_cdp_is_discovery(const char *method, const char *rest)
{
    static const char *const paths[] = {"json",          "json/",     "json/version",
                                        "json/version/", "json/list", "json/list/"};
    if (!method || strcmp(method, "GET") != 0 || !rest)
        return false;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (strcmp(rest, paths[i]) == 0)
            return true;
    return false;
}

/* The length of the internal "host:port/" that s starts with, or 0. */
static size_t inside_prefix(const struct cdp_rw *c, const char *s)
{
    for (size_t i = 0; i < sizeof c->inside / sizeof c->inside[0]; i++) {
        size_t n = strlen(c->inside[i]);
        if (strncmp(s, c->inside[i], n) == 0)
            return n;
    }
    return 0;
}

/* "ws://127.0.0.1:9222/devtools/x" -> "ws://{host}{route}/devtools/x" */
static bool fix_ws_url(const struct cdp_rw *c, json_t *obj)
{
    json_t *v = json_object_get(obj, "webSocketDebuggerUrl");
    const char *s = json_string_value(v);
    size_t n = s && strncmp(s, "ws://", 5) == 0 ? inside_prefix(c, s + 5) : 0;
    if (!n)
        return false;
    char *u = osb_xasprintf("%s://%s%s/%s", c->scheme, c->host, c->route, s + 5 + n);
    json_object_set_new(obj, "webSocketDebuggerUrl", json_string(u));
    free(u);
    return true;
}

/* The frontend's "?ws=127.0.0.1:9222/devtools/page/X" (or "&ws=") names the
 * page's socket without a scheme; with wss the parameter is "wss=". A
 * relative frontend ("/devtools/inspector.html?...") lives below the route. */
static bool fix_frontend_url(const struct cdp_rw *c, json_t *obj)
{
    const char *s = json_string_value(json_object_get(obj, "devtoolsFrontendUrl"));
    const char *ws = s ? strstr(s, "ws=") : NULL;
    while (ws && ws != s && ws[-1] != '?' && ws[-1] != '&')
        ws = strstr(ws + 3, "ws=");
    size_t n = ws ? inside_prefix(c, ws + 3) : 0;
    if (!n)
        return false;
    char *u = osb_xasprintf("%s%.*s%s=%s%s/%s", s[0] == '/' ? c->route : "", (int)(ws - s), s,
                            c->scheme, c->host, c->route, ws + 3 + n);
    json_object_set_new(obj, "devtoolsFrontendUrl", json_string(u));
    free(u);
    return true;
}

static bool fix_target(const struct cdp_rw *c, json_t *obj)
{
    if (!json_is_object(obj))
        return false;
    bool a = fix_ws_url(c, obj);
    bool b = fix_frontend_url(c, obj);
    return a || b;
}

char *osb_cdp_rewrite_body(void *ud, const char *body, size_t len, size_t *out_len)
{
    const struct cdp_rw *c = ud;
    json_t *root = json_loadb(body, len, 0, NULL);
    bool changed = fix_target(c, root);
    size_t i;
    json_t *t;
    json_array_foreach(root, i, t) changed |= fix_target(c, t);
    /* Chromium indents by 3; kept so the answer reads the same. */
    char *out = changed ? json_dumps(root, JSON_INDENT(3)) : NULL;
    json_decref(root);
    if (out)
        *out_len = strlen(out);
    return out;
}

static void cdp_rw_free(void *ud)
{
    struct cdp_rw *c = ud;
    free(c->scheme);
    free(c->host);
    free(c->route);
    for (size_t i = 0; i < sizeof c->inside / sizeof c->inside[0]; i++)
        free(c->inside[i]);
    free(c);
}

void osb_cdp_rewrite(struct osb_http_rewrite *rw, long port, bool tls, const char *host,
                     const char *route)
{
    struct cdp_rw *c = osb_xcalloc(1, sizeof *c);
    c->scheme = osb_xstrdup(tls ? "wss" : "ws");
    c->host = osb_xstrdup(host);
    c->route = osb_xstrdup(route);
    c->inside[0] = osb_xasprintf("127.0.0.1:%ld/", port);
    c->inside[1] = osb_xasprintf("localhost:%ld/", port);
    c->inside[2] = osb_xasprintf("[::1]:%ld/", port);
    *rw = (struct osb_http_rewrite){.content_type = "application/json",
                                    .max = OSB_CDP_MAX_ANSWER,
                                    .fn = osb_cdp_rewrite_body,
                                    .free_ud = cdp_rw_free,
                                    .ud = c};
}
