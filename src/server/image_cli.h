/* The `image` verbs of the server binary, on the image store:
 *   image pull REF [--username U] [--password-stdin] [--platform OS/ARCH]
 *   image list | image rm NAME | image prune
 *   image import NAME FILE.tar | image export NAME FILE.tar
 * Results on stdout, progress and errors on stderr ("image VERB: ...").
 * Returns the exit status (0, 1 on failure, 2 on bad usage). */
#ifndef OSB_SERVER_IMAGE_CLI_H
#define OSB_SERVER_IMAGE_CLI_H
#include "image/registry.h"
#include "image/store.h"

int osb_image_cli(struct osb_istore *s, const struct osb_registry_opts *defaults,
                  osb_istore_in_use_cb in_use, void *ud, int argc, char **argv);
#endif
