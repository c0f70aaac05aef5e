/* Request lifetime, accessors, target parsing and route matching. */
#include "http/request.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ctl.h"
#include "common/limits.h"
#include "common/xalloc.h"

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

long osb_http_url_decode(char *s, bool form)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (*p == '%') {
            int hi = hexval((unsigned char)p[1]), lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);
            if (hi < 0 || lo < 0)
                return -1;
            *o++ = (char)(hi * 16 + lo);
            p += 2;
        } else if (form && *p == '+') {
            *o++ = ' ';
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return (long)(o - s);
}

static void kv_free(struct kv *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
}

static void observe(struct osb_http_req *req)
{
    struct osb_http_server *srv = req->srv;
    if (!srv || !srv->observe || !req->method[0])
        return;
    struct osb_http_done d = {req->method,
                              req->route ? req->route->pattern : NULL,
                              req->path ? req->path : "",
                              req->id,
                              req->status,
                              req->bytes,
                              (double)(uv_hrtime() - req->t0) / 1e9,
                              req->taken_over};
    srv->observe(req, &d, srv->observe_ud);
}

void osb_http__req_free(struct osb_http_req *req)
{
    observe(req);
    if (req->note_free)
        req->note_free(req->note);
    osb_buf_free(&req->target);
    osb_buf_free(&req->body);
    osb_buf_free(&req->resp_headers);
    free(req->path);
    kv_free(req->headers, req->nheaders);
    kv_free(req->params, req->nparams);
    kv_free(req->query, req->nquery);
    free(req->qvals);
    free(req);
}

struct osb_http_req *osb_http__req_new(struct conn *c)
{
    struct osb_http_req *req = osb_xcalloc(1, sizeof *req);
    req->c = c;
    req->srv = c->srv;
    req->t0 = uv_hrtime();
    osb_buf_init(&req->target, OSB_MAX_HEAD_BYTES);
    osb_buf_init(&req->body, OSB_MAX_JSON_BODY);
    osb_buf_init(&req->resp_headers, OSB_MAX_HEAD_BYTES);
    return req;
}

static void kv_add(struct kv **v, size_t *n, char *name, char *value)
{
    *v = osb_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[*n].name = name;
    (*v)[*n].value = value;
    (*n)++;
}

/* Decode one piece of the target; a control byte in it fills *ctl (the
 * first one found wins) and the request is refused later with a 400. */
static int decode_checked(char *s, bool form, const char *what, struct osb_err *ctl)
{
    long n = osb_http_url_decode(s, form);
    if (n < 0)
        return -1;
    /* A control byte is no parse error: *ctl keeps the first one found
     * for the server's 400, which is all osb_ctl_check's -1 says. */
    if (ctl->code == OSB_E_OK && osb_ctl_check(what, s, (size_t)n, ctl) < 0)
        return 0;
    return 0;
}

