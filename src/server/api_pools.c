/* The pool routes (docs/pools.md), upstream's shapes: POST /pools -> 201
 * PoolInfo, GET /pools -> {items}, GET/PUT /pools/{name} -> PoolInfo,
 * DELETE /pools/{name} -> 204. Also at /warmpools, the path of upstream's
 * newer servers. The work is pools.c's. */
#include "server/pools.h"
#include "server/server.h"

static void answer(struct osb_http_req *req, int rc, int status, json_t *out,
                   const struct osb_apierr *e)
{
    if (rc < 0)
        osb_apierr_respond(req, e);
    else
        osb_http_respond_json(req, status, out);
}

static void h_create(struct osb_http_req *req, void *ud)
{
    json_t *body = osb_api_body(req, false), *out = NULL;
    if (!body)
        return;
    struct osb_apierr e;
    int rc = osb_pools_create(ud, body, &out, &e);
    json_decref(body);
    answer(req, rc, 201, out, &e);
}

static void h_list(struct osb_http_req *req, void *ud)
{
    osb_http_respond_json(req, 200, osb_pools_list(ud));
}

static void h_get(struct osb_http_req *req, void *ud)
{
    json_t *out = NULL;
    struct osb_apierr e;
    int rc = osb_pools_get(ud, osb_http_req_param(req, "name"), &out, &e);
    answer(req, rc, 200, out, &e);
}

static void h_put(struct osb_http_req *req, void *ud)
{
    json_t *body = osb_api_body(req, false), *out = NULL;
    if (!body)
        return;
    struct osb_apierr e;
    int rc = osb_pools_update(ud, osb_http_req_param(req, "name"), body, &out, &e);
    json_decref(body);
    answer(req, rc, 200, out, &e);
}

static void h_delete(struct osb_http_req *req, void *ud)
{
    struct osb_apierr e;
    if (osb_pools_delete(ud, osb_http_req_param(req, "name"), &e) < 0)
        osb_apierr_respond(req, &e);
    else
        osb_http_respond_empty(req, 204);
}

const struct osb_http_route osb_api_pool_routes[] = {
    {"POST", "/pools", h_create, 0, NULL},
    {"GET", "/pools", h_list, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/pools/:name", h_get, OSB_ROUTE_NO_BODY, NULL},
    {"PUT", "/pools/:name", h_put, 0, NULL},
    {"DELETE", "/pools/:name", h_delete, OSB_ROUTE_NO_BODY, NULL},
    {"POST", "/warmpools", h_create, 0, NULL},
    {"GET", "/warmpools", h_list, OSB_ROUTE_NO_BODY, NULL},
    {"GET", "/warmpools/:name", h_get, OSB_ROUTE_NO_BODY, NULL},
    {"PUT", "/warmpools/:name", h_put, 0, NULL},
    {"DELETE", "/warmpools/:name", h_delete, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_pool_nroutes = sizeof osb_api_pool_routes / sizeof osb_api_pool_routes[0];
