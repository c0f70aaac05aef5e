/* The credential vault's HTTP handlers: /credential-vault, its
 * credentials and bindings (egress-api.yaml), under a sandbox's port-18080
 * endpoint. api_egress.c routes here after checking the egress token. */
#ifndef OSB_SERVER_API_VAULT_H
#define OSB_SERVER_API_VAULT_H
#include "server/server.h"

/* rest: the path below the endpoint, starting with "credential-vault";
 * the body has been collected. Answers req. */
void osb_api_vault(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                   const char *rest);
#endif
