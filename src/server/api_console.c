/* GET /console: the web console (docs/operations.md, "Web console"). The
 * page and its scripts need no key (they hold nothing secret); the console
 * asks the user for the API key and sends it on each call. The headers keep
 * the page to its own origin: scripts, styles and connections from here
 * only, never framed, no Referer (a signed URL must not leak through one). */
#include <string.h>

#include "server/console.h"
#include "server/server.h"

struct asset {
    const char *name, *type;
    const unsigned char *data;
    const size_t *len;
};

static const struct asset assets[] = {
    {"app.js", "text/javascript; charset=utf-8", osb_console_app_js, &osb_console_app_js_len},
    {"app.css", "text/css; charset=utf-8", osb_console_app_css, &osb_console_app_css_len},
    {"vendor.js", "text/javascript; charset=utf-8", osb_console_vendor_js,
     &osb_console_vendor_js_len},
    {"vendor.css", "text/css; charset=utf-8", osb_console_vendor_css, &osb_console_vendor_css_len},
};

static void send_asset(struct osb_http_req *req, const char *type, const unsigned char *data,
                       size_t len)
{
    /* xterm.js styles its elements from script, hence 'unsafe-inline' for
     * styles only. */
    osb_http_add_header(req, "Content-Security-Policy",
                        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; "
                        "base-uri 'none'; form-action 'self'");
    osb_http_add_header(req, "X-Frame-Options", "DENY");
    osb_http_add_header(req, "X-Content-Type-Options", "nosniff");
    osb_http_add_header(req, "Referrer-Policy", "no-referrer");
    osb_http_add_header(req, "Cache-Control", "no-cache");
    osb_http_respond(req, 200, type, data, len);
}

static void h_index(struct osb_http_req *req, void *ud)
{
    (void)ud;
    send_asset(req, "text/html; charset=utf-8", osb_console_index_html, osb_console_index_html_len);
}

static void h_asset(struct osb_http_req *req, void *ud)
{
    (void)ud;
    const char *name = osb_http_req_param(req, "file");
    for (size_t i = 0; name && i < sizeof assets / sizeof assets[0]; i++)
        if (strcmp(name, assets[i].name) == 0) {
            send_asset(req, assets[i].type, assets[i].data, *assets[i].len);
            return;
        }
    osb_apierr_reply(req, "CONSOLE::NOT_FOUND", "the console has no file '%s'", name ? name : "");
}

const struct osb_http_route osb_api_console_routes[] = {
    {"GET", "/console", h_index, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/console/", h_index, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/console/:file", h_asset, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_console_nroutes =
    sizeof osb_api_console_routes / sizeof osb_api_console_routes[0];
