/* Builds the create body: the SDKs' defaults (entrypoint tail -f /dev/null,
 * timeout 600 s, cpu 1 / memory 2Gi, empty env, metadata and extensions)
 * and the caller's JSON documents checked before anything is sent. */
#include <string.h>

#include "create_req.h"

static json_t *parse_doc(const char *text, const char *what, bool array, struct osbc_error *err)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) {
        osbcl_fail(err, OSBC_E_ARG, "%s is not JSON: %s (line %d)", what, je.text, je.line);
        return NULL;
    }
    if (array ? !json_is_array(j) : !json_is_object(j)) {
        osbcl_fail(err, OSBC_E_ARG, "%s must be a JSON %s", what, array ? "array" : "object");
        json_decref(j);
        return NULL;
    }
    return j;
}

static int add_image(json_t *b, const struct osbc_create_opts *o)
{
    json_t *img = json_pack("{s:s}", "uri", o->image);
    if (img && o->image_username && *o->image_username) {
        json_t *auth = json_pack("{s:s,s:s}", "username", o->image_username, "password",
                                 o->image_password ? o->image_password : "");
        if (!auth || json_object_set_new(img, "auth", auth) < 0) {
            json_decref(img);
            return -1;
        }
    }
    return img ? json_object_set_new(b, "image", img) : -1;
}

static int add_entrypoint(json_t *b, const struct osbc_create_opts *o)
{
    static const char *const def[] = {"tail", "-f", "/dev/null"};
    const char *const *argv = o->n_entrypoint ? o->entrypoint : def;
    size_t n = o->n_entrypoint ? o->n_entrypoint : 3;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (!argv[i] || json_array_append_new(a, json_string(argv[i])) < 0) {
            json_decref(a);
            return -1;
        }
    return a ? json_object_set_new(b, "entrypoint", a) : -1;
}

static int add_docs(json_t *b, const struct osbc_create_opts *o, struct osbc_error *err)
{
    if (o->network_policy_json) {
        json_t *np = parse_doc(o->network_policy_json, "the network policy", false, err);
        if (!np)
            return OSBC_E_ARG;
        if (json_object_set_new(b, "networkPolicy", np) < 0)
            return OSBC_E_NOMEM;
    }
    if (o->credential_proxy &&
        json_object_set_new(b, "credentialProxy", json_pack("{s:b}", "enabled", 1)) < 0)
        return OSBC_E_NOMEM;
    if (o->volumes_json) {
        json_t *v = parse_doc(o->volumes_json, "the volumes", true, err);
        if (!v)
            return OSBC_E_ARG;
        if (json_object_set_new(b, "volumes", v) < 0)
            return OSBC_E_NOMEM;
    }
    return 0;
}

int osbcl_create_body(const struct osbc_create_opts *o, json_t **out, struct osbc_error *err)
{
    *out = NULL;
    bool img = o->image && *o->image, snap = o->snapshot_id && *o->snapshot_id;
    if (img == snap)
        return osbcl_fail(err, OSBC_E_ARG, "create: give an image or a snapshot id (one of them)");
    if (o->timeout_s < OSBC_TIMEOUT_NONE)
        return osbcl_fail(err, OSBC_E_ARG, "create: timeout %ld s", o->timeout_s);
    if (o->n_entrypoint && !o->entrypoint)
        return osbcl_fail(err, OSBC_E_ARG, "create: n_entrypoint without entrypoint");
    static const struct osbc_kv def_res[] = {{"cpu", "1"}, {"memory", "2Gi"}};
    json_t *b = json_object();
    int bad = !b;
    if (!bad && img)
        bad |= add_image(b, o);
    if (!bad && snap)
        bad |= json_object_set_new(b, "snapshotId", json_string(o->snapshot_id));
    if (!bad)
        bad |= add_entrypoint(b, o);
    if (!bad && o->timeout_s != OSBC_TIMEOUT_NONE)
        bad |= json_object_set_new(b, "timeout", json_integer(o->timeout_s ? o->timeout_s : 600));
    if (!bad)
        bad |= osbcl_json_kv(b, "resourceLimits", o->n_resources ? o->resources : def_res,
                             o->n_resources ? o->n_resources : 2);
    if (!bad)
        bad |= osbcl_json_kv(b, "env", o->env, o->n_env);
    if (!bad)
        bad |= osbcl_json_kv(b, "metadata", o->metadata, o->n_metadata);
    if (!bad)
        bad |= osbcl_json_kv(b, "extensions", o->extensions, o->n_extensions);
    if (bad) {
        json_decref(b);
        return osbcl_fail(err, OSBC_E_ARG,
                          "create: cannot encode the request (a NULL or "
                          "non-UTF-8 string?)");
    }
    int rc = add_docs(b, o, err);
    if (rc < 0) {
        json_decref(b);
        return rc == OSBC_E_NOMEM ? osbcl_fail(err, rc, "out of memory") : rc;
    }
    *out = b;
    return 0;
}
