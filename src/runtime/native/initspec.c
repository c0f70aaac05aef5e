/* Runtime side of the runtime -> helper spec (see init/spec.h). */
#include <jansson.h>

#include "common/json.h"
#include "runtime/init/spec.h"

static json_t *strv(char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *volumes(const struct osb_init_spec *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->n_volumes; i++) {
        const struct osb_init_volume *v = &s->volumes[i];
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "name", v->name, "root",
                                           v->src_root, "rel", v->src_rel ? v->src_rel : "",
                                           "sub", v->sub_path ? v->sub_path : "", "dst", v->dst,
                                           "ro", v->read_only));
    }
    return a;
}

char *osb_init_spec_encode(const struct osb_init_spec *s, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(s->id));
    json_object_set_new(o, "dir", json_string(s->dir));
    json_object_set_new(o, "image", json_string(s->image));
    json_object_set_new(o, "lower", json_string(s->lower));
    json_object_set_new(o, "execd", json_string(s->execd));
    json_object_set_new(o, "hostname", json_string(s->hostname));
    json_object_set_new(o, "token", json_string(s->token));
    if (s->workdir)
        json_object_set_new(o, "workdir", json_string(s->workdir));
    if (s->keep_running)
        json_object_set_new(o, "keep_running", json_true());
    if (s->user)
        json_object_set_new(o, "user", json_string(s->user));
    if (s->netns)
        json_object_set_new(o, "netns", json_string(s->netns));
    if (s->dns)
        json_object_set_new(o, "dns", json_string(s->dns));
    json_object_set_new(o, "entrypoint", strv(s->entrypoint));
    json_object_set_new(o, "env", strv(s->env));
    json_object_set_new(o, "memory", json_integer(s->memory_bytes));
    json_object_set_new(o, "cpu", json_integer(s->cpu_millicores));
    json_object_set_new(o, "pids", json_integer(s->pids_max));
    json_object_set_new(o, "disk", json_integer(s->disk_bytes));
    json_t *binds = json_array();
    for (size_t i = 0; i < s->n_binds; i++)
        json_array_append_new(binds, json_pack("{s:s,s:s}", "src", s->binds[i].src, "dst",
                                               s->binds[i].dst));
    json_object_set_new(o, "binds", binds);
    json_t *cgs = json_array();
    for (size_t i = 0; i < s->n_cgroups; i++)
        json_array_append_new(cgs, json_pack("{s:s,s:s,s:s}", "role",
                                             osb_cg_role_name(s->cgroups[i].role), "dir",
                                             s->cgroups[i].dir, "home", s->cgroups[i].home));
    json_object_set_new(o, "cgroups", cgs);
    json_object_set_new(o, "volumes", volumes(s));
    char *out = osb_json_dump(o, len);
    json_decref(o);
    return out;
}
