/* Images for creates: an image already in the store (or the built-in
 * `host`) is used at once; any other reference is pulled on the libuv
 * thread pool, once however many creates wait for it (same reference and
 * same registry user). The image's config then fills the create spec:
 * Env below the request's env, WorkingDir, User, and Entrypoint + Cmd when
 * the request's entrypoint is the SDKs' default `tail -f /dev/null`. */
#ifndef OSB_SERVER_PULL_H
#define OSB_SERVER_PULL_H
#include "image/registry.h"
#include "server/server.h"

/* cb runs on the loop: err NULL when spec->image is ready to use. */
typedef void (*osb_pull_cb)(void *ud, const struct osb_err *err);
void osb_pull_ensure(struct osb_server *srv, const struct osb_create_spec *spec, osb_pull_cb cb,
                     void *ud);

/* Apply the stored image's config to spec (see above). */
int osb_pull_apply_config(struct osb_server *srv, struct osb_create_spec *spec,
                          struct osb_err *err);

/* The API error for a failed pull or lookup of `image`. */
void osb_pull_apierr(const struct osb_err *err, const char *image, struct osb_apierr *e);

/* Registry options from the server config (insecure registries, mirrors,
 * this host's platform); credentials left NULL. */
void osb_pull_opts(const struct osb_config *cfg, struct osb_registry_opts *o);
#endif
