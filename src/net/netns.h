/* Network slots: pre-created network namespaces, each joined to the host by a
 * veth pair, handed out to sandboxes in microseconds.
 *
 * A slot n owns the /30 at subnet + 4n: the host end "<prefix><n>" carries
 * .1 (subnet + 4n + 1) in the host netns; inside the slot's netns the peer is
 * "eth0" with .2/30, lo is up and the default route goes via .1. The netns
 * is pinned by a bind mount of its nsfs file at <state_dir>/netns/<n> (like
 * `ip netns add`), so it survives a restart of the server; a sandbox joins it
 * with setns(open(path), CLONE_NEWNET).
 *
 * The prefix is "osb" + 4 hex digits of a hash of the real path of the state
 * directory, so two servers with different state directories never touch
 * each other's slots; the nftables table is `inet osb_<hash4>` (see nft.h for
 * its rules: NAT out, no sandbox-to-sandbox, no host services except DNS on
 * the slot's host address, no 169.254.0.0/16, egress allow and deny sets
 * shared by every slot and keyed by its address: a slot is a few set
 * elements, so its cost does not grow with the number of slots).
 *
 * Threads: every function may be called from any thread (a mutex guards the
 * state); a background thread keeps `pool_size` slots ready. osb_net_claim
 * only takes a ready slot (no syscall) unless the pool is empty, in which
 * case it builds one on the calling thread (a few ms).
 *
 * Side effect: osb_net_open sets net.ipv4.ip_forward to 1 when it is 0 and
 * leaves it on at close (other users of the host may rely on it by then).
 * IPv6 is not forwarded for sandboxes. */
#ifndef OSB_NET_NETNS_H
#define OSB_NET_NETNS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "common/err.h"

struct osb_net;

struct osb_net_config {
    const char *state_dir; /* required; made if missing; pins live in <state_dir>/netns */
    const char *subnet;    /* IPv4 CIDR, prefix length 8..28; NULL = "10.88.0.0/16" */
    unsigned pool_size;    /* ready slots kept; 0 = 8 */
    const char *const *allow_host_cidrs; /* IPv4 CIDRs sandboxes may reach although they
                                            are host addresses or 169.254.0.0/16 */
    size_t n_allow_host_cidrs;
    uint16_t proxy_port; /* the vault proxy's TCP port on the host; 0 = none */
};

/* A slot still used by a sandbox when the server restarts. */
struct osb_net_inuse {
    const char *sandbox_id;
    unsigned index;
    bool restricted; /* re-applied at open (fail closed); the caller re-adds allow/deny entries */
};

struct osb_net_slot {
    unsigned index;
    char netns_path[4096];   /* <state_dir>/netns/<index> */
    char host_ifname[16];    /* host end, e.g. "osb1a2b3" */
    char sandbox_ifname[16]; /* "eth0" inside the netns */
    struct in_addr host_ip;  /* gateway and DNS address for the sandbox */
    struct in_addr sandbox_ip;
    unsigned prefix_len; /* 30 */
};

struct osb_net_stats {
    unsigned capacity;             /* slots the subnet holds */
    unsigned ready, claimed, busy; /* busy: being built, cleaned or destroyed */
    unsigned pool_size;
    uint64_t created, destroyed, claims, sync_creates; /* since open */
    char prefix[16];                                   /* interface prefix */
    char table[32];                                    /* nftables table (family inet) */
    char last_error[256];                              /* last background failure, "" if none */
};

/* Validates cfg, recovers: every netns pin, veth and nft object of this
 * prefix that does not belong to an `inuse` slot is removed; in-use slots
 * whose pin or veth is missing are rebuilt; the nft table is rebuilt
 * atomically with the in-use slots (restricted as given, allow and deny sets
 * empty).
 * Then starts the pool thread. Duplicate or out-of-range in-use indexes, or
 * a bad config -> OSB_E_INVALID and nothing changed. */
OSB_MUST_CHECK int osb_net_open(const struct osb_net_config *cfg, const struct osb_net_inuse *inuse,
                                size_t n, struct osb_net **out, struct osb_err *err);
/* Stops the pool thread and destroys every slot not claimed. Claimed slots
 * (running sandboxes) and, if any remain, the nft table stay for the next
 * open; with none claimed the table is deleted too. NULL is a no-op. */
