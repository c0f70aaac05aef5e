/* The nftables side of sandbox networking, built with libnftnl and sent as
 * one atomic batch per change (never by running `nft`).
 *
 * Layout of the table `inet <name>` (P = the interface prefix, e.g. "osb1a2b"):
 *
 *   set allow_host  ipv4_addr, interval      host/link-local exceptions (config)
 *   map fwd_slots   ifname : verdict         "P<n>" : jump f<n>
 *   map in_slots    ifname : verdict         "P<n>" : jump i<n>
 *   chain forward   filter hook forward 0, policy accept:  iifname "P*" jump from_slot
 *   chain from_slot ipv6 -> reject; oifname "P*" (slot to slot) -> reject;
 *                   169.254.0.0/16 not in @allow_host -> reject;
 *                   ct direction reply -> accept (connections made *to* the sandbox);
 *                   iifname vmap @fwd_slots; reject
 *   chain f<n>      ip saddr != sandbox address -> drop (anti-spoofing), then
 *                   daddr in d4_<n>/dc4_<n> (v4) or d6_<n>/dc6_<n> (v6) -> tcp reset,
 *                   else icmpx admin-prohibited (restricted or not), then
 *                   unrestricted: accept
 *                   restricted:   daddr in a4_<n>/c4_<n> (v4) or a6_<n>/c6_<n> (v6)
 *                                 -> accept; tcp -> reset; else icmpx admin-prohibited.
 *                   The deny and allow checks run for every packet, not only new
 *                   ones, so a destination added to the deny sets or removed from
 *                   the allow sets is cut at its next packet.
 *   chain input     filter hook input 0, policy accept:  iifname "P*" jump to_host
 *   chain to_host   iifname vmap @in_slots; reject
 *   chain i<n>      non-IPv4 or spoofed source -> drop; ct direction reply -> accept;
 *                   udp/tcp dport 53 to the slot's host address -> accept;
 *                   daddr in @allow_host -> accept; reject
 *   chain postrouting nat hook postrouting 100: ip saddr SUBNET oifname != "P*" masquerade
 *   sets a4_<n>/a6_<n> (hash, timeout): single addresses (DNS answers, TTL);
 *        c4_<n>/c6_<n> (interval, timeout): CIDRs.
 *   sets d4_<n>/d6_<n> (hash), dc4_<n>/dc6_<n> (interval): denied addresses/CIDRs.
 *
 * Only packets entering from our own interfaces are ever dropped, so the
 * table never interferes with the host's other traffic. */
#ifndef OSB_NET_NFT_H
#define OSB_NET_NFT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include "common/err.h"

struct osb_nft_cidr4 {
    struct in_addr addr;
    unsigned len;
};

struct osb_nft_table_cfg {
    const char *table;    /* table name in family inet */
    const char *ifprefix; /* every slot host interface starts with it */
    struct in_addr subnet;
    unsigned subnet_len;
    const struct osb_nft_cidr4 *allow_host;
    size_t n_allow_host;
};

struct osb_nft_slot {
    unsigned index;
    const char *ifname; /* host-side interface */
    struct in_addr host, sandbox;
};

/* A batch of changes, applied atomically by osb_nft_commit. */
struct osb_nft_batch;
struct osb_nft_batch *osb_nft_batch_new(const char *table);
void osb_nft_batch_free(struct osb_nft_batch *b);
/* Number of messages queued (begin/end excluded). */
unsigned osb_nft_batch_count(const struct osb_nft_batch *b);
/* Raw bytes of the queued messages (without begin/end), for tests. */
const void *osb_nft_batch_data(const struct osb_nft_batch *b, size_t *len);

/* Deletes the table if it exists (add-then-delete, so a missing table is no
 * error). */
void osb_nft_delete_table(struct osb_nft_batch *b);
/* Deletes the table if it exists and creates it afresh with the global sets,
 * maps and chains and no slot. */
void osb_nft_reset_table(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg);
/* Per-slot chains, sets and map entries. */
void osb_nft_add_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool restricted);
void osb_nft_del_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s);
/* Rewrites f<n> for the restricted flag. */
void osb_nft_set_restricted(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool on);
/* Adds addr/prefix (family AF_INET or AF_INET6, addr in network order) to the
 * slot's allow sets; timeout_ms 0 = permanent. Re-adding an existing single
 * address refreshes its timeout. Rejects bad input with OSB_E_INVALID and
 * queues nothing. */
OSB_MUST_CHECK int osb_nft_allow(struct osb_nft_batch *b, unsigned index, int family,
                                 const void *addr, unsigned prefix, uint64_t timeout_ms,
                                 struct osb_err *err);
/* Like osb_nft_allow for the slot's deny sets (no timeout). */
OSB_MUST_CHECK int osb_nft_deny(struct osb_nft_batch *b, unsigned index, int family,
                                const void *addr, unsigned prefix, struct osb_err *err);
/* Empties the slot's four allow sets / four deny sets. */
void osb_nft_flush_allow(struct osb_nft_batch *b, unsigned index);
void osb_nft_flush_deny(struct osb_nft_batch *b, unsigned index);

/* A NETLINK_NETFILTER socket kept open for the owner's life, shareable
 * between threads. Closing such a socket waits for the kernel to finish
 * destroying what the last commit removed (nf_tables flushes its deferred
 * destroy work, an RCU grace period: 10-20 ms here), so a socket per commit
 * put that wait on the server's loop for every create and delete. The
 * socket is opened on first use and reopened after an error. */
struct osb_nft_conn;
struct osb_nft_conn *osb_nft_conn_new(void);
void osb_nft_conn_free(struct osb_nft_conn *c);
/* Sends one netfilter request built with NLM_F_ACK (e.g. a conntrack
 * flush) on c; the kernel's error becomes OSB_E_SYS with err->sys_errno. */
struct nlmsghdr;
OSB_MUST_CHECK int osb_nft_conn_talk(struct osb_nft_conn *c, const struct nlmsghdr *nlh,
                                     struct osb_err *err);

/* Sends the batch on conn (NULL: a socket of its own, closed after); the
 * first error reported by the kernel fails the whole batch (nothing
 * applied). An empty batch is a no-op. The batch may be reused afterwards
 * (it is emptied). */
OSB_MUST_CHECK int osb_nft_commit(struct osb_nft_conn *conn, struct osb_nft_batch *b,
                                  struct osb_err *err);
#endif
