/* What already uses IPv4 address space in the host network namespace: the
 * addresses of every link and the routes of every routing table, read with
 * rtnetlink. A server checks its [network] subnet against them at start-up
 * (two servers, or Docker's docker0, or a VPN on one range break each
 * other's sandboxes), and init-config picks a range none of them uses.
 *
 * Default routes (/0) are left out: they overlap everything by design. */
#ifndef OSB_NET_HOSTNET_H
#define OSB_NET_HOSTNET_H
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "common/err.h"

struct osb_hostnet_use {
    struct in_addr net; /* network order, host bits cleared */
    unsigned len;
    char what[160]; /* "address 10.1.2.3/24 on eth0", "route 10.5.0.0/16 (blackhole, table 42)" */
    char owner[96]; /* "another opensandbox-server (state dir hash 1a2b)" or "" */
};

struct osb_hostnet {
    struct osb_hostnet_use *v;
    size_t n;
};

/* Reads the host's addresses and routes into out (freed with
 * osb_hostnet_free). Those on links named own_prefix + digits (this
 * server's slots from a previous run; NULL = none) are left out. */
OSB_MUST_CHECK int osb_hostnet_scan(const char *own_prefix, struct osb_hostnet *out,
                                    struct osb_err *err);
void osb_hostnet_free(struct osb_hostnet *h);
/* Appends one use (scan does this; tests build lists by hand). */
void osb_hostnet_add(struct osb_hostnet *h, struct in_addr addr, unsigned len, const char *what,
                     const char *ifname);

/* The first use overlapping net/len, or NULL. */
const struct osb_hostnet_use *osb_hostnet_overlap(const struct osb_hostnet *h, struct in_addr net,
                                                  unsigned len);
/* The first 10.X.0.0/16 (X from 88 up to 255, then 0 to 87) no use
 * overlaps, as "10.X.0.0/16";
 * -1 when every one is taken. */
OSB_MUST_CHECK int osb_hostnet_free16(const struct osb_hostnet *h, char out[20]);

/* The start-up check: subnet (a valid IPv4 CIDR) overlaps nothing on the
 * host but own_prefix's links -> 0; else OSB_E_EXISTS with a message naming
 * the other owner and a free range to use instead. */
OSB_MUST_CHECK int osb_hostnet_check(const char *subnet, const char *own_prefix,
                                     struct osb_err *err);
#endif
