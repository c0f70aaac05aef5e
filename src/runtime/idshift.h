/* A snapshot layer in the one form every mode restores from. A sandbox's
 * writable layer holds what its overlay wrote: in a user namespace the
 * files carry host ids (range first + n) and overlayfs keeps its marks in
 * user.overlay.* (userxattr); without one, ids as inside and trusted.*.
 * The copy of that layer is rewritten in place to:
 *   - ids as seen inside (first + n -> n), the setuid/setgid bits chown
 *     drops put back; a restored sandbox idmaps its lower layers with its
 *     own namespace, whatever its range, or reads them as they are;
 *   - every overlay mark under both prefixes (opaque dirs, redirects), so
 *     an overlay with or without userxattr sees it; the mount-specific
 *     ones (origin, impure, nlink, upper, uuid) dropped;
 *   - file capabilities of a user namespace (v3, with its root uid) as
 *     plain v2 ones, which apply to whoever is root of the restored
 *     sandbox (overlayfs's copy-up rules for a lower layer).
 * Runs on the thread pool, after the copy, on a directory no sandbox
 * uses yet. */
#ifndef OSB_RT_IDSHIFT_H
#define OSB_RT_IDSHIFT_H
#include <stdint.h>

#include "common/err.h"

/* first: the sandbox's range (0: no user namespace, ids are kept). */
int osb_idshift_layer(const char *dir, uint32_t first, struct osb_err *err) OSB_MUST_CHECK;
#endif
