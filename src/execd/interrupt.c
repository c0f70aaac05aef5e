#include "execd/interrupt.h"

#include "common/cleanup.h"
#include "execd/code.h"
#include "execd/command.h"
#include "execd/session.h"

static void h_interrupt(struct osb_http_req *req, void *ud)
{
    struct osb_execd *x = ud;
    const char *id = osb_http_req_query(req, "id");
    if (!id || !*id) {
        osb_http_respond_error(req, 400, "MISSING_QUERY", "missing query parameter 'id'");
        return;
    }
    if (osb_execd_command_interrupt(x, req, id) == 0)
        return; /* answered there */
    if (osb_execd_session_close(x, id) == 0 || osb_execd_code_interrupt(x, id) == 0) {
        osb_http_respond_empty(req, 200);
        return;
    }
    osb_http_respond_error(req, 500, "RUNTIME_ERROR",
                           "error interrupting. no such command, session or context: %s", id);
}

void osb_execd_interrupt_routes(struct osb_execd *x)
{
    const struct osb_http_route routes[] = {
        {"DELETE", "/command", h_interrupt, 0, x},
        {"DELETE", "/code", h_interrupt, 0, x},
    };
    osb_http_server_add_routes(x->http, routes, OSB_ARRAY_LEN(routes));
}
