/* What a network slot added to the shared allow and deny sets, kept in
 * userspace: nftables cannot flush a set by key prefix, so releasing or
 * resetting a slot removes exactly these entries (osb_nft_forget). It also
 * refuses a range nesting with one already present: the kernel's
 * concatenated range sets only notice a range whose first or last address
 * falls inside another, not one that encloses another.
 *
 * Entries with a timeout are kept until well after the kernel expired them
 * (dropped on the next put), so a release never leaves a live entry
 * behind. Pure code: the caller serializes calls on one tracker. */
#ifndef OSB_NET_TRACK_H
#define OSB_NET_TRACK_H
#include <stddef.h>
#include <stdint.h>
#include "common/err.h"
#include "net/nft.h"

/* Entries whose expiry passed this long ago are dropped: the kernel's
 * clock for the same timeout started at its commit, after ours. */
#define OSB_TRACK_GRACE_MS 2000

struct osb_track_ent {
    struct osb_nft_addr a;
    int64_t expires_ms; /* 0 = never */
};

struct osb_track {
    struct osb_track_ent *v;
    size_t n, cap;
};

/* OSB_E_EXISTS when a is a range that nests with a different live range of
 * the same kind (allow/deny) and family; single addresses never conflict
 * (they live in their own sets). */
OSB_MUST_CHECK int osb_track_check(const struct osb_track *t, const struct osb_nft_addr *a,
                                   int64_t now_ms, struct osb_err *err);
/* Records a, expiring at expires_ms (0 = never). An identical entry is
 * refreshed (the later expiry wins, never beats expiring). Entries expired
 * more than OSB_TRACK_GRACE_MS before now_ms are dropped first. */
void osb_track_put(struct osb_track *t, const struct osb_nft_addr *a, int64_t expires_ms,
                   int64_t now_ms);
/* Forgets every entry (keeps the storage). */
void osb_track_clear(struct osb_track *t);
void osb_track_free(struct osb_track *t);
#endif
