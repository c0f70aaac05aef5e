/* The credential vault's intercepting proxy. The server's nftables table
 * redirects a sandbox's TCP connections to addresses its DNS forwarder
 * handed out for bound names (net/nft.h, @intercept) to this listener; each
 * connection gets a thread of its own that:
 *
 *   - reads the original destination (conntrack) and, on 443, the TLS
 *     ClientHello's server name without consuming it;
 *   - passes the connection through untouched (no decryption) unless that
 *     name is bound by the sandbox's vault;
 *   - otherwise completes TLS with a leaf certificate from the server's CA,
 *     refuses (403) unless the dialled address is one the forwarder handed
 *     out for that name, and then, for each request: requires Host to be
 *     the SNI name (421), finds the one matching binding (403 when two do),
 *     connects to the dialled address itself, verifying the upstream's
 *     certificate for that name against the host's trust store and
 *     [credential_vault] upstream_ca_file (502 when it does not verify),
 *     adds the credential's headers (replacing the sandbox's own), and
 *     relays the answer with any secret redacted from its header values.
 *     A vault that cannot be read refuses every request (502).
 *
 * Port 80 works the same without TLS: the Host header names the binding and
 * the dialled address must have been handed out for it.
 * Every request handled for a bound name is reported through on_event. */
#ifndef OSB_VAULT_PROXY_H
#define OSB_VAULT_PROXY_H
#include <stdint.h>

#include "common/err.h"

struct osb_vault_ca;
struct osb_vault_reg;
struct osb_vault_proxy;

/* One request the proxy handled for a bound name (values never appear). */
struct osb_vault_event {
    const char *sandbox_id;
    const char *binding; /* the binding whose credential was added; NULL: none */
    const char *host, *method, *path;
    int status;          /* the upstream's, or the proxy's own refusal */
    const char *outcome; /* "injected", "no-binding", or the refusal's code */
};
typedef void (*osb_vault_event_fn)(void *ud, const struct osb_vault_event *ev);

struct osb_vault_proxy_cfg {
    struct osb_vault_ca *ca;
    struct osb_vault_reg *reg;
    const char *upstream_ca_file; /* extra trusted CAs for upstreams; NULL: none */
    osb_vault_event_fn on_event;  /* called on proxy threads; may be NULL */
    void *ud;
};

/* Listens on 0.0.0.0 at a free port (*port): the nftables rules admit only
 * redirected connections from the slots. ca and reg must outlive the proxy. */
OSB_MUST_CHECK int osb_vault_proxy_start(const struct osb_vault_proxy_cfg *cfg, uint16_t *port,
                                         struct osb_vault_proxy **out, struct osb_err *err);
/* Stops accepting, cuts the open connections and waits for their threads. */
void osb_vault_proxy_stop(struct osb_vault_proxy *p);
#endif
