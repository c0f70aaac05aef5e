#include "server/apierr.h"

#include <stdarg.h>
#include <stdio.h>

#include "http/http.h"

int osb_apierr_set(struct osb_apierr *e, int status, const char *code, const char *fmt, ...)
{
    e->status = status;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

void osb_apierr_respond(struct osb_http_req *req, const struct osb_apierr *e)
{
    osb_http_respond_error(req, e->status, e->code, "%s", e->msg);
}
