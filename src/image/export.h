/* An image as OCI blobs: `image export` packs them as an OCI image layout
 * tar with a docker-archive manifest.json, `image push` uploads them
 * (store.c resolves the image and its base chain). */
#ifndef OSB_IMAGE_EXPORT_H
#define OSB_IMAGE_EXPORT_H
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "image/store.h"

#define OSB_EXPORT_LAYER_MT "application/vnd.oci.image.layer.v1.tar"
#define OSB_EXPORT_MANIFEST_MT "application/vnd.oci.image.manifest.v1+json"

struct osb_export_blob {
    char digest[OSB_DIGEST_MAX];
    int64_t size;
};

/* The blobs live in <root>/blobs/sha256/<hex>; the manifest is one too. */
struct osb_export {
    char *root;                     /* a temp dir, removed by osb_export_free */
    struct osb_export_blob *layers; /* bottom first: uncompressed tars */
    size_t n_layers;
    struct osb_export_blob config, manifest;
};

/* Build the blobs of im from layer_dirs (n layer directories, bottom
 * first; the config parts come from im) in a fresh directory made by
 * mkdtemp(root_template). Nothing is left behind on failure. */
OSB_MUST_CHECK int osb_export_build(const struct osb_image *im, char *const *layer_dirs, size_t n,
                                    const char *root_template, struct osb_export *out,
                                    struct osb_err *err);
/* <root>/blobs/sha256/<hex of digest>; the caller frees it. */
char *osb_export_blob_path(const struct osb_export *e, const char *digest);
void osb_export_free(struct osb_export *e);

/* The same packed as a layout tar; tar_path is replaced atomically. */
OSB_MUST_CHECK int osb_export_write(const struct osb_image *im, char *const *layer_dirs, size_t n,
                                    const char *tar_path, struct osb_err *err);
#endif
