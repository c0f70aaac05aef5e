/* Reading an OCI image layout archive (what `image export`, skopeo's
 * oci-archive: and scripts/build-image.sh write) for `image import`:
 *
 *   oci-layout, index.json, blobs/sha256/<hex>   (manifest.json and
 *   repositories, docker load's, are allowed and ignored)
 *
 * Every blob is written to dir/<hex> and checked against its name while it
 * is copied, so a blob that does not match its digest fails the import. */
#ifndef OSB_IMAGE_OCI_ARCHIVE_H
#define OSB_IMAGE_OCI_ARCHIVE_H
#include "common/err.h"
#include "image/registry.h"

/* 1: tar_path is an OCI layout: its blobs are in dir (an empty directory),
 * out has the image manifest's layers (bottom first; layer i is
 * dir/<hex of its digest>), config (parsed) and digest; free it with
 * osb_manifest_free. 0: not an OCI layout (a root filesystem tar; nothing
 * of it was kept). -1: a broken layout (OSB_E_INVALID, OSB_E_INTEGRITY,
 * OSB_E_UNSUPPORTED naming image). */
OSB_MUST_CHECK int osb_oci_archive_read(const char *tar_path, const char *dir, const char *image,
                                        struct osb_manifest *out, struct osb_err *err);
#endif
