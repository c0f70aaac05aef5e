/* Server-only routes (protocol.md 1.11) and the features of later issues:
 * /health and the JS SDK's fire-and-forget metrics POST. Pools are in
 * api_pools.c. */
#include "server/server.h"

static void h_health(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond_json(req, 200, json_pack("{s:s}", "status", "healthy"));
}

/* JS SDK 0.1.11 posts {"eventType":"sandbox.create",...} after every
 * create and ignores the answer; accept it without storing anything. */
static void h_metrics_event(struct osb_http_req *req, void *ud)
{
    (void)ud;
    osb_http_respond_empty(req, 204);
}

const struct osb_http_route osb_api_misc_routes[] = {
    {"GET", "/health", h_health, OSB_ROUTE_NO_BODY, NULL},
    {"POST", "/metrics/events", h_metrics_event, 0, NULL},
};
const size_t osb_api_misc_nroutes = sizeof osb_api_misc_routes / sizeof osb_api_misc_routes[0];
