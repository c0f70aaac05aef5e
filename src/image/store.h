/* The image store, shared by every sandbox of a server (and its CLI):
 *
 *   <state>/layers/<key>/            one unpacked layer (layer.h format);
 *                                    <key>: sha256-<hex of the blob digest>
 *                                    for pulled layers, tar-<uuid> for
 *                                    imports, snap-<uuid> for snapshots
 *   <state>/layers/.tmp-*            in-progress layers (removed at open)
 *   <state>/images/<dir>/image.json  one image record (below)
 *   <state>/images/host/             the runtime's built-in host image
 *                                    (not managed here)
 *
 * <dir> is the name with '/' spelled '+' and ':' spelled '@' and '@' '%'.
 * An image record names its layers bottom first and carries the parts of
 * the image config a sandbox needs. A layer is committed by rename() only
 * once complete and verified, and an image record only once all its layers
 * exist, so a failed or interrupted pull leaves no partial layer and no
 * record; what it did fetch completely stays for the next try.
 *
 * Concurrency: every call is blocking and thread-safe; pulls may run on
 * several threads and in several processes (server + CLI) at once. The
 * same layer is fetched once: writers take an flock on
 * <state>/layers/.lock-<key> and re-check before fetching. */
#ifndef OSB_IMAGE_STORE_H
#define OSB_IMAGE_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "image/registry.h"

struct osb_istore;

struct osb_image {
    char name[256];              /* the stored name: the canonical reference
                                   of a pulled image, the given name of an
                                   imported one, "snapshot/<id>" */
    char digest[OSB_DIGEST_MAX]; /* manifest digest of a pulled image, else "" */
    char base[256];              /* the image a snapshot was taken on ("" if
                                   none); "host" for the built-in image */
    char **layers;               /* NULL-terminated absolute layer dirs,
                                   bottom first; the base's layers are NOT
                                   repeated here (resolve base yourself) */
    /* From the image config (NULL/empty when it has none): */
    char **env; /* NULL-terminated "K=V" */
    char *workdir;
    char *user;          /* "uid[:gid]" or "name[:group]" */
    char **entrypoint;   /* NULL-terminated */
    char **cmd;          /* NULL-terminated */
    uint64_t size_bytes; /* of its own layers */
    int64_t created_ms;  /* when it entered the store */
};
void osb_image_free(struct osb_image *im);

/* Creates the directories; removes leftovers of interrupted writers. */
OSB_MUST_CHECK int osb_istore_open(const char *state_dir, struct osb_istore **out,
                                   struct osb_err *err);
void osb_istore_close(struct osb_istore *s);

/* Find an image: by exact stored name first, then (when name parses as a
 * reference) by its canonical reference. OSB_E_NOTFOUND when absent. */
OSB_MUST_CHECK int osb_istore_get(struct osb_istore *s, const char *name, struct osb_image *out,
                                  struct osb_err *err);

/* Pull ref from its registry into the store (registry.h errors, wrapped
 * with the image's name). Already-present layers are not fetched again.
 * progress (may be NULL) gets human-readable lines ("sha256:ab12…: 12.3 MB
 * in 0.2 s"). On success out (may be NULL) gets the record. */
typedef void (*osb_istore_progress_cb)(void *ud, const char *line);
OSB_MUST_CHECK int osb_istore_pull(struct osb_istore *s, const char *ref,
                                   const struct osb_registry_opts *o,
                                   osb_istore_progress_cb progress, void *ud, struct osb_image *out,
                                   struct osb_err *err);

/* Import a root filesystem tar as a one-layer image named name
 * ([a-z0-9][a-z0-9._:/-]*, <= 200, no "..", no empty component; not
 * "host"). OSB_E_EXISTS if the name is taken. */
OSB_MUST_CHECK int osb_istore_import(struct osb_istore *s, const char *name, const char *tar_path,
                                     struct osb_err *err);

/* The rules for imported names above (OSB_E_INVALID naming the problem). */
OSB_MUST_CHECK int osb_istore_name_check(const char *name, struct osb_err *err);

/* Record an image made elsewhere (a snapshot): im->layers must already be
 * committed layer dirs under <state>/layers. OSB_E_EXISTS if taken. */
OSB_MUST_CHECK int osb_istore_add(struct osb_istore *s, const struct osb_image *im,
                                  struct osb_err *err);

/* Remove an image record (not its layers: prune does that). in_use (may
 * be NULL) is asked first; true refuses with OSB_E_EXISTS. Images that
 * other images (snapshots) are based on are refused too. */
typedef bool (*osb_istore_in_use_cb)(void *ud, const char *name);
OSB_MUST_CHECK int osb_istore_remove(struct osb_istore *s, const char *name,
                                     osb_istore_in_use_cb in_use, void *ud, struct osb_err *err);

/* Every image, sorted by name; *out is an array the caller frees with
 * osb_image_free on each and free(). */
OSB_MUST_CHECK int osb_istore_list(struct osb_istore *s, struct osb_image **out, size_t *n,
                                   struct osb_err *err);

/* Delete layers no image record names, and stale temporaries. */
OSB_MUST_CHECK int osb_istore_prune(struct osb_istore *s, size_t *layers_removed,
                                    uint64_t *bytes_freed, struct osb_err *err);

/* Write an image (with its base's layers below its own; "host" cannot be
 * exported as a base) as a docker-archive/OCI-layout tar loadable by
 * `docker load` and `skopeo copy oci-archive:`. */
OSB_MUST_CHECK int osb_istore_export(struct osb_istore *s, const char *name, const char *tar_path,
                                     struct osb_err *err);

/* Push an image (with its base's layers below its own, as export) to ref
 * (a tag, or a digest that must be the manifest's): layer and config
 * blobs the registry lacks are uploaded, then an OCI manifest (layers as
 * uncompressed tars). digest_out gets the manifest digest. Blobs are
 * built in <state>/.push-*, removed at the end. registry.h errors name
 * ref; OSB_E_NOTFOUND names name. */
OSB_MUST_CHECK int osb_istore_push(struct osb_istore *s, const char *name, const char *ref,
                                   const struct osb_registry_opts *o,
                                   osb_istore_progress_cb progress, void *ud,
                                   char digest_out[OSB_DIGEST_MAX], struct osb_err *err);

/* <state>/layers: where callers build layers (snapshots) before
 * osb_istore_add; new layer dirs are named with osb_istore_new_layer. */
const char *osb_istore_layers_dir(const struct osb_istore *s);
/* A fresh "<layers>/<prefix>-<uuid>" path (not created). */
void osb_istore_new_layer(const struct osb_istore *s, const char *prefix, char *out, size_t n);
/* Remove a layer dir under <layers> that no record will name (a failed
 * snapshot, a deleted one), and drop what osb_istore_new_layer held for it. */
void osb_istore_discard_layer(struct osb_istore *s, const char *dir);
#endif
