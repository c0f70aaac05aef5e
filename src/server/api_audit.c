/* GET /audit?sandboxId=&since=&limit=: the audit trail's records
 * (server/audit.h), oldest first, behind the API key. */
#include <stdlib.h>

#include "server/audit.h"
#include "server/server.h"

static void h_audit(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    long limit;
    if (osb_api_query_int(req, "limit", 1, 10000, 100, &limit) < 0)
        return;
    if (!srv->audit) {
        osb_apierr_reply(req, "AUDIT::NOT_ENABLED", "the audit trail is off ([audit] enabled)");
        return;
    }
    struct osb_err err = {0};
    json_t *items = osb_audit_list(srv->audit_path, osb_http_req_query(req, "sandboxId"),
                                   osb_http_req_query(req, "since"), (size_t)limit, &err);
    if (!items) {
        if (err.code == OSB_E_INVALID)
            osb_apierr_reply(req, "AUDIT::INVALID_PARAMETER", "%s", err.msg);
        else
            osb_apierr_reply(req, "AUDIT::UNREADABLE", "%s", err.msg);
        return;
    }
    osb_http_respond_json(req, 200, json_pack("{s:o}", "items", items));
}

const struct osb_http_route osb_api_audit_routes[] = {
    {"GET", "/audit", h_audit, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_audit_nroutes = 1;
