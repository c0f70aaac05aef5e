/* The second step of the spec pipeline (parse -> complete -> runtime): a
 * parsed create spec (server/spec.h) gets its image resolved once, in the
 * server's image store, and the image's config and the limit defaults
 * applied, so that spec->sb is what a runtime backend takes (the create
 * adds the id, token, volumes and network slot; lifecycle.c). */
#ifndef OSB_SERVER_COMPLETE_H
#define OSB_SERVER_COMPLETE_H
#include "image/store.h"
#include "server/spec.h"

/* spec->image (or "host") -> spec->img. Blocking but quick (reads one
 * record per image of the chain). Errors as osb_image_resolve. */
int osb_spec_resolve(struct osb_istore *images, struct osb_create_spec *spec,
                     struct osb_err *err) OSB_MUST_CHECK;

/* Fill spec->sb from spec->img and the defaults: the image's layers and
 * stored name; its Env below the request's env, its WorkingDir and User;
 * its Entrypoint + Cmd when the request's entrypoint is the SDKs' default
 * `tail -f /dev/null` (not for a restore, whose snapshot keeps its own);
 * pids and disk defaults from runtime.h; the backend name (the one the
 * request chose, osb_backend_choose, else the server's default). */
void osb_spec_complete(struct osb_create_spec *spec, const char *runtime);

/* Free a spec and its resolved image (osb_spec_free knows only what the
 * parser made, so the request parser links without the image store). */
void osb_spec_release(struct osb_create_spec *spec);
#endif
