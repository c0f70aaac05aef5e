/* An image name resolved once, for a create: the stored name, the layer
 * directories a runtime stacks (top first: a snapshot's own layer above its
 * base's, down to a pulled/imported image or the built-in `host` image)
 * and the top image's config (env, workdir, user, entrypoint, cmd) the
 * server applies to the sandbox spec. */
#ifndef OSB_IMAGE_RESOLVE_H
#define OSB_IMAGE_RESOLVE_H
#include <stdbool.h>

#include "common/err.h"
#include "image/store.h"

/* The built-in image: the runtime supplies its root (host /usr, /bin...). */
#define OSB_IMAGE_HOST "host"

struct osb_image_res {
    char *name;              /* the stored (canonical) name; "host" for the host image;
                                  owned (heap, so the struct may be moved) */
    bool host;               /* the host image lies beneath layers */
    char **layers;           /* NULL-terminated absolute dirs, top first; owned */
    struct osb_image config; /* the top image's record (name "" for "host"); owned */
};

/* name NULL means "host". OSB_E_INVALID for a name that is neither an
 * image name nor a reference, or a chain of bases too long;
 * OSB_E_NOTFOUND for an image (or base) not in the store. On failure out
 * holds nothing to free. */
int osb_image_resolve(struct osb_istore *s, const char *name, struct osb_image_res *out,
                      struct osb_err *err) OSB_MUST_CHECK;
void osb_image_res_free(struct osb_image_res *r);
#endif
