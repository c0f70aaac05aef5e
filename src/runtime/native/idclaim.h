/* The host-wide claim of a server's whole [native] userns_range. The pool
 * (idrange.h) is per state dir, so two servers on one host with the same
 * range would hand the same host ids to their sandboxes; the claim makes
 * the second one fail at start-up instead.
 *
 * A claim is a file "<start>-<count>" in OSB_IDCLAIM_DIR holding its
 * server's pid and state dir, flocked through an fd kept open for the
 * backend's lifetime (O_CLOEXEC: no helper or sandbox inherits it, so the
 * lock dies with the server). A locked file whose range overlaps is another
 * live server's: an error naming both ranges and its pid. An unlocked file
 * was left by a server that died: removed. Scan and claim run under an
 * flock of the directory itself, so servers starting at once cannot both
 * win. A server restarted on its state dir finds its predecessor's lock
 * gone (or still held by a child that had not exec'd yet: a claim naming
 * this state dir and a pid that is gone is taken over, as the caller holds
 * the state dir exclusively), and its sandboxes' ranges are in the state
 * dir (idrange.h). */
#ifndef OSB_RT_NATIVE_IDCLAIM_H
#define OSB_RT_NATIVE_IDCLAIM_H
#include <stdint.h>

#include "common/err.h"

/* /run is a tmpfs on most hosts: no claim outlives a reboot (and one that
 * does is unlocked, so stale, anyway). */
#define OSB_IDCLAIM_DIR "/run/opensandbox/userns"

struct osb_idclaim {
    int dirfd; /* OSB_IDCLAIM_DIR (or a test's); -1 = no claim */
    int fd;    /* the claim file, flocked */
    char name[24];
};

void osb_idclaim_init(struct osb_idclaim *c);
/* Claim [first, first + count) in dir (made 0700 if missing) for the
 * server of state_dir. OSB_E_EXISTS when another live server's claim
 * overlaps. */
int osb_idclaim_take(struct osb_idclaim *c, const char *dir, uint32_t first, uint32_t count,
                     const char *state_dir, struct osb_err *err) OSB_MUST_CHECK;
/* Remove the claim, if any (a crash leaves the file, unlocked). */
void osb_idclaim_drop(struct osb_idclaim *c);
#endif
