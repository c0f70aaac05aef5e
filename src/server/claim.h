/* A pvc claim's storage on the host (docs/volumes.md):
 *
 *   <volumes_dir>/<claim>/disk.img  a sparse file holding an ext4
 *                                   filesystem, as big as the claim's size
 *   <volumes_dir>/<claim>/data      where that filesystem is mounted
 *                                   (nosuid, nodev) through a loop device
 *
 * so a sandbox writing into the claim gets ENOSPC at the limit and the
 * host never spends more than the image's size on it. A claim made by
 * older servers is a plain directory `data` with no image: it keeps
 * working, without a limit.
 *
 * make/attach/detach block (mkfs, mount): call them off the loop thread.
 * probe is a few stat calls. */
#ifndef OSB_SERVER_CLAIM_H
#define OSB_SERVER_CLAIM_H
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/* Below this ext4 has no room for its journal and metadata. */
#define OSB_CLAIM_MIN_BYTES (8LL << 20)

enum osb_claim_kind { OSB_CLAIM_ABSENT, OSB_CLAIM_PLAIN, OSB_CLAIM_IMAGE };

struct osb_claim_info {
    enum osb_claim_kind kind;
    bool mounted;  /* IMAGE: its filesystem is mounted on data */
    int64_t bytes; /* IMAGE: the image's size, i.e. the limit */
};

void osb_claim_probe(const char *vdir, const char *claim, struct osb_claim_info *ci);
/* The bytes of the images in vdir not yet allocated on its filesystem:
 * sparse, they take the disk only as sandboxes write, so this is what
 * the existing claims may still take from it. */
int64_t osb_claim_unallocated(const char *vdir);
/* Make the image (in a scratch directory renamed into place, so a
 * half-made claim is never seen) and mount it. The claim must be absent. */
OSB_MUST_CHECK int osb_claim_make(const char *vdir, const char *claim, int64_t bytes,
                                  struct osb_err *err);
/* Mount an existing image on data (no-op when mounted). A loop device
 * already backed by the image (a sandbox still uses the filesystem) is
 * reused, so the image is never mounted twice through two devices. */
OSB_MUST_CHECK int osb_claim_attach(const char *vdir, const char *claim, struct osb_err *err);
/* Unmount data (lazily: a sandbox's own mount of it stays valid); the
 * loop device goes away with the last user (LO_FLAGS_AUTOCLEAR). Not
 * mounted is success. */
OSB_MUST_CHECK int osb_claim_detach(const char *vdir, const char *claim, struct osb_err *err);
#endif