static int parse_query(struct osb_http_req *req, const char *q, struct osb_err *ctl)
{
    char *dup = osb_xstrdup(q), *save = NULL;
    int rc = 0;
    for (char *part = strtok_r(dup, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(part, '=');
        char *name = osb_xstrndup(part, eq ? (size_t)(eq - part) : strlen(part));
        char *value = osb_xstrdup(eq ? eq + 1 : "");
        if (decode_checked(name, true, "a query parameter name", ctl) < 0)
            rc = -1;
        char what[96];
        snprintf(what, sizeof what, "query parameter '%.40s'", name);
        if (decode_checked(value, true, what, ctl) < 0)
            rc = -1;
        kv_add(&req->query, &req->nquery, name, value);
    }
    free(dup);
    return rc;
}

int osb_http__req_parse_target(struct osb_http_req *req, struct osb_err *ctl)
{
    const char *t = req->target.data ? req->target.data : "/";
    /* Absolute-form targets (proxies) carry a scheme and authority. */
    if (strncasecmp(t, "http://", 7) == 0 || strncasecmp(t, "https://", 8) == 0) {
        const char *p = strchr(strstr(t, "//") + 2, '/');
        t = p ? p : "/";
    }
    const char *q = strchr(t, '?');
    req->path = osb_xstrndup(t, q ? (size_t)(q - t) : strlen(t));
    osb_err_clear(ctl);
    int rc = decode_checked(req->path, false, "the request path", ctl);
    if (q && parse_query(req, q + 1, ctl) < 0)
        rc = -1;
    return rc;
}

/* Match one pattern against the raw path (before decoding, so an encoded
 * '/' stays inside its segment). */
static bool match(const char *pat, const char *path, struct osb_http_req *req)
{
    while (*pat && *path) {
        if (*pat == '*') {
            kv_add(&req->params, &req->nparams, osb_xstrdup(pat + 1), osb_xstrdup(path));
            return true;
        }
        if (*pat == ':') {
            const char *pe = strchrnul(pat, '/'), *se = strchrnul(path, '/');
            if (se == path)
                return false;
            char *v = osb_xstrndup(path, (size_t)(se - path));
            if (osb_http_url_decode(v, false) < 0) {
                free(v);
                return false;
            }
            kv_add(&req->params, &req->nparams, osb_xstrndup(pat + 1, (size_t)(pe - pat - 1)), v);
            pat = pe;
            path = se;
            continue;
        }
        if (*pat != *path)
            return false;
        pat++;
        path++;
    }
    if (*pat == '*' && !*path) {
        kv_add(&req->params, &req->nparams, osb_xstrdup(pat + 1), osb_xstrdup(""));
        return true;
    }
    return !*pat && !*path;
}

static void params_clear(struct osb_http_req *req)
{
    for (size_t i = 0; i < req->nparams; i++) {
        free(req->params[i].name);
        free(req->params[i].value);
    }
    req->nparams = 0;
}

const struct osb_http_route *osb_http__route_match(struct osb_http_server *srv,
                                                   struct osb_http_req *req)
{
    const char *t = req->target.data ? req->target.data : "/";
    if (strncasecmp(t, "http", 4) == 0 && strstr(t, "://")) {
        const char *p = strchr(strstr(t, "://") + 3, '/');
        t = p ? p : "/";
    }
    char *raw = osb_xstrndup(t, strcspn(t, "?"));
    const struct osb_http_route *found = NULL;
    for (size_t i = 0; i < srv->nroutes && !found; i++) {
        const struct osb_http_route *r = &srv->routes[i];
        if (r->method && strcmp(r->method, req->method) != 0 &&
            !(strcmp(r->method, "GET") == 0 && req->head_only))
            continue;
        if (match(r->pattern, raw, req))
            found = r;
        else
            params_clear(req);
    }
    free(raw);
    return found;
}

const char *osb_http_req_method(const struct osb_http_req *req)
{
    return req->method;
}

const char *osb_http_req_path(const struct osb_http_req *req)
{
    return req->path ? req->path : "/";
}

const char *osb_http_req_target(const struct osb_http_req *req)
{
    return req->target.data ? req->target.data : "/";
}

static const char *kv_get(const struct kv *v, size_t n, const char *name, bool icase)
{
    for (size_t i = 0; i < n; i++)
        if ((icase ? strcasecmp : strcmp)(v[i].name, name) == 0)
            return v[i].value;
    return NULL;
}

const char *osb_http_req_route_pattern(const struct osb_http_req *req)
{
    return req->route ? req->route->pattern : NULL;
}

const char *osb_http_req_param(const struct osb_http_req *req, const char *name)
{
    return kv_get(req->params, req->nparams, name, false);
}

const char *osb_http_req_query(const struct osb_http_req *req, const char *name)
{
    return kv_get(req->query, req->nquery, name, false);
}

size_t osb_http_req_query_all(const struct osb_http_req *req, const char *name,
                              const char *const **vals)
{
    struct osb_http_req *r = (struct osb_http_req *)req;
    size_t n = 0;
    free(r->qvals);
    r->qvals = osb_xcalloc(req->nquery + 1, sizeof *r->qvals);
    for (size_t i = 0; i < req->nquery; i++)
        if (strcmp(req->query[i].name, name) == 0)
            r->qvals[n++] = req->query[i].value;
    *vals = r->qvals;
    return n;
}

const char *osb_http_req_header(const struct osb_http_req *req, const char *name)
{
    return kv_get(req->headers, req->nheaders, name, true);
}

bool osb_http_req_header_at(const struct osb_http_req *req, size_t i, const char **name,
                            const char **value)
{
    if (i >= req->nheaders)
        return false;
    *name = req->headers[i].name;
    *value = req->headers[i].value;
    return true;
}

const char *osb_http_req_body(const struct osb_http_req *req, size_t *len)
{
    if (len)
        *len = req->body.len;
    return req->body.len ? req->body.data : NULL;
}

const char *osb_http_req_peer(const struct osb_http_req *req)
{
    return req->c ? req->c->peer : "";
}

const char *osb_http_reason(int status)
{
    switch (status) {
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 416: return "Range Not Satisfiable";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
    }
}

void osb_http_req_set_id(struct osb_http_req *req, const char *id)
{
    snprintf(req->id, sizeof req->id, "%s", id);
}

void osb_http_req_set_note(struct osb_http_req *req, void *note, void (*free_fn)(void *note))
{
    if (req->note_free)
        req->note_free(req->note);
    req->note = note;
    req->note_free = free_fn;
}

void *osb_http_req_note(const struct osb_http_req *req)
{
    return req->note;
}
