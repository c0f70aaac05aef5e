/* Images for creates that are not in the store yet: pulled on the libuv
 * thread pool, once however many creates wait for it (same reference and
 * same registry user). The pulls in flight hang off srv->pulls. The
 * image's config then fills the create spec (server/complete.h). */
#ifndef OSB_SERVER_PULL_H
#define OSB_SERVER_PULL_H
#include "image/registry.h"
#include "server/server.h"

/* cb runs on the loop: err NULL when spec->image is in the store now. The
 * caller looked it up first (osb_spec_resolve). */
typedef void (*osb_pull_cb)(void *ud, const struct osb_err *err);
void osb_pull_ensure(struct osb_server *srv, const struct osb_create_spec *spec, osb_pull_cb cb,
                     void *ud);

/* The API error for a failed pull or lookup of `image`. */
void osb_pull_apierr(const struct osb_err *err, const char *image, struct osb_apierr *e);

/* Registry options from the server config (insecure registries, mirrors,
 * this host's platform); credentials left NULL. */
void osb_pull_opts(const struct osb_config *cfg, struct osb_registry_opts *o);
#endif
