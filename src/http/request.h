/* Requests: lifetime, request-target parsing and routing (internal to
 * src/http). */
#ifndef OSB_HTTP_REQUEST_H
#define OSB_HTTP_REQUEST_H
#include "http/conn.h"
#include "common/err.h"

struct osb_http_req *osb_http__req_new(struct conn *c);
void osb_http__req_free(struct osb_http_req *req);
/* Split req->target into the decoded path and query parameters; -1 on a
 * bad percent-escape. A control byte in the decoded path or in a query
 * name or value is not an error here: it is reported in *ctl (code
 * OSB_E_INVALID), for the server to answer with its own 400. */
OSB_MUST_CHECK int osb_http__req_parse_target(struct osb_http_req *req, struct osb_err *ctl);
/* First route matching method and path; fills req->params. NULL if none. */
const struct osb_http_route *osb_http__route_match(struct osb_http_server *srv,
                                                   struct osb_http_req *req);
#endif
