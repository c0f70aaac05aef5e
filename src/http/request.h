/* Request-target parsing and routing (internal to src/http). */
#ifndef OSB_HTTP_REQUEST_H
#define OSB_HTTP_REQUEST_H
#include "http/conn.h"

/* Split req->target into the decoded path and query parameters. */
int osb_http__req_parse_target(struct osb_http_req *req);
/* First route matching method and path; fills req->params. NULL if none. */
const struct osb_http_route *osb_http__route_match(struct osb_http_server *srv,
                                                   struct osb_http_req *req);
#endif
