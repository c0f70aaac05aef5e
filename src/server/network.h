/* Sandbox networking in the server (issue #5): each sandbox of a "nat" or
 * "bridge" server gets a network slot (src/net/netns.h: its own netns, a
 * veth pair to the host, NAT out), a host-side DNS forwarder on the slot's
 * gateway address (src/net/dns.h), and, with a networkPolicy, the egress
 * policy enforced from the host: names by the forwarder, addresses by the
 * slot's nftables allow sets ([egress] mode "dns+nft").
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
int osb_network_open(struct osb_server *srv, struct osb_err *err);
void osb_network_close(struct osb_server *srv);
bool osb_network_enabled(const struct osb_server *srv);

/* Create: claim a slot, start DNS, apply the policy (spec->network_policy,
 * may be NULL) and record all of it in s->spec; fills rs->netns/dns. A
 * policy without networking is a 400. */
int osb_network_attach(struct osb_server *srv, struct osb_sbx *s,
                       const struct osb_create_spec *spec, struct osb_rt_spec *rs,
                       struct osb_apierr *e);
/* The sandbox is gone (its processes are dead): stop DNS, free the slot. */
void osb_network_detach(struct osb_server *srv, struct osb_sbx *s);

/* The sandbox's address in bridge mode ("" otherwise). */
const char *osb_network_bridge_ip(const struct osb_server *srv, const struct osb_sbx *s);

/* For the `network` diagnostics scope: the mode and, for a sandbox with a
 * network, its address, gateway, DNS, endpoints and egress policy, as text.
 * -1 if b is full. */
struct osb_buf;
OSB_MUST_CHECK int osb_network_diag(const struct osb_server *srv, const struct osb_sbx *s,
                                    struct osb_buf *b);

/* The egress API (protocol.md 4) the proxy serves for port 18080, path
 * `rest` ("policy", "healthz"). admit runs at the end of the headers (the
 * route is public: no API key): it answers and returns false unless the
 * request carries the egress token for a known path, so no one else gets
 * a body buffered. api answers req once the body is in. */
bool osb_network_egress_admit(struct osb_server *srv, struct osb_sbx *s,
                              struct osb_http_req *req, const char *rest);
void osb_network_egress_api(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req,
                            const char *rest);
#endif
