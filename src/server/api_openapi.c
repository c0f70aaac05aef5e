/* GET /openapi.json and GET /docs (also /redoc), as upstream's server
 * answers them, without an API key (api.c's hook exempts them): the
 * embedded document (apidocs.h) and the page rendered from it. */
#include "server/apidocs.h"
#include "server/server.h"

/* The page is about 200 KiB for the document of today; the cap only stops
 * a runaway render. */
#define APIDOCS_MAX (8 * 1024 * 1024)

static void h_openapi(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond(req, 200, "application/json", osb_openapi_json, osb_openapi_json_len);
}

static void h_docs(struct osb_http_req *req, void *ud)
{
    (void)ud;
    struct osb_buf page;
    struct osb_err err = {0};
    osb_buf_init(&page, APIDOCS_MAX);
    if (osb_apidocs_render((const char *)osb_openapi_json, osb_openapi_json_len, &page, &err) < 0)
        osb_apierr_reply(req, "GENERAL::INTERNAL_ERROR", "render the API page: %s", err.msg);
    else
        osb_http_respond(req, 200, "text/html; charset=utf-8", page.data, page.len);
    osb_buf_free(&page);
}

const struct osb_http_route osb_api_openapi_routes[] = {
    {"GET", "/openapi.json", h_openapi, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/docs", h_docs, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/redoc", h_docs, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_openapi_nroutes =
    sizeof osb_api_openapi_routes / sizeof osb_api_openapi_routes[0];
