/* The calls every module makes: a JSON call to the lifecycle server, the
 * endpoint of a sandbox's port (cached per client), and a call to that
 * endpoint (execd, the egress API) with the endpoint's headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

static const char *const json_headers[] = {"Accept: application/json", NULL};

static int api_call(osbc_client *c, const struct osbcl_base *base, const char *method,
                    const char *path, const char *body, char **out, struct osbc_error *err)
{
    if (out)
        *out = NULL;
    struct osbcl_req rq = {
        .method = method,
        .base = base,
        .path = path,
        .headers = json_headers,
        .content_type = body ? "application/json" : NULL,
        .body = body,
        .body_len = body ? strlen(body) : 0,
    };
    struct osbcl_resp rs = {0};
    int rc = osbcl_http(c, &rq, &rs, err);
    if (rc < 0)
        return rc;
    if (rs.status < 200 || rs.status >= 300) {
        char what[256];
        snprintf(what, sizeof what, "%s %.200s", method, path);
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, what);
        osbcl_resp_free(&rs);
        return rc;
    }
    if (out) {
        *out = rs.body;
        rs.body = NULL;
    }
    osbcl_resp_free(&rs);
    osbcl_err_clear(err);
    return 0;
}

int osbcl_api(osbc_client *c, const char *method, const char *path, const char *body_json,
              char **out, struct osbc_error *err)
{
    return api_call(c, NULL, method, path, body_json, out, err);
}

int osbcl_api_j(osbc_client *c, const char *method, const char *path, const json_t *body,
                char **out, struct osbc_error *err)
{
    char *text = body ? osbcl_json_dump(body) : NULL;
    if (body && !text)
        return osbcl_fail(err, OSBC_E_NOMEM, "cannot encode the request body");
    int rc = api_call(c, NULL, method, path, text, out, err);
    free(text);
    return rc;
}

int osbc_request(osbc_client *c, const char *method, const char *path, const char *body,
                 struct osbc_response *resp, struct osbc_error *err)
{
    osbcl_err_clear(err);
    if (!c || !method || !*method || !path || path[0] != '/' || !resp)
        return osbcl_fail(err, OSBC_E_ARG, "osbc_request: a method and a path starting with /");
    for (const char *m = method; *m; m++)
        if (*m < 'A' || *m > 'Z')
            return osbcl_fail(err, OSBC_E_ARG, "method \"%s\": upper-case letters only", method);
    memset(resp, 0, sizeof *resp);
    struct osbcl_req rq = {
        .method = method,
        .path = path,
        .content_type = body ? "application/json" : NULL,
        .body = body,
        .body_len = body ? strlen(body) : 0,
    };
    struct osbcl_resp rs = {0};
    int rc = osbcl_http(c, &rq, &rs, err);
    if (rc < 0)
        return rc;
    const char *ct = osbcl_resp_header(&rs, "content-type");
    resp->status = rs.status;
    resp->body = rs.body;
    resp->len = rs.len;
    resp->content_type = ct ? strdup(ct) : NULL;
    rs.body = NULL;
    osbcl_resp_free(&rs);
    return 0;
}

void osbc_response_free(struct osbc_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    free(resp->content_type);
    memset(resp, 0, sizeof *resp);
}

/* ------------------------------------------------------------ endpoints */

