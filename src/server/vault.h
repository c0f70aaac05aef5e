/* The credential vault in the server (issue 14): the per-server CA, the
 * encrypted store of every sandbox's vault, the registry the proxy's
 * threads read and the proxy itself (src/vault/), made at start-up when
 * sandboxes have networks. State dir layout: <state>/vault/ holds ca.key,
 * ca.crt, vault.key, <sandbox id>.vault and trust/ (what sandboxes mount).
 *
 * A sandbox created with credentialProxy.enabled trusts the CA (a bundle
 * mounted over its system bundle, the usual environment variables), is
 * registered when its network slot is attached (network.c), and gets its
 * vault through the egress API (api_vault.c). Its vault lives in the store,
 * never in the sandbox, its record or its snapshots. */
#ifndef OSB_SERVER_VAULT_H
#define OSB_SERVER_VAULT_H
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/server.h"

struct osb_vault;
struct osb_vault_reg;

/* Opens CA, store and proxy (no-op for [network] mode "none"). */
OSB_MUST_CHECK int osb_srvvault_open(struct osb_server *srv, struct osb_err *err);
void osb_srvvault_close(struct osb_server *srv);
/* The proxy's port for the nftables redirect; 0 when there is none. */
uint16_t osb_srvvault_port(const struct osb_server *srv);
/* The registry (network.c teaches it the names it resolves); NULL: none. */
struct osb_vault_reg *osb_srvvault_reg(const struct osb_server *srv);

/* Whether s was created with credentialProxy.enabled. */
bool osb_srvvault_wanted(const struct osb_sbx *s);
/* Create: appends the CA trust (mounts and environment) to spec->sb for a
 * spec with credential_proxy; 400 when this server has no vault proxy. */
OSB_MUST_CHECK int osb_srvvault_prepare(struct osb_server *srv, struct osb_create_spec *spec,
                                        struct osb_apierr *e);
/* network.c: s (credentialProxy) has the address ip: registered, with the
 * vault the store holds for it (a restart). */
void osb_srvvault_attach(struct osb_server *srv, const struct osb_sbx *s, struct in_addr ip);
/* The sandbox is gone: unregistered, its stored vault removed. */
void osb_srvvault_detach(struct osb_server *srv, const char *id, struct in_addr ip);
/* Called (on the loop) after a sandbox's vault changed, so network.c can
 * intercept the names it already resolved. */
void osb_srvvault_on_change(struct osb_server *srv, void (*fn)(struct osb_server *, const char *));

/* For the `network` diagnostics scope: whether s has a credential proxy,
 * its vault's revision and the requests the proxy handled for it, per
 * binding (credential added) and per outcome (no binding, refusals). */
struct osb_buf;
OSB_MUST_CHECK int osb_srvvault_diag(const struct osb_server *srv, const struct osb_sbx *s,
                                     struct osb_buf *b);

/* A new egress policy for s must keep every host its vault binds
 * explicitly allowed (OSB_E_INVALID otherwise; no vault: 0). */
struct osb_policy;
OSB_MUST_CHECK int osb_srvvault_check_policy(struct osb_server *srv, const struct osb_sbx *s,
                                             const struct osb_policy *p, struct osb_err *err);

/* The API's view: the vault of id (a reference; NULL: none, or *broken
 * when it cannot be read). */
struct osb_vault *osb_srvvault_get(struct osb_server *srv, const char *id, bool *broken);
/* Stores v (NULL: deletes the vault) and puts it in force. */
OSB_MUST_CHECK int osb_srvvault_put(struct osb_server *srv, struct osb_sbx *s, struct osb_vault *v,
                                    struct osb_err *err);
#endif
