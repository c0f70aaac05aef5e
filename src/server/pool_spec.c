/* Pool request bodies (pool_spec.h). */
#include "server/pool_spec.h"

#include <stdio.h>
#include <string.h>


#define BAD "SANDBOX::INVALID_PARAMETER"
#define MAX_MEMBERS 10000

int osb_pool_name_check(const char *name, struct osb_apierr *e)
{
    size_t n = strlen(name);
    bool ok = n > 0 && n <= 63 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
              name[0] != '-' && name[n - 1] != '-';
    if (!ok)
        return osb_apierr(e, BAD,
                          "field 'name' must be a Kubernetes resource name: lower-case letters, "
                          "digits and '-', starting and ending with a letter or digit, at most "
                          "63 characters (got '%.80s')",
                          name);
    return 0;
}

static int cap_field(json_t *v, const char *k, int64_t *out, struct osb_apierr *e)
{
    json_t *f = json_object_get(v, k);
    if (!f)
        return osb_apierr(e, BAD, "field 'capacitySpec.%s' is required", k);
    if (!json_is_integer(f) || json_integer_value(f) < 0 || json_integer_value(f) > MAX_MEMBERS)
        return osb_apierr(e, BAD, "field 'capacitySpec.%s' must be an integer in 0..%d", k,
                          MAX_MEMBERS);
    *out = json_integer_value(f);
    return 0;
}

int osb_pool_capacity_parse(json_t *v, struct osb_pool_capacity *out, struct osb_apierr *e)
{
    if (!v)
        return osb_apierr(e, BAD, "field 'capacitySpec' is required");
    if (!json_is_object(v))
        return osb_apierr(e, BAD,
                          "field 'capacitySpec' must be an object {bufferMin, bufferMax, "
                          "poolMin, poolMax}");
    const char *k;
    json_t *f;
    json_object_foreach(v, k, f)
    {
        if (strcmp(k, "bufferMin") && strcmp(k, "bufferMax") && strcmp(k, "poolMin") &&
            strcmp(k, "poolMax"))
            return osb_apierr(e, BAD, "field 'capacitySpec.%s' is not known", k);
    }
    struct osb_pool_capacity c;
    if (cap_field(v, "bufferMin", &c.buffer_min, e) < 0 ||
        cap_field(v, "bufferMax", &c.buffer_max, e) < 0 ||
        cap_field(v, "poolMin", &c.pool_min, e) < 0 || cap_field(v, "poolMax", &c.pool_max, e) < 0)
        return -1;
    if (c.buffer_min > c.buffer_max)
        return osb_apierr(e, BAD, "field 'capacitySpec.bufferMin' must be <= bufferMax");
    if (c.pool_min > c.pool_max)
        return osb_apierr(e, BAD, "field 'capacitySpec.poolMin' must be <= poolMax");
    if (c.buffer_min > c.pool_max)
        return osb_apierr(e, BAD, "field 'capacitySpec.bufferMin' must be <= poolMax");
    *out = c;
    return 0;
}

json_t *osb_pool_capacity_json(const struct osb_pool_capacity *c)
{
    return json_pack("{s:I,s:I,s:I,s:I}", "bufferMax", (json_int_t)c->buffer_max, "bufferMin",
                     (json_int_t)c->buffer_min, "poolMax", (json_int_t)c->pool_max, "poolMin",
                     (json_int_t)c->pool_min);
}

/* ------------------------------------------------ Kubernetes pod template */

static int only_keys(json_t *o, const char *where, const char *const *keys, struct osb_apierr *e)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        bool known = false;
        for (size_t i = 0; keys[i] && !known; i++)
            known = strcmp(k, keys[i]) == 0;
        if (!known)
            return osb_apierr(e, BAD,
                              "field '%s.%s' has no equivalent on this server (a pool template "
                              "maps only the fields its documentation lists)",
                              where, k);
    }
    return 0;
}

static int pod_env_item(json_t *v, size_t i, json_t *o, struct osb_apierr *e)
{
    static const char *const keys[] = {"name", "value", NULL};
    char where[80];
    snprintf(where, sizeof where, "template.spec.containers[0].env[%zu]", i);
    if (!json_is_object(v))
        return osb_apierr(e, BAD, "field '%s' must be an object {name, value}", where);
    if (only_keys(v, where, keys, e) < 0)
        return -1;
    json_t *n = json_object_get(v, "name"), *val = json_object_get(v, "value");
    if (!json_is_string(n) || !*json_string_value(n))
        return osb_apierr(e, BAD, "field '%s.name' must be a non-empty string", where);
    if (val && !json_is_string(val))
        return osb_apierr(e, BAD, "field '%s.value' must be a string", where);
    json_object_set_new(o, json_string_value(n), json_string(val ? json_string_value(val) : ""));
    return 0;
}

static int pod_env(json_t *env, json_t *out, struct osb_apierr *e)
{
    if (!json_is_array(env))
        return osb_apierr(e, BAD, "field 'template.spec.containers[0].env' must be an array");
    size_t i;
    json_t *v;
    json_t *o = json_object();
    json_array_foreach(env, i, v)
    {
        if (pod_env_item(v, i, o, e) < 0) {
            json_decref(o);
            return -1;
        }
    }
    json_object_set_new(out, "env", o);
    return 0;
}

static int pod_resources(json_t *r, json_t *out, struct osb_apierr *e)
{
    static const char *const keys[] = {"limits", NULL};
    static const char *const lkeys[] = {"cpu", "memory", NULL};
    if (!json_is_object(r) || only_keys(r, "template.spec.containers[0].resources", keys, e) < 0)
        return e->code ? -1
                       : osb_apierr(e, BAD,
                                    "field 'template.spec.containers[0].resources' must be an "
                                    "object");
    json_t *l = json_object_get(r, "limits");
    if (!l)
        return 0;
    if (!json_is_object(l) ||
        only_keys(l, "template.spec.containers[0].resources.limits", lkeys, e) < 0)
        return e->code ? -1
                       : osb_apierr(e, BAD,
                                    "field 'template.spec.containers[0].resources.limits' must "
                                    "be an object");
    json_object_set(out, "resourceLimits", l);
    return 0;
}

