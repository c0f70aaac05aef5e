/* The nftables side of sandbox networking, built with libnftnl and sent as
 * one atomic batch per change (never by running `nft`).
 *
 * Layout of the table `inet <name>` (P = the interface prefix, e.g. "osb1a2b").
 * It holds a fixed set of chains and sets whatever the number of slots: a
 * slot is only elements, keyed by its host interface or its sandbox address,
 * so adding or removing one costs the same with 10 or 10000 alive (the
 * kernel validates every chain on each commit and finds sets by name in a
 * list, which per-slot chains and sets made linear in the slot count).
 *
 *   set allow_host  ipv4_addr, interval      host/link-local exceptions (config)
 *   set slots       ifname . ipv4_addr       "P<n>" . sandbox address, per slot
 *   set dns_host    ipv4_addr . ipv4_addr    sandbox . its slot's host address
 *   set restricted  ipv4_addr                sandbox addresses under an allow list
 *   set intercept   ipv4_addr . ipv4_addr . inet_service (timeout)
 *                   sandbox . destination . port: TCP flows for the vault proxy
 *   sets a4 (hash, timeout): sandbox . single address (DNS answers, TTL);
 *        c4 (interval, timeout): sandbox . CIDR (a concatenated range);
 *        a6/c6: the same for IPv6 keyed by "P<n>" . address;
 *        d4/dc4, d6/dc6: the same shapes without timeout, denied destinations.
 *   chain forward   filter hook forward 0, policy accept:  iifname "P*" jump from_slot
 *   chain from_slot ipv6 -> drop; oifname "P*" (slot to slot) -> reject;
 *                   169.254.0.0/16 not in @allow_host -> reject;
 *                   ct direction reply -> accept (connections made *to* the sandbox);
 *                   iifname . ip saddr not in @slots -> drop (anti-spoofing);
 *                   saddr . daddr in @d4/@dc4 (v6: iifname . daddr in @d6/@dc6)
 *                   -> jump refuse, restricted or not;
 *                   ip saddr not in @restricted -> accept;
 *                   saddr . daddr in @a4/@c4 (v6: iifname . daddr in @a6/@c6)
 *                   -> accept; jump refuse.
 *                   The deny and allow checks run for every packet, not only new
 *                   ones, so a destination added to the deny sets or removed from
 *                   the allow sets is cut at its next packet.
 *   chain refuse    tcp -> reset; else icmpx admin-prohibited
 *   chain input     filter hook input 0, policy accept:  iifname "P*" jump to_host
 *   chain to_host   non-IPv4 -> drop; iifname . ip saddr not in @slots -> drop;
 *                   ct direction reply -> accept;
 *                   udp/tcp dport 53 with saddr . daddr in @dns_host (DNS to
 *                   the slot's own host address) -> accept;
 *                   daddr in @allow_host -> accept; jump refuse
 *   chain postrouting nat hook postrouting 100: ip saddr SUBNET oifname != "P*" masquerade
 *   chain prerouting nat hook prerouting -100 (only with a proxy port X):
 *                   iifname "P*" saddr . daddr . tcp dport in @intercept -> redirect to :X
 *   (with X, input also drops tcp dport X arriving on any interface but lo and
 *   the slots, and to_host accepts tcp dport X only when ct status has dnat)
 *
 * Sets cannot be flushed by key prefix, so the caller tracks what it added
 * to a slot's allow and deny sets and removes exactly that (osb_nft_forget,
 * with "destroy" messages: an element the kernel already expired is no
 * error; destroy needs Linux 6.3, concatenated range sets 5.6). Only packets
 * entering from our own interfaces are ever dropped, so
 * the table never interferes with the host's other traffic. */
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
    uint16_t proxy_port; /* the vault proxy's port on the host; 0 = no interception */
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
/* Deletes the table if it exists and creates it afresh with its fixed sets
 * and chains and no slot. */
void osb_nft_reset_table(struct osb_nft_batch *b, const struct osb_nft_table_cfg *cfg);
/* The slot's elements in @slots and @dns_host (and @restricted). */
void osb_nft_add_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool restricted);
/* Removes them again (absent ones are no error); the slot's allow and deny
 * entries must have been removed with osb_nft_forget. */
void osb_nft_del_slot(struct osb_nft_batch *b, const struct osb_nft_slot *s);
/* Adds the slot's sandbox address to @restricted or removes it. */
void osb_nft_set_restricted(struct osb_nft_batch *b, const struct osb_nft_slot *s, bool on);

/* One allow or deny entry of a slot: family AF_INET or AF_INET6, addr in
 * network order, prefix 1..32/128. */
struct osb_nft_addr {
    bool deny;
    int family;
    uint8_t addr[16];
    unsigned prefix;
    uint16_t port; /* != 0: a flow to intercept (@intercept), IPv4 /32 only */
};
/* Checks a (family, prefix, no host bits beyond the prefix): OSB_E_INVALID
 * with a precise message otherwise. */
OSB_MUST_CHECK int osb_nft_addr_check(const struct osb_nft_addr *a, struct osb_err *err);
/* Adds a to the slot's allow sets (a->deny false) or deny sets; timeout_ms
 * 0 = permanent (deny entries never time out). Re-adding an existing entry
 * refreshes its timeout. Single addresses (/32, /128) go to the hash sets,
 * ranges to the interval sets. Rejects bad input with OSB_E_INVALID and
 * queues nothing. */
OSB_MUST_CHECK int osb_nft_add_addr(struct osb_nft_batch *b, const struct osb_nft_slot *s,
                                    const struct osb_nft_addr *a, uint64_t timeout_ms,
                                    struct osb_err *err);
/* Removes the n entries (each valid for osb_nft_add_addr) from the slot's
 * sets, one message per set touched; entries already gone are no error. */
void osb_nft_forget(struct osb_nft_batch *b, const struct osb_nft_slot *s,
                    const struct osb_nft_addr *v, size_t n);

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
