/* The image store over HTTP (ours; upstream has no such API): pull into
 * the store on the thread pool (shared with the pulls creates start), list,
 * remove. The same store `opensandbox-server image ...` works on. */
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"
#include "image/store.h"
#include "server/apierr.h"
#include "server/pull.h"
#include "server/server.h"
#include "server/spec.h"
#include "server/timefmt.h"

struct pull_req {
    struct osb_server *srv;
    struct osb_http_req *req; /* NULL once the client is gone */
    char *image;
};

static json_t *record_json(const struct osb_image *im)
{
    json_t *j = json_pack("{s:s,s:I}", "name", im->name, "size", (json_int_t)im->size_bytes);
    if (im->digest[0])
        json_object_set_new(j, "digest", json_string(im->digest));
    if (im->base[0])
        json_object_set_new(j, "base", json_string(im->base));
    if (im->created_ms > 0) {
        char when[OSB_TIMEFMT_LEN];
        osb_timefmt_us(im->created_ms * 1000, when);
        json_object_set_new(j, "createdAt", json_string(when));
    }
    return j;
}

static void on_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct pull_req *p = ud;
    p->req = NULL;
}

static void on_pulled(void *ud, const struct osb_err *err)
{
    struct pull_req *p = ud;
    if (p->req) {
        osb_http_req_on_close(p->req, NULL, NULL);
        struct osb_image im = {0};
        struct osb_err e2 = {0};
        struct osb_apierr e;
        if (err) {
            osb_pull_apierr(err, p->image, &e);
            osb_apierr_respond(p->req, &e);
        } else if (osb_istore_get(p->srv->images, p->image, &im, &e2) < 0) {
            osb_apierr(&e, "SANDBOX::IMAGE_PULL_FAILED", "image '%s': pulled, then: %s", p->image,
                       e2.msg);
            osb_apierr_respond(p->req, &e);
        } else {
            osb_http_respond_json(p->req, 200, record_json(&im));
            osb_image_free(&im);
        }
    }
    free(p->image);
    free(p);
}

/* POST /images/pull {"image": REF, "auth": {"username", "password"}?} */
static void h_pull(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    json_t *body = osb_api_body(req, false), *auth = NULL;
    if (!body)
        return;
    const char *image = NULL, *user = NULL, *pass = NULL, *k;
    struct osb_err err = {0};
    json_t *v;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "image") && strcmp(k, "auth")) {
            osb_apierr_reply(req, "IMAGE::INVALID_PARAMETER", "unknown field '%s'", k);
            goto out;
        }
    }
    if (osb_json_name(body, "image", true, &image, &err) < 0 || !*image || strlen(image) > 255 ||
        osb_json_obj(body, "auth", false, &auth, &err) < 0 ||
        (auth && (osb_json_str(auth, "username", true, &user, &err) < 0 ||
                  osb_json_str(auth, "password", true, &pass, &err) < 0))) {
        osb_apierr_reply(req, "IMAGE::INVALID_PARAMETER", "%s",
                         err.msg[0] ? err.msg : "'image' must be a reference of 1..255 bytes");
        goto out;
    }
    if (strcmp(srv->cfg->image.pull_policy, "never") == 0) {
        osb_apierr_reply(req, "IMAGE::PULL_DISABLED",
                         "image '%s': pulls are off on this server ([image] pull_policy is "
                         "\"never\"); import it with opensandbox-server image import",
                         image);
        goto out;
    }
    struct pull_req *p = osb_xcalloc(1, sizeof *p);
    p->srv = srv;
    p->req = req;
    p->image = osb_xstrdup(image);
    struct osb_create_spec spec = {
        .image = p->image, .auth_user = (char *)user, .auth_pass = (char *)pass};
    osb_http_req_on_close(req, on_gone, p);
    osb_pull_ensure(srv, &spec, on_pulled, p); /* copies what it keeps of spec */
out:
    json_decref(body);
}

static void h_list(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    struct osb_image *v = NULL;
    size_t n = 0;
    struct osb_err err = {0};
    if (osb_istore_list(srv->images, &v, &n, &err) < 0) {
        osb_apierr_reply(req, "SANDBOX::STORE_FAILED", "image store: %s", err.msg);
        return;
    }
    json_t *items = json_array();
    json_array_append_new(items, json_pack("{s:s,s:b}", "name", "host", "builtin", 1));
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(items, record_json(&v[i]));
        osb_image_free(&v[i]);
    }
    free(v);
    osb_http_respond_json(req, 200, json_pack("{s:o}", "items", items));
}

/* DELETE /images/{name} (percent-encoded: a reference holds '/' and ':'),
 * or DELETE /images?name=REF. */
static void h_delete(struct osb_http_req *req, void *ud)
{
    struct osb_server *srv = ud;
    const char *name = osb_http_req_param(req, "name");
    if (!name)
        name = osb_http_req_query(req, "name");
    if (!name || !*name) {
        osb_apierr_reply(req, "IMAGE::INVALID_PARAMETER", "which image? /images/{name}");
        return;
    }
    if (!strcmp(name, "host")) {
        osb_apierr_reply(req, "IMAGE::IN_USE", "image 'host' is built in");
        return;
    }
    char by[64];
    struct osb_image im = {0};
    struct osb_err err = {0};
    if (osb_istore_get(srv->images, name, &im, &err) < 0) {
        osb_apierr_reply(req, "IMAGE::NOT_FOUND", "image '%s' is not in the store", name);
        return;
    }
    bool used = osb_images_used_by(srv->reg, im.name, by, sizeof by);
    char stored[sizeof im.name];
    memcpy(stored, im.name, sizeof stored);
    osb_image_free(&im);
    if (used) {
        osb_apierr_reply(req, "IMAGE::IN_USE", "image '%s' is used by sandbox %s", stored, by);
        return;
    }
    if (osb_istore_remove(srv->images, stored, osb_images_in_use_cb, srv->reg, &err) < 0) {
        osb_apierr_reply(req, err.code == OSB_E_NOTFOUND ? "IMAGE::NOT_FOUND" : "IMAGE::IN_USE",
                         "image '%s': %s", stored, err.msg);
        return;
    }
    osb_http_respond_empty(req, 204);
}

const struct osb_http_route osb_api_image_routes[] = {
    {"POST", "/images/pull", h_pull, 0, NULL},
    {"GET", "/images", h_list, OSB_ROUTE_NO_BODY, NULL},
    {"DELETE", "/images", h_delete, OSB_ROUTE_NO_BODY, NULL},
    {"DELETE", "/images/:name", h_delete, OSB_ROUTE_NO_BODY, NULL},
};
const size_t osb_api_image_nroutes = sizeof osb_api_image_routes / sizeof osb_api_image_routes[0];
