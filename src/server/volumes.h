/* Volumes of a create request (protocol.md 1.9) against the configuration
 * and the host's filesystem:
 *
 *   host  a directory or file under one of [storage] allowed_host_paths,
 *         resolved beneath that root (openat2 RESOLVE_BENEATH: a symlink
 *         inside it cannot lead out);
 *   pvc   a server-managed named volume: <volumes_dir>/<claimName>/data,
 *         created on demand, shared by every sandbox that names it; with
 *         deleteOnSandboxTermination, removed with the sandbox whose request
 *         created it unless another sandbox still uses it.
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

/* Check every volume of spec and fill its src_root/src_rel; creates the
 * claims (and their subPath directories) that may be created. 400 with
 * VOLUME::HOST_PATH_NOT_ALLOWED, VOLUME::HOST_PATH_NOT_FOUND,
 * VOLUME::NOT_FOUND or SANDBOX::INVALID_PARAMETER naming the volume. Claims
 * created before a later volume fails stay (they are empty). */
int osb_vol_prepare(const struct osb_config *cfg, struct osb_create_spec *spec,
                    struct osb_apierr *e);
/* The runtime's view of spec's prepared volumes (strings borrowed from
 * spec); NULL when there are none; caller frees. */
struct osb_rt_volume *osb_vol_rt(const struct osb_create_spec *spec);
/* s is being forgotten: remove the claims its request created and asked
 * to delete on termination, unless another sandbox of the registry (not
 * Failed or Terminated) still names them. */
void osb_vol_release(struct osb_server *srv, const struct osb_sbx *s);
#endif
