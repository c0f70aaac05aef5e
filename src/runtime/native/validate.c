/* The checks of a sandbox spec a backend makes itself: its callers are
 * the server (which validated the request already) and tests that drive
 * the runtime directly. Limits use runtime.h's one table. */
#include <stdio.h>
#include <string.h>

#include "runtime/native/state.h"

static int validate_env(char *const *env, struct osb_err *err)
{
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i])
            return osb_err_set(err, OSB_E_INVALID, "env entry `%s` is not KEY=VALUE", env[i]);
    }
    return 0;
}

static int validate_hostname(const char *h, struct osb_err *err)
{
    size_t n = strlen(h);
    if (n == 0 || n > 63)
        return osb_err_set(err, OSB_E_INVALID, "hostname must be 1-63 characters");
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.'))
            return osb_err_set(err, OSB_E_INVALID, "hostname `%s` has character '%c'", h, c);
    }
    return 0;
}

/* A relative path of plain components: no leading "/", no "..". */
static bool rel_ok(const char *p)
{
    if (!p || !*p)
        return true;
    if (p[0] == '/')
        return false;
    for (const char *c = p; *c;) {
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.')
            return false;
        c += len;
        c += *c == '/';
    }
    return true;
}

static int validate_volumes(const struct osb_sandbox_spec *s, struct osb_err *err)
{
    for (size_t i = 0; i < s->n_volumes; i++) {
        const struct osb_rt_volume *v = &s->volumes[i];
        if (!v->name || !*v->name || !v->src_root || v->src_root[0] != '/')
            return osb_err_set(err, OSB_E_INVALID,
                               "volume %zu: a name and an absolute source "
                               "root are required",
                               i);
        if (!rel_ok(v->src_rel) || !rel_ok(v->sub_path))
            return osb_err_set(err, OSB_E_INVALID,
                               "volume `%s`: source paths must be relative "
                               "without '..'",
                               v->name);
        if (!v->dst || v->dst[0] != '/' || !v->dst[1] || !rel_ok(v->dst + 1))
            return osb_err_set(err, OSB_E_INVALID,
                               "volume `%s`: the mount path must be absolute, "
                               "not '/', without '..'",
                               v->name);
    }
    return 0;
}

/* Layer dirs go into overlayfs mount options: absolute, none of its
 * separators. */
static int validate_layers(const struct osb_sandbox_spec *s, struct osb_err *err)
{
    size_t n = 0;
    for (; s->layers && s->layers[n]; n++)
        if (s->layers[n][0] != '/' || strpbrk(s->layers[n], ",:\\\n"))
            return osb_err_set(err, OSB_E_INVALID,
                               "image layer `%s` must be an absolute path "
                               "without ',', ':', '\\' or newlines",
                               s->layers[n]);
    if (n == 0 && !s->image_host)
        return osb_err_set(err, OSB_E_INVALID, "image `%s` has no layers",
                           s->image ? s->image : "");
    return 0;
}

static int validate_limits(const struct osb_sandbox_spec *s, struct osb_err *err)
{
    if (s->cpu_millicores < 0 || s->memory_bytes < 0 || s->pids_max < 0 || s->disk_bytes < 0)
        return osb_err_set(err, OSB_E_INVALID, "resource limits must not be negative");
    if (s->memory_bytes > 0 && s->memory_bytes < OSB_LIMIT_MIN_MEMORY)
        return osb_err_set(err, OSB_E_INVALID, "memory limit below %lld MiB cannot run execd",
                           OSB_LIMIT_MIN_MEMORY >> 20);
    if (s->pids_max > 0 && s->pids_max < OSB_LIMIT_MIN_PIDS)
        return osb_err_set(err, OSB_E_INVALID,
                           "pids limit below %d cannot run execd (it counts threads)",
                           OSB_LIMIT_MIN_PIDS);
    if (s->disk_bytes > 0 && s->disk_bytes < OSB_LIMIT_MIN_DISK)
        return osb_err_set(err, OSB_E_INVALID, "disk limit below %lld MiB",
                           OSB_LIMIT_MIN_DISK >> 20);
    return 0;
}

int osb_nat_validate(const struct osb_sandbox_spec *s, struct osb_err *err)
{
    if (osb_nat_check_id(s->id, err) < 0)
        return -1;
    if (!s->entrypoint || !s->entrypoint[0] || !s->entrypoint[0][0])
        return osb_err_set(err, OSB_E_INVALID, "entrypoint must have at least one element");
    if (!s->execd_token || !s->execd_token[0] || strpbrk(s->execd_token, " \t\r\n"))
        return osb_err_set(err, OSB_E_INVALID, "execd token is required (no whitespace)");
    if (s->netns &&
        (s->netns[0] != '/' || !s->dns || strspn(s->dns, "0123456789.") != strlen(s->dns)))
        return osb_err_set(err, OSB_E_INVALID,
                           "a network slot needs an absolute netns path "
                           "and an IPv4 nameserver");
    if (validate_limits(s, err) < 0 || validate_layers(s, err) < 0)
        return -1;
    if (s->hostname && validate_hostname(s->hostname, err) < 0)
        return -1;
    if (validate_volumes(s, err) < 0)
        return -1;
    return validate_env(s->env, err);
}