void osb_net_close(struct osb_net *net);

/* Hands a ready slot to sandbox_id (non-empty, unique among claimed slots:
 * OSB_E_EXISTS otherwise). The slot starts unrestricted with empty allow
 * and deny sets. OSB_E_TOOBIG when the subnet is exhausted. */
OSB_MUST_CHECK int osb_net_claim(struct osb_net *net, const char *sandbox_id,
                                 struct osb_net_slot *out, struct osb_err *err);
/* The slot claimed by sandbox_id (OSB_E_NOTFOUND if none). */
OSB_MUST_CHECK int osb_net_find(struct osb_net *net, const char *sandbox_id,
                                struct osb_net_slot *out, struct osb_err *err);
/* Gives the slot back: its nft state is reset (unrestricted, empty sets) and
 * the conntrack entries of its address flushed before this returns; the pool
 * thread then keeps it ready or destroys it. The caller must have killed every
 * process in the netns first. OSB_E_NOTFOUND if sandbox_id holds no slot. */
OSB_MUST_CHECK int osb_net_release(struct osb_net *net, const char *sandbox_id,
                                   struct osb_err *err);

/* Egress enforcement of a claimed slot (by index). restrict on: only
 * destinations in the allow sets and not in the deny sets are reachable, for
 * new and established connections alike; off: everything but the global drops
 * and the deny sets. Applied to the next packet when this returns. */
OSB_MUST_CHECK int osb_net_restrict(struct osb_net *net, unsigned index, bool on,
                                    struct osb_err *err);
/* Adds family (AF_INET/AF_INET6) addr (network order) /prefix_len to the
 * allow sets; timeout_s 0 = permanent, else the entry expires. Re-adding the
 * same address or range refreshes its timeout. Single addresses (/32, /128)
 * and ranges live in separate sets, so an address learned from DNS never
 * conflicts with a range; but a range that nests with a range already present
 * (10.0.0.0/8 after 10.1.0.0/16, or the reverse) fails with OSB_E_EXISTS:
 * the caller passes its static CIDRs without nested duplicates (keep the
 * widest). Host bits set beyond the prefix -> OSB_E_INVALID. */
OSB_MUST_CHECK int osb_net_allow(struct osb_net *net, unsigned index, int family, const void *addr,
                                 unsigned prefix_len, uint32_t timeout_s, struct osb_err *err);
/* Redirects the slot's TCP connections to dst:port to the vault proxy
 * (config proxy_port) for timeout_s seconds (0 = for good); removed with
 * the allow entries (osb_net_reset_allow, release). OSB_E_UNSUPPORTED
 * without a proxy port. */
OSB_MUST_CHECK int osb_net_intercept(struct osb_net *net, unsigned index, struct in_addr dst,
                                     uint16_t port, uint32_t timeout_s, struct osb_err *err);
/* Adds family addr/prefix_len to the deny sets, checked before everything
 * else for every packet from the slot, restricted or not: new and established
 * connections to it are rejected (TCP reset, else ICMP admin-prohibited) from
 * the next packet on. Same address rules and errors as osb_net_allow (nested
 * ranges -> OSB_E_EXISTS); no timeout. */
OSB_MUST_CHECK int osb_net_deny(struct osb_net *net, unsigned index, int family, const void *addr,
                                unsigned prefix_len, struct osb_err *err);
/* Empties the allow sets AND the deny sets in one atomic change (static
 * entries must be re-added by the caller). While restricted, a connection to
 * a destination no longer allowed is cut at its next packet from the sandbox
 * (TCP gets a reset); a destination no longer denied is reachable again. */
OSB_MUST_CHECK int osb_net_reset_allow(struct osb_net *net, unsigned index, struct osb_err *err);

/* The interface prefix ("osb" + 4 hex digits) the slots of state_dir (which
 * must exist) get: what osb_net_open would use. */
OSB_MUST_CHECK int osb_net_ifprefix(const char *state_dir, char out[16], struct osb_err *err);

void osb_net_stats(struct osb_net *net, struct osb_net_stats *out);
/* One line for logs: "net osb1a2b: subnet ... ready N claimed N ...". */
void osb_net_describe(struct osb_net *net, char *buf, size_t len);
#endif
