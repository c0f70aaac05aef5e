#include "server/complete.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

int osb_spec_resolve(struct osb_istore *images, struct osb_create_spec *spec, struct osb_err *err)
{
    osb_image_res_free(&spec->img);
    return osb_image_resolve(images, spec->image, &spec->img, err);
}

static size_t strv_len(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static bool has_key(char *const *env, const char *kv)
{
    size_t k = strcspn(kv, "=");
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], kv, k) == 0 && env[i][k] == '=')
            return true;
    return false;
}

/* The image's Env under the request's. */
static void merge_env(struct osb_sandbox_spec *sb, char *const *img_env)
{
    size_t a = strv_len(sb->env), b = strv_len(img_env), n = a;
    char **env = osb_xcalloc(a + b + 1, sizeof *env);
    for (size_t i = 0; i < a; i++)
        env[i] = sb->env[i];
    for (size_t i = 0; i < b; i++)
        if (strchr(img_env[i], '=') && !has_key(sb->env, img_env[i]))
            env[n++] = osb_xstrdup(img_env[i]);
    free(sb->env);
    sb->env = env;
}

static bool is_keepalive(char *const *ep)
{
    return strv_len(ep) == 3 && strcmp(ep[0], "tail") == 0 && strcmp(ep[1], "-f") == 0 &&
           strcmp(ep[2], "/dev/null") == 0;
}

/* The client asked for a sandbox that stays up (the keep-alive default):
 * the image's own command runs, but its end is not the sandbox's. */
static void image_entrypoint(struct osb_sandbox_spec *sb, const struct osb_image *im)
{
    size_t a = strv_len(im->entrypoint), b = strv_len(im->cmd);
    if (a + b == 0 || !is_keepalive(sb->entrypoint))
        return;
    char **ep = osb_xcalloc(a + b + 1, sizeof *ep);
    for (size_t i = 0; i < a; i++)
        ep[i] = osb_xstrdup(im->entrypoint[i]);
    for (size_t i = 0; i < b; i++)
        ep[a + i] = osb_xstrdup(im->cmd[i]);
    for (size_t i = 0; sb->entrypoint[i]; i++)
        free(sb->entrypoint[i]);
    free(sb->entrypoint);
    sb->entrypoint = ep;
    sb->keep_running = true;
}

static void apply_config(struct osb_create_spec *spec, const struct osb_image *im)
{
    struct osb_sandbox_spec *sb = &spec->sb;
    merge_env(sb, im->env);
    if (im->workdir && *im->workdir) {
        free(sb->workdir);
        sb->workdir = osb_xstrdup(im->workdir);
    }
    if (im->user && *im->user) {
        free(sb->user);
        sb->user = osb_xstrdup(im->user);
    }
    if (!spec->snapshot_id)
        image_entrypoint(sb, im);
}

void osb_spec_complete(struct osb_create_spec *spec, const char *runtime)
{
    struct osb_sandbox_spec *sb = &spec->sb;
    sb->image = spec->img.name;
    sb->layers = spec->img.layers;
    sb->image_host = spec->img.host;
    /* The host image has no config; an image whose chain ends on host
     * (a snapshot of a host sandbox) has its own record. */
    if (spec->img.config.name[0])
        apply_config(spec, &spec->img.config);
    if (!sb->pids_max)
        sb->pids_max = OSB_LIMIT_DEFAULT_PIDS;
    if (!sb->disk_bytes)
        sb->disk_bytes = OSB_LIMIT_DEFAULT_DISK;
    spec->runtime = runtime;
}

void osb_spec_release(struct osb_create_spec *spec)
{
    osb_image_res_free(&spec->img);
    osb_spec_free(spec);
}
