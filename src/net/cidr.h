/* CIDR arithmetic for the address side of an egress policy: which prefix
 * covers which, and the deny/allow set entries that make nftables' "deny
 * sets first, then allow sets" check give the policy's first-match answer
 * for its IP/CIDR rules. Pure: no I/O, no globals. */
#ifndef OSB_NET_CIDR_H
#define OSB_NET_CIDR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/policy.h"

/* Upper bound of deny pieces per policy: carving many allow holes out of a
 * wide deny range could otherwise explode (one nft commit per piece). */
#define OSB_CIDR_MAX_PIECES 4096

struct osb_cidr {
    int family;       /* AF_INET or AF_INET6 */
    unsigned prefix;  /* 1..32 or 1..128 in a list (nft takes no /0) */
    uint8_t addr[16]; /* network address */
};

struct osb_cidrs {
    struct osb_cidr *v;
    size_t n;
};

/* w contains every address of c (same family, w no longer than c). */
bool osb_cidr_covers(const struct osb_cidr *w, const struct osb_cidr *c);
void osb_cidrs_free(struct osb_cidrs *l);

/* The deny and allow set entries of p's IP/CIDR rules (appended to the
 * empty lists deny and allow). A deny entry has the earlier allow rules
 * carved out of it, so an address is in the deny sets iff its first
 * matching IP/CIDR rule is a deny; an allow rule fully covered by an
 * earlier deny is left out. No entry is nested in another (the kernel's
 * interval sets refuse that); a /0 becomes its two /1 halves. Approximate
 * only past OSB_CIDR_MAX_PIECES: the rest of a deny range is kept whole,
 * shadowing the earlier allow ranges inside it. */
void osb_cidr_policy_sets(const struct osb_policy *p, struct osb_cidrs *deny,
                          struct osb_cidrs *allow);
#endif
