/* execd's one error table: how a struct osb_err becomes an answer (HTTP
 * status and {code,message}). Every handler that answers an osb_err goes
 * through it; the per-route contract (osb_execd_status_map) then moves a
 * status the route does not list to the nearest listed one. */
#ifndef OSB_EXECD_ERRMAP_H
#define OSB_EXECD_ERRMAP_H
#include "common/err.h"
#include "http/http.h"

struct osb_execd_errinfo {
    int status;
    const char *code; /* the wire code */
};

/* OSB_E_INVALID -> 400 INVALID_REQUEST_BODY, OSB_E_NOTFOUND -> 404
 * FILE_NOT_FOUND, anything else -> 500 RUNTIME_ERROR (the codes upstream's
 * execd answers with). */
struct osb_execd_errinfo osb_execd_err_info(const struct osb_err *err);
/* Answer req with err's status, code and message. */
void osb_execd_respond_err(struct osb_http_req *req, const struct osb_err *err);
#endif
