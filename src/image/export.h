/* Writing an image as an OCI image layout tar with a docker-archive
 * manifest.json (store.c resolves the image and its base chain). */
#ifndef OSB_IMAGE_EXPORT_H
#define OSB_IMAGE_EXPORT_H
#include <stddef.h>

#include "common/err.h"
#include "image/store.h"

/* layer_dirs: n layer directories, bottom first; the config parts and
 * name come from im. tar_path is replaced atomically. */
int osb_export_write(const struct osb_image *im, char *const *layer_dirs, size_t n,
                     const char *tar_path, struct osb_err *err);
#endif
