/* What the vault proxy's threads need to know about the sandboxes, shared
 * with the server's loop under one mutex: for each sandbox with a
 * credential proxy (keyed by its address, which the slot's anti-spoofing
 * rule vouches for), its id, its vault (or that the vault cannot be read),
 * and which addresses the server's DNS forwarder handed it for which bound
 * names. */
#ifndef OSB_VAULT_REGISTRY_H
#define OSB_VAULT_REGISTRY_H
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

struct osb_vault;
struct osb_vault_reg;

struct osb_vault_reg *osb_vault_reg_new(void);
void osb_vault_reg_free(struct osb_vault_reg *r);

/* The sandbox at addr has a credential proxy: v is its vault (a reference
 * is taken; NULL: no vault yet). broken: its stored vault could not be read
 * (every intercepted request of it is then refused); hosts (NULL-terminated,
 * copied) are the names its bindings held, still intercepted. Replaces what
 * addr had, learned addresses kept. */
void osb_vault_reg_set(struct osb_vault_reg *r, struct in_addr addr, const char *id,
                       struct osb_vault *v, bool broken, const char *const *hosts);
/* osb_vault_reg_set for the sandbox with this id: false when it has no
 * entry (no credential proxy, or no network). */
bool osb_vault_reg_update(struct osb_vault_reg *r, const char *id, struct osb_vault *v, bool broken,
                          const char *const *hosts);
/* The vault of sandbox id (a reference, or NULL: none or broken). */
struct osb_vault *osb_vault_reg_get(struct osb_vault_reg *r, const char *id, bool *broken);
/* The sandbox is gone (its slot may go to another). */
void osb_vault_reg_drop(struct osb_vault_reg *r, struct in_addr addr);
/* Whether connections from addr to name:port are for the proxy: a binding
 * of its vault (or a host of a broken one) covers it. */
bool osb_vault_reg_bound(struct osb_vault_reg *r, struct in_addr addr, const char *name, int port);
/* The forwarder gave addr the address dst for name, valid until until_ms. */
void osb_vault_reg_learn(struct osb_vault_reg *r, struct in_addr addr, const char *name,
                         struct in_addr dst, int64_t until_ms);
/* Forgets every learned address of addr (a policy change). */
void osb_vault_reg_forget(struct osb_vault_reg *r, struct in_addr addr);

/* What the proxy sees of one connection's sandbox, taken under the lock. */
struct osb_vault_view {
    bool known;   /* addr is a sandbox with a credential proxy */
    bool broken;  /* its vault cannot be read */
    bool bound;   /* name:port is bound (see osb_vault_reg_bound) */
    bool learned; /* dst was handed out for name and has not expired */
    char id[65];
    struct osb_vault *vault; /* a reference (osb_vault_unref), or NULL */
};
void osb_vault_reg_view(struct osb_vault_reg *r, struct in_addr addr, const char *name, int port,
                        struct in_addr dst, struct osb_vault_view *out);
#endif