/* command + args -> entrypoint (as Kubernetes runs them: command replaces
 * the image's ENTRYPOINT, args its CMD). */
static int pod_entrypoint(json_t *c, json_t *out, struct osb_apierr *e)
{
    json_t *cmd = json_object_get(c, "command"), *args = json_object_get(c, "args");
    if ((cmd && !json_is_array(cmd)) || (args && !json_is_array(args)))
        return osb_apierr(e, BAD,
                          "fields 'template.spec.containers[0].command' and 'args' must be "
                          "arrays of strings");
    if (!cmd && args)
        return osb_apierr(e, BAD,
                          "field 'template.spec.containers[0].args' needs 'command' here (the "
                          "image's ENTRYPOINT is not combined with args)");
    if (!cmd)
        return 0;
    json_t *ep = json_copy(cmd);
    json_array_extend(ep, args ? args : json_array());
    json_object_set_new(out, "entrypoint", ep);
    return 0;
}

static int pod_container(json_t *c, json_t *out, struct osb_apierr *e)
{
    static const char *const keys[] = {"name", "image",     "command", "args",
                                       "env",  "resources", NULL};
    if (!json_is_object(c))
        return osb_apierr(e, BAD, "field 'template.spec.containers[0]' must be an object");
    if (only_keys(c, "template.spec.containers[0]", keys, e) < 0)
        return -1;
    json_t *img = json_object_get(c, "image");
    if (!json_is_string(img))
        return osb_apierr(e, BAD, "field 'template.spec.containers[0].image' is required");
    json_object_set_new(out, "image", json_pack("{s:O}", "uri", img));
    if (pod_entrypoint(c, out, e) < 0)
        return -1;
    json_t *env = json_object_get(c, "env");
    if (env && pod_env(env, out, e) < 0)
        return -1;
    json_t *r = json_object_get(c, "resources");
    return r ? pod_resources(r, out, e) : 0;
}

static json_t *from_pod(json_t *t, struct osb_apierr *e)
{
    static const char *const top[] = {"metadata", "spec", NULL};
    static const char *const meta[] = {"labels", NULL};
    static const char *const spec[] = {"containers", NULL};
    json_t *md = json_object_get(t, "metadata"), *sp = json_object_get(t, "spec");
    if (only_keys(t, "template", top, e) < 0)
        return NULL;
    if (md && (!json_is_object(md) || only_keys(md, "template.metadata", meta, e) < 0)) {
        if (!e->code)
            osb_apierr(e, BAD, "field 'template.metadata' must be an object");
        return NULL;
    }
    if (!json_is_object(sp) || only_keys(sp, "template.spec", spec, e) < 0) {
        if (!e->code)
            osb_apierr(e, BAD, "field 'template.spec' must be an object");
        return NULL;
    }
    json_t *cs = json_object_get(sp, "containers");
    if (!json_is_array(cs) || json_array_size(cs) != 1) {
        osb_apierr(e, BAD,
                   "field 'template.spec.containers' must hold exactly one container (a sandbox "
                   "is one container here)");
        return NULL;
    }
    json_t *out = json_object();
    json_t *labels = md ? json_object_get(md, "labels") : NULL;
    if (labels)
        json_object_set(out, "metadata", labels);
    if (pod_container(json_array_get(cs, 0), out, e) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------ ours */

static json_t *from_ours(json_t *t, struct osb_apierr *e)
{
    static const char *const fixed[] = {"timeout", "snapshotId", NULL};
    for (size_t i = 0; fixed[i]; i++)
        if (json_object_get(t, fixed[i])) {
            osb_apierr(
                e, BAD, "field 'template.%s' is not allowed in a pool template (%s)", fixed[i],
                i == 0 ? "the claiming request's timeout applies" : "members start from an image");
            return NULL;
        }
    json_t *x = json_object_get(t, "extensions");
    if (json_is_object(x) && json_object_get(x, "poolRef")) {
        osb_apierr(e, BAD, "field 'template.extensions.poolRef' is not allowed in a pool template");
        return NULL;
    }
    return json_deep_copy(t);
}

json_t *osb_pool_template_body(json_t *tmpl, const struct osb_spec_limits *lim,
                               struct osb_apierr *e)
{
    memset(e, 0, sizeof *e);
    if (!tmpl) {
        osb_apierr(e, BAD, "field 'template' is required");
        return NULL;
    }
    if (!json_is_object(tmpl)) {
        osb_apierr(e, BAD, "field 'template' must be an object");
        return NULL;
    }
    bool pod = json_object_get(tmpl, "spec") != NULL;
    json_t *body = pod ? from_pod(tmpl, e) : from_ours(tmpl, e);
    if (!body)
        return NULL;
    /* A template without a command keeps its members up, as the SDKs'
     * default does. */
    if (!json_object_get(body, "entrypoint"))
        json_object_set_new(body, "entrypoint", json_pack("[s,s,s]", "tail", "-f", "/dev/null"));
    struct osb_create_spec spec;
    struct osb_apierr pe;
    if (osb_spec_parse_create(body, lim, &spec, &pe) < 0) {
        json_decref(body);
        e->status = pe.status;
        e->code = pe.code;
        snprintf(e->msg, sizeof e->msg, "template: %s", pe.msg);
        return NULL;
    }
    osb_spec_free(&spec);
    return body;
}
