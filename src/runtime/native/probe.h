/* Whether this host can run the native backend's sandboxes in user
 * namespaces, tried the way a create does it: a child cloned into a new
 * user namespace, its uid/gid maps written by us (host root), and
 * idmapped clones (MOUNT_ATTR_IDMAP with that namespace) of what every
 * sandbox mounts that way: the image store (its layers), execd and the
 * host image's binds. Costs a clone and a few mount_setattr calls at open,
 * never per sandbox. */
#ifndef OSB_RT_NATIVE_PROBE_H
#define OSB_RT_NATIVE_PROBE_H
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* paths: what must be idmappable (NULL-terminated); first: a host id the
 * probe's namespace maps 0..65535 to. -1 with err saying what failed. */
int osb_userns_probe(const char *const *paths, uint32_t first, struct osb_err *err) OSB_MUST_CHECK;
#endif
