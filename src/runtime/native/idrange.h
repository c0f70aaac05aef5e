/* The pool of host uid/gid ranges sandboxes' user namespaces map to: one
 * slot of OSB_IDR_SLOT ids per sandbox, cut from [native] userns_range.
 * Pure bookkeeping (no I/O): the native backend persists a sandbox's range
 * in its state dir record ("userns <first>"), rebuilds the pool from those
 * records at open, and releases a slot when the state dir goes (destroy,
 * stop, orphan cleanup after a crash). So a range is in use exactly while
 * a sandbox's state dir says so, restart or not. The pool is one state
 * dir's; idclaim.h keeps other servers on the host off the whole range. */
#ifndef OSB_RT_NATIVE_IDRANGE_H
#define OSB_RT_NATIVE_IDRANGE_H
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/init/spec.h"
#include "runtime/runtime.h"

#define OSB_IDR_SLOT ((uint32_t)OSB_USERNS_IDS)

struct osb_idr {
    uint32_t first;                   /* first host id of slot 0 */
    size_t n;                         /* slots */
    char (*owner)[OSB_RT_ID_MAX + 1]; /* "" = free */
};

/* Below this are the host's own users (and root): never handed out. It
 * also keeps a shifted id (idshift.c) apart from an unshifted one. */
#define OSB_IDR_MIN_START OSB_IDR_SLOT

/* "start:count": start >= OSB_IDR_MIN_START, count a positive multiple of
 * OSB_IDR_SLOT, start + count <= 2^32 - 1 (the kernel's invalid id).
 * Messages name the value, not the option (callers add that). */
int osb_idr_parse(const char *s, uint32_t *first, uint32_t *count,
                  struct osb_err *err) OSB_MUST_CHECK;
void osb_idr_init(struct osb_idr *r, uint32_t first, uint32_t count);
void osb_idr_free(struct osb_idr *r);
/* The slot of id, or the lowest free one (taken for id): its first host id. */
int osb_idr_alloc(struct osb_idr *r, const char *id, uint32_t *first,
                  struct osb_err *err) OSB_MUST_CHECK;
/* A recorded range (at open): must be a slot of this pool, not another's. */
int osb_idr_mark(struct osb_idr *r, const char *id, uint32_t first,
                 struct osb_err *err) OSB_MUST_CHECK;
/* Free id's slot, if it has one. */
void osb_idr_release(struct osb_idr *r, const char *id);
/* Slots in use. */
size_t osb_idr_used(const struct osb_idr *r);
#endif
