#include "net/cidr.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/xalloc.h"

bool osb_cidr_covers(const struct osb_cidr *w, const struct osb_cidr *c)
{
    if (w->family != c->family || w->prefix > c->prefix)
        return false;
    unsigned full = w->prefix / 8, rest = w->prefix % 8;
    if (memcmp(w->addr, c->addr, full) != 0)
        return false;
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    return !rest || (w->addr[full] & m) == (c->addr[full] & m);
}

void osb_cidrs_free(struct osb_cidrs *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool is_ip_rule(const struct osb_policy_rule *r)
{
    return r->kind == OSB_POLICY_IP || r->kind == OSB_POLICY_CIDR;
}

static struct osb_cidr rule_cidr(const struct osb_policy_rule *r)
{
    struct osb_cidr c = {.family = r->family, .prefix = r->prefix};
    memcpy(c.addr, r->addr, sizeof c.addr);
    return c;
}

/* Whether an IP/CIDR rule before index `upto` with action `act` fully covers
 * c (*inside: one lies strictly inside c instead). */
static bool earlier_covers(const struct osb_policy *p, size_t upto, enum osb_policy_action act,
                           const struct osb_cidr *c, bool *inside)
{
    if (inside)
        *inside = false;
    for (size_t j = 0; j < upto; j++) {
        const struct osb_policy_rule *r = &p->rules[j];
        if (r->action != act || !is_ip_rule(r))
            continue;
        struct osb_cidr h = rule_cidr(r);
        if (osb_cidr_covers(&h, c))
            return true;
        if (inside && osb_cidr_covers(c, &h))
            *inside = true;
    }
    return false;
}

static void push(struct osb_cidrs *out, const struct osb_cidr *c)
{
    if (c->prefix == 0) { /* nft takes prefixes from 1 on: two halves */
        struct osb_cidr lo = *c, hi = *c;
        lo.prefix = hi.prefix = 1;
        hi.addr[0] = 0x80;
        push(out, &lo);
        push(out, &hi);
        return;
    }
    out->v = osb_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    out->v[out->n++] = *c;
}

/* Appends c minus the earlier allow rules (before `upto`) as CIDR pieces:
 * halves c until each half is either inside an allow hole (dropped) or free
 * of holes (kept). Past OSB_CIDR_MAX_PIECES the rest is kept whole. */
static void carve_deny(const struct osb_policy *p, size_t upto, struct osb_cidr c,
                       struct osb_cidrs *out)
{
    bool inside;
    if (earlier_covers(p, upto, OSB_POLICY_ALLOW, &c, &inside))
        return;
    unsigned bits = c.family == AF_INET ? 32 : 128;
    if (!inside || c.prefix >= bits || out->n >= OSB_CIDR_MAX_PIECES) {
        push(out, &c);
        return;
    }
    struct osb_cidr hi = c;
    c.prefix++;
    hi.prefix++;
    hi.addr[(hi.prefix - 1) / 8] |= (uint8_t)(0x80 >> ((hi.prefix - 1) % 8));
    carve_deny(p, upto, c, out);
    carve_deny(p, upto, hi, out);
}

/* Drops entries covered by another one (they add nothing); of equal ones
 * the first stays. */
static void drop_nested(struct osb_cidrs *l)
{
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        bool nested = false;
        for (size_t j = 0; j < l->n && !nested; j++)
            nested = j != i && osb_cidr_covers(&l->v[j], &l->v[i]) &&
                     (l->v[j].prefix < l->v[i].prefix || j < i);
        if (!nested)
            l->v[k++] = l->v[i];
    }
    l->n = k;
}

void osb_cidr_policy_sets(const struct osb_policy *p, struct osb_cidrs *deny,
                          struct osb_cidrs *allow)
{
    for (size_t i = 0; i < p->nrules; i++) {
        const struct osb_policy_rule *r = &p->rules[i];
        if (!is_ip_rule(r))
            continue;
        struct osb_cidr c = rule_cidr(r);
        if (r->action == OSB_POLICY_DENY)
            carve_deny(p, i, c, deny);
        else if (!earlier_covers(p, i, OSB_POLICY_DENY, &c, NULL))
            push(allow, &c);
    }
    drop_nested(deny);
    drop_nested(allow);
}
