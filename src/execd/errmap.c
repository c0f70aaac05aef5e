/* The error statuses execd-api.yaml (docs/specs/) lists per route. Routes
 * not in it (/pty*, /proxy*) keep their statuses; 401 (access token) and
 * the HTTP layer's own answers are transport-level (docs/errors.md). */
#include "execd/errmap.h"

#include "common/cleanup.h"
#include "execd/execd.h"
#include "http/statusmap.h"

static const struct {
    enum osb_errc err;
    struct osb_execd_errinfo info;
} errs[] = {
    {OSB_E_INVALID, {400, "INVALID_REQUEST_BODY"}},
    {OSB_E_NOTFOUND, {404, "FILE_NOT_FOUND"}},
};

struct osb_execd_errinfo osb_execd_err_info(const struct osb_err *err)
{
    for (size_t i = 0; i < OSB_ARRAY_LEN(errs); i++)
        if (errs[i].err == err->code)
            return errs[i].info;
    return (struct osb_execd_errinfo){500, "RUNTIME_ERROR"};
}

void osb_execd_respond_err(struct osb_http_req *req, const struct osb_err *err)
{
    struct osb_execd_errinfo e = osb_execd_err_info(err);
    osb_http_respond_error(req, e.status, e.code, "%s", err->msg);
}

static const struct osb_status_rule rules[] = {
    {"GET", "/code/contexts", "400 500"},
    {"DELETE", "/code/contexts", "400 500"},
    {"GET", "/code/contexts/:id", "404 500"},
    {"DELETE", "/code/contexts/:id", "400 404 500"},
    {"POST", "/code/context", "400 500"},
    {"POST", "/code", "400 500"},
    {"DELETE", "/code", "400 500"},
    {"POST", "/session", "400 500"},
    {"POST", "/session/:id/run", "400 500"},
    {"DELETE", "/session/:id", "400 404 500"},
    {"POST", "/command", "400 500"},
    {"DELETE", "/command", "400 500"},
    {"GET", "/command/status/:id", "400 404 500"},
    {"GET", "/command/:id/logs", "400 404 500"},
    {"GET", "/files/info", "404 500"},
    {"DELETE", "/files", "500"},
    {"POST", "/files/permissions", "400 500"},
    {"POST", "/files/mv", "400 404 500"},
    {"GET", "/files/search", "400 404 500"},
    {"POST", "/files/replace", "400 500"},
    {"POST", "/files/upload", "400 500"},
    {"GET", "/files/download", "400 404 416 500"},
    {"GET", "/directories/list", "400 404 500"},
    {"POST", "/directories", "400 500"},
    {"DELETE", "/directories", "500"},
    {"GET", "/metrics", "500"},
    {"GET", "/metrics/watch", "500"},
};

static int status_map(const struct osb_http_req *req, int status, void *ud)
{
    (void)ud;
    const char *pat = osb_http_req_route_pattern(req);
    const struct osb_status_rule *r =
        pat ? osb_status_find(rules, OSB_ARRAY_LEN(rules), osb_http_req_method(req), pat) : NULL;
    return osb_status_pick(r, status);
}

void osb_execd_status_map(struct osb_execd *x)
{
    osb_http_server_set_status_map(x->http, status_map, NULL);
}
