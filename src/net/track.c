/* Per-slot record of allow and deny entries (see track.h). */
#include "net/track.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/xalloc.h"

static bool same_kind(const struct osb_nft_addr *x, const struct osb_nft_addr *y)
{
    return x->deny == y->deny && x->family == y->family && x->port == y->port;
}

static unsigned full_len(int family)
{
    return family == AF_INET6 ? 128 : 32;
}

/* The first bits bits of x and y agree. */
static bool prefix_eq(const uint8_t *x, const uint8_t *y, unsigned bits)
{
    size_t whole = bits / 8;
    if (memcmp(x, y, whole) != 0)
        return false;
    unsigned rest = bits % 8;
    if (!rest)
        return true;
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    return (x[whole] & m) == (y[whole] & m);
}

static bool live(const struct osb_track_ent *e, int64_t now_ms)
{
    return !e->expires_ms || e->expires_ms > now_ms;
}

int osb_track_check(const struct osb_track *t, const struct osb_nft_addr *a, int64_t now_ms,
                    struct osb_err *err)
{
    if (a->prefix >= full_len(a->family))
        return 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct osb_nft_addr *o = &t->v[i].a;
        if (!same_kind(o, a) || o->prefix >= full_len(o->family) || !live(&t->v[i], now_ms))
            continue;
        if (o->prefix == a->prefix && !memcmp(o->addr, a->addr, sizeof a->addr))
            continue; /* the same range again: a refresh */
        unsigned shorter = o->prefix < a->prefix ? o->prefix : a->prefix;
        if (prefix_eq(o->addr, a->addr, shorter))
            return osb_err_set(err, OSB_E_EXISTS, "the /%u range nests with a /%u range", a->prefix,
                               o->prefix);
    }
    return 0;
}

static void prune(struct osb_track *t, int64_t now_ms)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].expires_ms && t->v[i].expires_ms + OSB_TRACK_GRACE_MS < now_ms)
            continue;
        t->v[k++] = t->v[i];
    }
    t->n = k;
}

void osb_track_put(struct osb_track *t, const struct osb_nft_addr *a, int64_t expires_ms,
                   int64_t now_ms)
{
    prune(t, now_ms);
    for (size_t i = 0; i < t->n; i++) {
        struct osb_track_ent *e = &t->v[i];
        if (same_kind(&e->a, a) && e->a.prefix == a->prefix &&
            !memcmp(e->a.addr, a->addr, sizeof a->addr)) {
            if (!e->expires_ms || !expires_ms)
                e->expires_ms = 0;
            else if (expires_ms > e->expires_ms)
                e->expires_ms = expires_ms;
            return;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->v = osb_xrealloc(t->v, t->cap * sizeof *t->v);
    }
    t->v[t->n++] = (struct osb_track_ent){.a = *a, .expires_ms = expires_ms};
}

void osb_track_clear(struct osb_track *t)
{
    t->n = 0;
}

void osb_track_free(struct osb_track *t)
{
    free(t->v);
    *t = (struct osb_track){0};
}
