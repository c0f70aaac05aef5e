#include "server/pull.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "image/store.h"

struct waiter {
    osb_pull_cb cb;
    void *ud;
};

struct pull {
    uv_work_t work;
    struct osb_server *srv;
    struct pull *next;
    char *image, *user, *pass;
    struct waiter *waiters;
    size_t n_waiters;
    int rc;
    struct osb_err err;
};

/* In flight, on the loop thread only. */
static struct pull *pulls;

static const char *host_arch(void)
{
#if defined(__aarch64__)
    return "arm64";
#else
    return "amd64";
#endif
}

void osb_pull_opts(const struct osb_config *cfg, struct osb_registry_opts *o)
{
    *o = (struct osb_registry_opts){
        .insecure = (const char *const *)cfg->image.insecure_registries,
        .mirrors = (const char *const *)cfg->image.mirrors,
        .os = "linux",
        .arch = host_arch(),
    };
}

static void pull_work(uv_work_t *w)
{
    struct pull *p = w->data;
    struct osb_registry_opts o;
    osb_pull_opts(p->srv->cfg, &o);
    o.username = p->user;
    o.password = p->pass;
    p->rc = osb_istore_pull(osb_rt_images(p->srv->rt), p->image, &o, NULL, NULL, NULL, &p->err);
}

static void pull_free(struct pull *p)
{
    free(p->image);
    free(p->user);
    if (p->pass)
        explicit_bzero(p->pass, strlen(p->pass));
    free(p->pass);
    free(p->waiters);
    free(p);
}

static void pull_done(uv_work_t *w, int status)
{
    struct pull *p = w->data;
    for (struct pull **pp = &pulls; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    if (status < 0 && p->rc == 0)
        p->rc = osb_err_set(&p->err, OSB_E_INTERNAL, "pull of `%s` cancelled", p->image);
    if (p->rc < 0)
        osb_warn("pull %s: %s", p->image, p->err.msg);
    else
        osb_info("pulled %s", p->image);
    for (size_t i = 0; i < p->n_waiters; i++)
        p->waiters[i].cb(p->waiters[i].ud, p->rc < 0 ? &p->err : NULL);
    pull_free(p);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

void osb_pull_ensure(struct osb_server *srv, const struct osb_create_spec *spec, osb_pull_cb cb,
                     void *ud)
{
    if (osb_rt_image_exists(srv->rt, spec->image)) {
        cb(ud, NULL);
        return;
    }
    if (strcmp(srv->cfg->image.pull_policy, "never") == 0) {
        struct osb_err err = {0};
        osb_err_set(&err, OSB_E_NOTFOUND,
                    "not in the image store, and [image] pull_policy is \"never\"");
        cb(ud, &err);
        return;
    }
    struct pull *p = pulls;
    while (p && !(strcmp(p->image, spec->image) == 0 && same(p->user, spec->auth_user) &&
                  same(p->pass, spec->auth_pass)))
        p = p->next;
    if (!p) {
        p = osb_xcalloc(1, sizeof *p);
        p->srv = srv;
        p->image = osb_xstrdup(spec->image);
        p->user = spec->auth_user ? osb_xstrdup(spec->auth_user) : NULL;
        p->pass = spec->auth_pass ? osb_xstrdup(spec->auth_pass) : NULL;
        p->work.data = p;
        p->next = pulls;
        pulls = p;
        uv_queue_work(srv->loop, &p->work, pull_work, pull_done);
    }
    p->waiters = osb_xrealloc(p->waiters, (p->n_waiters + 1) * sizeof *p->waiters);
    p->waiters[p->n_waiters++] = (struct waiter){cb, ud};
}

/* ------------------------------------------------------------ config */

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
static void merge_env(struct osb_create_spec *spec, char *const *img_env)
{
    size_t a = strv_len(spec->env), b = strv_len(img_env), n = a;
    char **env = osb_xcalloc(a + b + 1, sizeof *env);
    for (size_t i = 0; i < a; i++)
        env[i] = spec->env[i];
    for (size_t i = 0; i < b; i++)
        if (strchr(img_env[i], '=') && !has_key(spec->env, img_env[i]))
            env[n++] = osb_xstrdup(img_env[i]);
    free(spec->env);
    spec->env = env;
}

static bool is_keepalive(char *const *ep)
{
    return strv_len(ep) == 3 && strcmp(ep[0], "tail") == 0 && strcmp(ep[1], "-f") == 0 &&
           strcmp(ep[2], "/dev/null") == 0;
}

static void image_entrypoint(struct osb_create_spec *spec, const struct osb_image *im)
{
    size_t a = strv_len(im->entrypoint), b = strv_len(im->cmd);
    if (a + b == 0 || !is_keepalive(spec->entrypoint))
        return;
    char **ep = osb_xcalloc(a + b + 1, sizeof *ep);
    for (size_t i = 0; i < a; i++)
        ep[i] = osb_xstrdup(im->entrypoint[i]);
    for (size_t i = 0; i < b; i++)
        ep[a + i] = osb_xstrdup(im->cmd[i]);
    for (size_t i = 0; spec->entrypoint[i]; i++)
        free(spec->entrypoint[i]);
    free(spec->entrypoint);
    spec->entrypoint = ep;
    spec->entrypoint_from_image = true;
}

int osb_pull_apply_config(struct osb_server *srv, struct osb_create_spec *spec,
                          struct osb_err *err)
{
    if (!spec->image || strcmp(spec->image, "host") == 0)
        return 0;
    struct osb_image im;
    if (osb_istore_get(osb_rt_images(srv->rt), spec->image, &im, err) < 0)
        return -1;
    merge_env(spec, im.env);
    if (im.workdir && *im.workdir)
        spec->workdir = osb_xstrdup(im.workdir);
    if (im.user && *im.user)
        spec->user = osb_xstrdup(im.user);
    if (!spec->snapshot_id)
        image_entrypoint(spec, &im);
    osb_image_free(&im);
    return 0;
}

void osb_pull_apierr(const struct osb_err *err, const char *image, struct osb_apierr *e)
{
    static const struct {
        enum osb_errc code;
        int status;
        const char *api;
    } map[] = {
        {OSB_E_NOTFOUND, 400, "SANDBOX::IMAGE_NOT_FOUND"},
        /* The credentials the request carried (or their absence). */
        {OSB_E_DENIED, 400, "SANDBOX::IMAGE_PULL_DENIED"},
        /* Not the client's fault; create lists no 502 (docs/errors.md). */
        {OSB_E_UNAVAILABLE, 500, "SANDBOX::IMAGE_REGISTRY_UNAVAILABLE"},
        {OSB_E_INTEGRITY, 500, "SANDBOX::IMAGE_DIGEST_MISMATCH"},
        {OSB_E_UNSUPPORTED, 400, "SANDBOX::IMAGE_UNSUPPORTED"},
        {OSB_E_INVALID, 400, "SANDBOX::IMAGE_INVALID"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == err->code) {
            osb_apierr_set(e, map[i].status, map[i].api, "image '%s': %s", image, err->msg);
            return;
        }
    osb_apierr_set(e, 500, "SANDBOX::IMAGE_PULL_FAILED", "image '%s': %s", image, err->msg);
}
