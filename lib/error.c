/* Filling struct osbc_error: the library's one way to report a failure. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int vfail(struct osbc_error *err, int code, int sys, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    memset(err, 0, sizeof *err);
    err->code = code;
    err->sys_errno = sys;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    if (sys) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, ": %s", strerror(sys));
    }
    return code;
}

int osbcl_fail(struct osbc_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

int osbcl_fail_sys(struct osbc_error *err, int code, const char *fmt, ...)
{
    int sys = errno;
    va_list ap;
    va_start(ap, fmt);
    vfail(err, code, sys ? sys : EIO, fmt, ap);
    va_end(ap);
    return code;
}

/* The server's words: {"code","message"} from the lifecycle API and execd,
 * {"error"} from execd's token check, {"detail"} from FastAPI; else the
 * first line of a text body. */
static void body_reason(const char *body, size_t len, char *code, size_t code_cap, char *msg,
                        size_t msg_cap)
{
    *code = *msg = 0;
    if (!body || !len)
        return;
    json_t *j = json_loadb(body, len, JSON_DECODE_ANY, NULL);
    if (json_is_object(j)) {
        const char *c = json_string_value(json_object_get(j, "code"));
        const char *m = json_string_value(json_object_get(j, "message"));
        if (!m)
            m = json_string_value(json_object_get(j, "error"));
        if (!m && json_object_get(j, "detail")) {
            char *d = json_dumps(json_object_get(j, "detail"), JSON_COMPACT | JSON_ENCODE_ANY);
            snprintf(msg, msg_cap, "%s", d ? d : "");
            free(d);
        }
        if (c)
            snprintf(code, code_cap, "%s", c);
        if (m)
            snprintf(msg, msg_cap, "%s", m);
    }
    json_decref(j);
    if (*msg || *code)
        return;
    size_t n = 0;
    while (n < len && body[n] != '\n' && body[n] != '\r' && n + 1 < msg_cap)
        n++;
    memcpy(msg, body, n);
    msg[n] = 0;
}

int osbcl_fail_http(struct osbc_error *err, int status, const char *body, size_t len,
                    const char *what)
{
    if (!err)
        return OSBC_E_HTTP;
    char msg[400];
    memset(err, 0, sizeof *err);
    err->code = OSBC_E_HTTP;
    err->http_status = status;
    body_reason(body, len, err->server_code, sizeof err->server_code, msg, sizeof msg);
    if (*msg)
        snprintf(err->message, sizeof err->message, "%s: %s", what, msg);
    else
        snprintf(err->message, sizeof err->message, "%s: HTTP %d", what, status);
    return OSBC_E_HTTP;
}

void osbcl_err_clear(struct osbc_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *osbc_strerror(int code)
{
    switch (code) {
    case OSBC_OK: return "success";
    case OSBC_E_ARG: return "invalid argument";
    case OSBC_E_NOMEM: return "out of memory";
    case OSBC_E_CONNECT: return "cannot connect";
    case OSBC_E_TIMEOUT: return "timed out";
    case OSBC_E_TLS: return "TLS failure";
    case OSBC_E_PROTOCOL: return "protocol error";
    case OSBC_E_HTTP: return "server error";
    case OSBC_E_IO: return "local I/O error";
    case OSBC_E_CANCELLED: return "cancelled";
    case OSBC_E_REMOTE: return "remote failure";
    }
    return "unknown error";
}

void osbc_free(void *p)
{
    free(p);
}
