#define OSB_ERR_DEFINING /* err.h: the real functions, not the analyzer's view */
#include "common/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vset(struct osb_err *err, enum osb_errc code, int sys, const char *fmt, va_list ap)
{
    err->code = code;
    err->sys_errno = sys;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int osb_err_set(struct osb_err *err, enum osb_errc code, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int osb_err_sys(struct osb_err *err, const char *fmt, ...)
{
    int e = errno;
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(err, OSB_E_SYS, e, fmt, ap);
    va_end(ap);
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(e));
    errno = e;
    return -1;
}

int osb_err_wrap(struct osb_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prev[sizeof err->msg];
    memcpy(prev, err->msg, sizeof prev);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - n, ": %s", prev);
    return -1;
}

void osb_err_clear(struct osb_err *err)
{
    err->code = OSB_E_OK;
    err->sys_errno = 0;
    err->msg[0] = '\0';
}

int osb_err_http_status(const struct osb_err *err)
{
    switch (err->code) {
    case OSB_E_INVALID: return 400;
    case OSB_E_NOTFOUND: return 404;
    case OSB_E_EXISTS: return 409;
    case OSB_E_TOOBIG: return 413;
    case OSB_E_RANGE: return 416;
    case OSB_E_UNSUPPORTED: return 501;
    case OSB_E_DENIED: return 403;
    case OSB_E_UNAVAILABLE:
    case OSB_E_INTEGRITY: return 502;
    case OSB_E_OK:
    case OSB_E_SYS:
    case OSB_E_INTERNAL:
    default: return 500;
    }
}
