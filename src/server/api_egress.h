/* The egress API (protocol.md 4) a sandbox reaches at its port-18080
 * endpoint, served by the server itself (there is no sidecar): GET/PATCH/
 * DELETE/POST/PUT /policy and /healthz under
 * /sandboxes/{id}/proxy/18080. The route needs no API key; the egress
 * token is checked at the end of the headers, before any body byte is
 * buffered. The policy itself lives in server/network.c. */
#ifndef OSB_SERVER_API_EGRESS_H
#define OSB_SERVER_API_EGRESS_H
#include <stddef.h>

#include "http/http.h"

/* Registered at /v1 and at / before the server proxy's routes (the first
 * matching route wins). */
extern const struct osb_http_route osb_api_egress_routes[];
extern const size_t osb_api_egress_nroutes;
#endif
