/* Sandbox networking in the server (issue #5): each sandbox of a "nat" or
 * "bridge" server gets a network slot (src/net/netns.h: its own netns, a
 * veth pair to the host, NAT out), a host-side DNS forwarder on the slot's
 * gateway address (src/net/dns.h), and, with a networkPolicy, the egress
 * policy enforced from the host: names by the forwarder, addresses by the
 * slot's nftables allow sets ([egress] mode "dns+nft").
 *
 * Its state (the slot manager, the DNS forwarder, the sandboxes with a
 * slot) is srv->net, made by osb_network_open. The egress API's handlers
 * are server/api_egress.c.
 *
 * What a sandbox holds is kept in its record (s->spec): "network"
 * {slot, gateway, address}, "networkPolicy" (the current policy) and
 * "egressToken", so a restarted server re-applies all of it. */
#ifndef OSB_SERVER_NETWORK_H
#define OSB_SERVER_NETWORK_H
#include "server/server.h"

/* After the sandbox records are loaded: opens the slot manager (removing
 * what no record holds) and re-applies DNS and policy of every sandbox
 * that has a slot. No-op for [network] mode "none". */
OSB_MUST_CHECK int osb_network_open(struct osb_server *srv, struct osb_err *err);
void osb_network_close(struct osb_server *srv);
bool osb_network_enabled(const struct osb_server *srv);
/* The egress families of GET /metrics (DNS queries, denials, failures,
 * learned addresses): 0, or -1 when b is full. */
struct osb_buf;
int osb_network_metrics(const struct osb_server *srv, struct osb_buf *b);

/* Create: claim a slot, start DNS, apply the policy (spec->network_policy,
 * typed, may be NULL; copied) and record all of it in s->spec; fills
 * rs->netns/dns. A policy without networking is a 400. */
OSB_MUST_CHECK int osb_network_attach(struct osb_server *srv, struct osb_sbx *s,
                                      const struct osb_create_spec *spec,
                                      struct osb_sandbox_spec *rs, struct osb_apierr *e);
/* The sandbox is gone (its processes are dead): stop DNS, free the slot. */
void osb_network_detach(struct osb_server *srv, struct osb_sbx *s);

/* The sandbox's address in bridge mode ("" otherwise). */
const char *osb_network_bridge_ip(const struct osb_server *srv, const struct osb_sbx *s);
/* Bytes the sandbox received and sent on its link so far (its veth's
 * counters); -1 when it has no network. */
int osb_network_link_bytes(const struct osb_server *srv, const struct osb_sbx *s, uint64_t *rx,
                           uint64_t *tx);

/* For the `network` diagnostics scope: the mode and, for a sandbox with a
 * network, its address, gateway, DNS, endpoints and egress policy, as text.
 * -1 if b is full. */
struct osb_buf;
OSB_MUST_CHECK int osb_network_diag(const struct osb_server *srv, const struct osb_sbx *s,
                                    struct osb_buf *b);

/* What the egress API (server/api_egress.c) needs of a sandbox's policy.
 * The policy in force, or NULL when s has none (or no network). */
struct osb_policy;
const struct osb_policy *osb_network_policy(const struct osb_server *srv, const struct osb_sbx *s);
/* Whether tok (may be NULL) is the egress token of s's policy. */
bool osb_network_token_ok(const struct osb_server *srv, const struct osb_sbx *s, const char *tok);
/* Puts *p (taken, emptied) in force for s: DNS, nftables and s->spec
 * (the caller saves the record). OSB_E_NOTFOUND when s has no policy. */
OSB_MUST_CHECK int osb_network_set_policy(struct osb_server *srv, struct osb_sbx *s,
                                          struct osb_policy *p, struct osb_err *err);
#endif
