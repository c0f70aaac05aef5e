#include "server/pull.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "image/store.h"
#include "server/metrics.h"

struct waiter {
    osb_pull_cb cb;
    void *ud;
};

/* In flight, on the loop thread only: a list from srv->pulls. */
struct osb_pull {
    uv_work_t work;
    struct osb_server *srv;
    struct osb_pull *next;
    char *image, *user, *pass;
    struct waiter *waiters;
    size_t n_waiters;
    int rc;
    struct osb_err err;
    uint64_t bytes; /* the pulled image's own layers */
};

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
    struct osb_pull *p = w->data;
    struct osb_registry_opts o;
    osb_pull_opts(p->srv->cfg, &o);
    o.username = p->user;
    o.password = p->pass;
    struct osb_image im = {0};
    p->rc = osb_istore_pull(p->srv->images, p->image, &o, NULL, NULL, &im, &p->err);
    if (p->rc == 0) {
        p->bytes = im.size_bytes;
        osb_image_free(&im);
    }
}

static void pull_free(struct osb_pull *p)
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
    struct osb_pull *p = w->data;
    for (struct osb_pull **pp = &p->srv->pulls; *pp; pp = &(*pp)->next)
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
    osb_metrics_job(p->srv->metrics, OSB_M_PULL, p->rc < 0 ? "error" : "ok");
    osb_metrics_add_bytes(p->srv->metrics, OSB_M_PULL_BYTES, p->bytes);
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
    if (strcmp(srv->cfg->image.pull_policy, "never") == 0) {
        struct osb_err err = {0};
        osb_err_set(&err, OSB_E_NOTFOUND,
                    "not in the image store, and [image] pull_policy is \"never\"");
        cb(ud, &err);
        return;
    }
    struct osb_pull *p = srv->pulls;
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
        p->next = srv->pulls;
        srv->pulls = p;
        uv_queue_work(srv->loop, &p->work, pull_work, pull_done);
    }
    p->waiters = osb_xrealloc(p->waiters, (p->n_waiters + 1) * sizeof *p->waiters);
    p->waiters[p->n_waiters++] = (struct waiter){cb, ud};
}

void osb_pull_apierr(const struct osb_err *err, const char *image, struct osb_apierr *e)
{
    static const struct {
        enum osb_errc code;
        const char *api;
    } map[] = {
        {OSB_E_NOTFOUND, "SANDBOX::IMAGE_NOT_FOUND"},
        /* The credentials the request carried (or their absence). */
        {OSB_E_DENIED, "SANDBOX::IMAGE_PULL_DENIED"},
        /* Not the client's fault; create lists no 502 (docs/errors.md). */
        {OSB_E_UNAVAILABLE, "SANDBOX::IMAGE_REGISTRY_UNAVAILABLE"},
        {OSB_E_INTEGRITY, "SANDBOX::IMAGE_DIGEST_MISMATCH"},
        {OSB_E_UNSUPPORTED, "SANDBOX::IMAGE_UNSUPPORTED"},
        {OSB_E_INVALID, "SANDBOX::IMAGE_INVALID"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == err->code) {
            osb_apierr(e, map[i].api, "image '%s': %s", image, err->msg);
            return;
        }
    osb_apierr(e, "SANDBOX::IMAGE_PULL_FAILED", "image '%s': %s", image, err->msg);
}