/* {"endpoint": "host:port/prefix", "headers": {...}} into b. */
static int parse_endpoint(osbc_client *c, const char *body, struct osbcl_base *b,
                          struct osbc_error *err)
{
    json_t *j = osbcl_json_parse(body, strlen(body), "endpoint", err);
    if (!j)
        return OSBC_E_PROTOCOL;
    const char *ep = json_string_value(json_object_get(j, "endpoint"));
    json_t *h = json_object_get(j, "headers");
    int rc;
    if (!ep || !*ep) {
        rc = osbcl_fail(err, OSBC_E_PROTOCOL, "the endpoint answer has no \"endpoint\"");
    } else if (h && !json_is_object(h)) {
        rc = osbcl_fail(err, OSBC_E_PROTOCOL, "the endpoint's \"headers\" is not an object");
    } else {
        /* An endpoint has no scheme (protocol.md 0.8): the client's protocol applies. */
        rc = osbcl_base_parse(b, ep, c->server.tls, err);
    }
    if (rc == 0 && h && json_object_size(h)) {
        b->headers = calloc(json_object_size(h) + 1, sizeof *b->headers);
        const char *k;
        json_t *v;
        size_t i = 0;
        rc = b->headers ? 0 : osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
        json_object_foreach(h, k, v)
        {
            if (rc < 0)
                break;
            const char *s = json_string_value(v);
            if (!s || strpbrk(k, "\r\n:") || strpbrk(s, "\r\n")) {
                rc = osbcl_fail(err, OSBC_E_PROTOCOL, "endpoint header \"%s\" is not usable", k);
                break;
            }
            if (asprintf(&b->headers[i++], "%s: %s", k, s) < 0) {
                b->headers[--i] = NULL;
                rc = osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
            }
        }
    }
    if (rc < 0)
        osbcl_base_free(b);
    json_decref(j);
    return rc;
}

int osbcl_endpoint(osbc_client *c, const char *id, int port, const struct osbcl_base **out,
                   struct osbc_error *err)
{
    for (size_t i = 0; i < c->n_eps; i++)
        if (c->eps[i].port == port && !strcmp(c->eps[i].id, id)) {
            *out = &c->eps[i].base;
            return 0;
        }
    struct osbcl_sb path = {0};
    osbcl_sb_adds(&path, "/v1/sandboxes/");
    osbcl_sb_esc(&path, id);
    osbcl_sb_addf(&path, "/endpoints/%d?use_server_proxy=%s", port,
                  c->use_server_proxy ? "true" : "false");
    char *p = osbcl_sb_done(&path, err);
    if (!p)
        return OSBC_E_NOMEM;
    char *body;
    int rc = osbcl_api(c, "GET", p, NULL, &body, err);
    free(p);
    if (rc < 0)
        return rc;
    struct osbcl_ep ep = {.port = port, .id = strdup(id)};
    struct osbcl_ep *grown = realloc(c->eps, (c->n_eps + 1) * sizeof *grown);
    if (grown)
        c->eps = grown;
    rc = ep.id && grown ? parse_endpoint(c, body, &ep.base, err)
                        : osbcl_fail(err, OSBC_E_NOMEM, "out of memory");
    free(body);
    if (rc < 0) {
        free(ep.id);
        return rc;
    }
    c->eps[c->n_eps] = ep;
    *out = &c->eps[c->n_eps++].base;
    return 0;
}

void osbcl_endpoint_forget(osbc_client *c, const char *id)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n_eps; i++) {
        if (!strcmp(c->eps[i].id, id)) {
            free(c->eps[i].id);
            osbcl_base_free(&c->eps[i].base);
        } else {
            c->eps[k++] = c->eps[i];
        }
    }
    c->n_eps = k;
}

int osbcl_sbx_http(osbc_client *c, const char *id, int port, struct osbcl_req *rq,
                   struct osbcl_resp *rs, struct osbc_error *err)
{
    if (!id || !*id)
        return osbcl_fail(err, OSBC_E_ARG, "no sandbox id");
    const struct osbcl_base *b;
    int rc = osbcl_endpoint(c, id, port, &b, err);
    if (rc < 0)
        return rc;
    rq->base = b;
    return osbcl_http(c, rq, rs, err);
}

int osbcl_sbx(osbc_client *c, const char *id, int port, const char *method, const char *path,
              const char *body_json, char **out, struct osbc_error *err)
{
    if (out)
        *out = NULL;
    if (!id || !*id)
        return osbcl_fail(err, OSBC_E_ARG, "no sandbox id");
    const struct osbcl_base *b;
    int rc = osbcl_endpoint(c, id, port, &b, err);
    if (rc < 0)
        return rc;
    return api_call(c, b, method, path, body_json, out, err);
}
