/* Warm pools (docs/pools.md), batch creates and the server's image store
 * (docs/server.md, docs/images.md). Bodies are the caller's JSON, checked
 * to be JSON objects before they are sent. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int check_object(const char *text, const char *what, struct osbc_error *err)
{
    json_error_t je;
    json_t *j = text ? json_loads(text, 0, &je) : NULL;
    bool ok = json_is_object(j);
    json_decref(j);
    if (!text)
        return osbcl_fail(err, OSBC_E_ARG, "%s: no body", what);
    if (!ok)
        return osbcl_fail(err, OSBC_E_ARG, "%s: the body must be a JSON object", what);
    return 0;
}

static int named(osbc_client *c, const char *method, const char *base, const char *name,
                 const char *body, char **json, struct osbc_error *err)
{
    if (json)
        *json = NULL;
    if (!name || !*name)
        return osbcl_fail(err, OSBC_E_ARG, "%s %s: no name", method, base);
    struct osbcl_sb p = {0};
    osbcl_sb_adds(&p, base);
    osbcl_sb_esc(&p, name);
    char *path = osbcl_sb_done(&p, err);
    if (!path)
        return OSBC_E_NOMEM;
    int rc = osbcl_api(c, method, path, body, json, err);
    free(path);
    return rc;
}

int osbc_pool_create(osbc_client *c, const char *body_json, char **json, struct osbc_error *err)
{
    int rc = check_object(body_json, "pool create", err);
    return rc ? rc : osbcl_api(c, "POST", "/v1/pools", body_json, json, err);
}

int osbc_pool_list(osbc_client *c, char **json, struct osbc_error *err)
{
    return osbcl_api(c, "GET", "/v1/pools", NULL, json, err);
}

int osbc_pool_get(osbc_client *c, const char *name, char **json, struct osbc_error *err)
{
    return named(c, "GET", "/v1/pools/", name, NULL, json, err);
}

int osbc_pool_update(osbc_client *c, const char *name, const char *body_json, char **json,
                     struct osbc_error *err)
{
    int rc = check_object(body_json, "pool update", err);
    return rc ? rc : named(c, "PUT", "/v1/pools/", name, body_json, json, err);
}

int osbc_pool_delete(osbc_client *c, const char *name, struct osbc_error *err)
{
    return named(c, "DELETE", "/v1/pools/", name, NULL, NULL, err);
}

int osbc_batch_create(osbc_client *c, const char *body_json, char **json, struct osbc_error *err)
{
    int rc = check_object(body_json, "batch create", err);
    return rc ? rc : osbcl_api(c, "POST", "/v1/sandboxes/batch", body_json, json, err);
}

int osbc_image_pull(osbc_client *c, const char *ref, const char *username, const char *password,
                    char **json, struct osbc_error *err)
{
    if (json)
        *json = NULL;
    if (!ref || !*ref)
        return osbcl_fail(err, OSBC_E_ARG, "image pull: no image reference");
    json_t *b = json_pack("{s:s}", "image", ref);
    if (b && username && *username) {
        json_t *a =
            json_pack("{s:s,s:s}", "username", username, "password", password ? password : "");
        if (!a || json_object_set_new(b, "auth", a) < 0) {
            json_decref(b);
            b = NULL;
        }
    }
    char *text = b ? osbcl_json_dump(b) : NULL;
    json_decref(b);
    if (!text)
        return osbcl_fail(err, OSBC_E_ARG, "image pull: cannot encode the request");
    /* A pull takes as long as the registry does: at least ten minutes. */
    long t = osbcl_timeout_ms(c) > 600000 ? osbcl_timeout_ms(c) : 600000;
    const char *const hdrs[] = {"Accept: application/json", NULL};
    struct osbcl_req rq = {.method = "POST",
                           .path = "/v1/images/pull",
                           .headers = hdrs,
                           .content_type = "application/json",
                           .body = text,
                           .body_len = strlen(text),
                           .timeout_ms = t};
    struct osbcl_resp rs = {0};
    int rc = osbcl_http(c, &rq, &rs, err);
    free(text);
    if (rc < 0)
        return rc;
    if (rs.status < 200 || rs.status >= 300)
        rc = osbcl_fail_http(err, rs.status, rs.body, rs.len, "POST /v1/images/pull");
    else if (json)
        *json = rs.body, rs.body = NULL;
    osbcl_resp_free(&rs);
    return rc;
}

int osbc_image_list(osbc_client *c, char **json, struct osbc_error *err)
{
    return osbcl_api(c, "GET", "/v1/images", NULL, json, err);
}

int osbc_image_delete(osbc_client *c, const char *name, struct osbc_error *err)
{
    return named(c, "DELETE", "/v1/images/", name, NULL, NULL, err);
}
