/* Decoding of the runtime -> helper spec (see spec.h). The runtime wrote
 * it, so a failure here is a bug or a version mismatch: the message names
 * the field. */
#include "runtime/init/spec.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static int get_str(json_t *o, const char *key, bool required, char **out, struct osb_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required)
            return osb_err_set(err, OSB_E_INVALID, "init spec: missing \"%s\"", key);
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"%s\" must be a string", key);
    *out = osb_xstrdup(json_string_value(v));
    return 0;
}

static int get_int(json_t *o, const char *key, int64_t *out, struct osb_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"%s\" must be a non-negative integer",
                           key);
    *out = json_integer_value(v);
    return 0;
}

/* A NULL-terminated string vector; an absent key gives an empty vector. */
static int get_strv(json_t *o, const char *key, char ***out, struct osb_err *err)
{
    json_t *a = json_object_get(o, key);
    size_t n = json_is_array(a) ? json_array_size(a) : 0;
    if (a && !json_is_null(a) && !json_is_array(a))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"%s\" must be an array", key);
    char **v = osb_xcalloc(n + 1, sizeof *v);
    *out = v;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_string(e))
            return osb_err_set(err, OSB_E_INVALID, "init spec: \"%s\"[%zu] must be a string",
                               key, i);
        v[i] = osb_xstrdup(json_string_value(e));
    }
    return 0;
}

static int get_binds(json_t *o, struct osb_init_spec *s, struct osb_err *err)
{
    json_t *a = json_object_get(o, "binds");
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"binds\" must be an array");
    s->binds = osb_xcalloc(json_array_size(a) + 1, sizeof *s->binds);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        struct osb_init_bind *b = &s->binds[s->n_binds++];
        if (get_str(e, "src", true, &b->src, err) < 0 || get_str(e, "dst", true, &b->dst, err) < 0)
            return osb_err_wrap(err, "binds[%zu]", i);
    }
    return 0;
}

static int get_cgroups(json_t *o, struct osb_init_spec *s, struct osb_err *err)
{
    json_t *a = json_object_get(o, "cgroups");
    if (!json_is_array(a))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"cgroups\" must be an array");
    s->cgroups = osb_xcalloc(json_array_size(a) + 1, sizeof *s->cgroups);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        struct osb_init_cgroup *c = &s->cgroups[s->n_cgroups];
        char *role = NULL;
        if (get_str(e, "role", true, &role, err) < 0)
            return osb_err_wrap(err, "cgroups[%zu]", i);
        int r = osb_cg_role_parse(role);
        free(role);
        if (r < 0)
            return osb_err_set(err, OSB_E_INVALID, "init spec: cgroups[%zu]: unknown role", i);
        c->role = (enum osb_cg_role)r;
        s->n_cgroups++;
        if (get_str(e, "dir", true, &c->dir, err) < 0 ||
            get_str(e, "home", true, &c->home, err) < 0)
            return osb_err_wrap(err, "cgroups[%zu]", i);
    }
    return 0;
}

static int get_volume(json_t *e, struct osb_init_volume *v, struct osb_err *err)
{
    json_t *ro = json_object_get(e, "ro");
    if (get_str(e, "name", true, &v->name, err) < 0 ||
        get_str(e, "root", true, &v->src_root, err) < 0 ||
        get_str(e, "rel", true, &v->src_rel, err) < 0 ||
        get_str(e, "sub", true, &v->sub_path, err) < 0 || get_str(e, "dst", true, &v->dst, err) < 0)
        return -1;
    if (!json_is_boolean(ro))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"ro\" must be a boolean");
    v->read_only = json_is_true(ro);
    return 0;
}

static int get_volumes(json_t *o, struct osb_init_spec *s, struct osb_err *err)
{
    json_t *a = json_object_get(o, "volumes");
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"volumes\" must be an array");
    s->volumes = osb_xcalloc(json_array_size(a) + 1, sizeof *s->volumes);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (get_volume(e, &s->volumes[s->n_volumes++], err) < 0)
            return osb_err_wrap(err, "volumes[%zu]", i);
    }
    return 0;
}

static int decode_fields(json_t *o, struct osb_init_spec *s, struct osb_err *err)
{
    if (get_str(o, "id", true, &s->id, err) < 0 || get_str(o, "dir", true, &s->dir, err) < 0 ||
        get_str(o, "image", true, &s->image, err) < 0 ||
        get_str(o, "lower", true, &s->lower, err) < 0 ||
        get_str(o, "execd", true, &s->execd, err) < 0 ||
        get_str(o, "hostname", true, &s->hostname, err) < 0 ||
        get_str(o, "token", true, &s->token, err) < 0 ||
        get_str(o, "workdir", false, &s->workdir, err) < 0 ||
        get_str(o, "user", false, &s->user, err) < 0 ||
        get_str(o, "netns", false, &s->netns, err) < 0 ||
        get_str(o, "dns", false, &s->dns, err) < 0)
        return -1;
    if (get_strv(o, "entrypoint", &s->entrypoint, err) < 0 || get_strv(o, "env", &s->env, err) < 0)
        return -1;
    s->keep_running = json_is_true(json_object_get(o, "keep_running"));
    if (!s->entrypoint[0])
        return osb_err_set(err, OSB_E_INVALID, "init spec: \"entrypoint\" is empty");
    if (get_int(o, "memory", &s->memory_bytes, err) < 0 ||
        get_int(o, "cpu", &s->cpu_millicores, err) < 0 ||
        get_int(o, "pids", &s->pids_max, err) < 0 || get_int(o, "disk", &s->disk_bytes, err) < 0)
        return -1;
    if (get_volumes(o, s, err) < 0)
        return -1;
    return get_binds(o, s, err) < 0 ? -1 : get_cgroups(o, s, err);
}

int osb_init_spec_decode(const char *data, size_t len, struct osb_init_spec *out,
                         struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return osb_err_set(err, OSB_E_INVALID, "init spec: not a JSON object: %s", je.text);
    }
    int r = decode_fields(o, out, err);
    json_decref(o);
    if (r < 0)
        osb_init_spec_free(out);
    return r;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

void osb_init_spec_free(struct osb_init_spec *s)
{
    char **strs[] = {&s->id, &s->dir, &s->image, &s->lower, &s->execd, &s->hostname, &s->token,
                    &s->workdir, &s->user, &s->netns, &s->dns};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(*strs[i]);
    free_strv(s->entrypoint);
    free_strv(s->env);
    for (size_t i = 0; i < s->n_binds; i++) {
        free(s->binds[i].src);
        free(s->binds[i].dst);
    }
    free(s->binds);
    for (size_t i = 0; i < s->n_cgroups; i++) {
        free(s->cgroups[i].dir);
        free(s->cgroups[i].home);
    }
    free(s->cgroups);
    for (size_t i = 0; i < s->n_volumes; i++) {
        struct osb_init_volume *v = &s->volumes[i];
        free(v->name);
        free(v->src_root);
        free(v->src_rel);
        free(v->sub_path);
        free(v->dst);
    }
    free(s->volumes);
    memset(s, 0, sizeof *s);
}
