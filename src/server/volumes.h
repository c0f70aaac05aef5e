/* Volumes of a create request (protocol.md 1.9) against the configuration
 * and the host's filesystem:
 *
 *   host  a directory or file under one of [storage] allowed_host_paths,
 *         resolved beneath that root (openat2 RESOLVE_BENEATH: a symlink
 *         inside it cannot lead out);
 *   pvc   a server-managed named volume: an ext4 image of the claim's
 *         size mounted on <volumes_dir>/<claimName>/data (server/claim.h),
 *         made on demand on the thread pool, shared by every sandbox that
 *         names it; with deleteOnSandboxTermination, removed with the
 *         sandbox whose request created it unless another sandbox (or a
 *         create in progress) still uses it.
 *
 * A create runs osb_vol_check, and while it answers 1, osb_vol_ensure;
 * once it answers 0, osb_vol_prepare in the same loop turn as the record
 * is registered, so no release slips in between.
 *
 * Loop thread only. See docs/volumes.md. */
#ifndef OSB_SERVER_VOLUMES_H
#define OSB_SERVER_VOLUMES_H
#include "runtime/runtime.h"
#include "server/apierr.h"
#include "server/config.h"
#include "server/spec.h"

struct osb_server;
struct osb_sbx;

/* 1 when some claim of spec must first be made or mounted (blocking:
 * osb_vol_ensure), 0 when none must, -1 with a 400 VOLUME::INVALID_SIZE
 * when a claim to be made is above [storage] volume_max_size or the free
 * space of volumes_dir, or the 400 of a bad host volume (so that no claim
 * is made for a create that is refused anyway). Changes nothing. */
int osb_vol_check(struct osb_server *srv, struct osb_create_spec *spec,
                  struct osb_apierr *e) OSB_MUST_CHECK;
/* Make or mount, on the thread pool, the claims osb_vol_check wants (once
 * however many creates wait for one) and mark the ones this request makes
 * as created. cb runs on the loop, e NULL on success (then check again:
 * a claim may have been removed meanwhile). */
typedef void (*osb_vol_cb)(void *ud, const struct osb_apierr *e);
void osb_vol_ensure(struct osb_server *srv, struct osb_create_spec *spec, osb_vol_cb cb, void *ud);
/* Check every volume of spec and fill its src_root/src_rel; creates the
 * subPath directories of claims. 400 with VOLUME::HOST_PATH_NOT_ALLOWED,
 * VOLUME::HOST_PATH_NOT_FOUND, VOLUME::NOT_FOUND or
 * SANDBOX::INVALID_PARAMETER naming the volume; 500 VOLUME::NOT_READY for
 * a claim osb_vol_ensure did not make ready. Claims made for a request
 * that then fails stay until its record goes (they are empty). */
int osb_vol_prepare(const struct osb_config *cfg, struct osb_create_spec *spec,
                    struct osb_apierr *e) OSB_MUST_CHECK;
/* The runtime's view of spec's prepared volumes (strings borrowed from
 * spec); NULL when there are none; caller frees. */
struct osb_rt_volume *osb_vol_rt(const struct osb_create_spec *spec);
/* s is being forgotten: remove the claims its request created and asked
 * to delete on termination, unless another sandbox of the registry (not
 * Failed or Terminated) still names them. */
void osb_vol_release(struct osb_server *srv, const struct osb_sbx *s);
/* At shutdown: unmount the server's view of every claim (a sandbox still
 * running keeps its own; a restarted server mounts a claim again when a
 * create names it). */
void osb_vol_close(struct osb_server *srv);
#endif
