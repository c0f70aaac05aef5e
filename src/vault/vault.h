/* The credential vault's model (egress-api.yaml, CredentialVault*), with
 * upstream OpenSandbox's rules: parsing and validation of POST and PATCH
 * bodies, atomic mutation with revisions, the sanitized JSON (never a
 * value), request matching and the headers a binding adds.
 *
 * A vault is immutable once built and reference counted: the proxy's
 * threads hold one while the API replaces it. Errors: OSB_E_INVALID (400,
 * the message names the field), OSB_E_NOTFOUND (404), OSB_E_EXISTS (409:
 * a stale expectedRevision). Pure: no I/O, no globals. */
#ifndef OSB_VAULT_VAULT_H
#define OSB_VAULT_VAULT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define OSB_VAULT_MAX_ITEMS 256   /* credentials, and bindings */
#define OSB_VAULT_MAX_LIST 64     /* entries of one match list or header list */
#define OSB_VAULT_MAX_VALUE 16384 /* bytes of one credential value */
#define OSB_VAULT_MAX_NAME 128    /* bytes of a name */
#define OSB_VAULT_MAX_HEADERS 16  /* headers one binding adds */

struct osb_policy;
struct osb_vault;
struct osb_vault_binding;

struct osb_vault_header {
    const char *name, *value; /* valid while the vault is referenced */
};

void osb_vault_ref(struct osb_vault *v);
void osb_vault_unref(struct osb_vault *v); /* the last one wipes the values */

/* POST: a new vault at revision 1 (JSON null: an empty one, as upstream).
 * policy: the sandbox's egress policy (every bound host needs an explicit
 * allow rule in it); may be NULL (then no bindings). Errors name the field:
 * "bindings[1].match.ports[0]: port 8443 is not ...". */
OSB_MUST_CHECK int osb_vault_create(json_t *body, const struct osb_policy *policy,
                                    struct osb_vault **out, struct osb_err *err);
/* PATCH: cur with the body's deletes, replaces and adds applied (in that
 * order, credentials before bindings), validated as a whole, as a new vault
 * at cur's revision + 1; cur is unchanged. A stale expectedRevision is
 * OSB_E_EXISTS; adding an existing name, replacing or deleting a missing
 * one is OSB_E_INVALID (upstream answers 400). */
OSB_MUST_CHECK int osb_vault_patch(const struct osb_vault *cur, json_t *body,
                                   const struct osb_policy *policy, struct osb_vault **out,
                                   struct osb_err *err);
int64_t osb_vault_revision(const struct osb_vault *v);
/* Whether v's bindings still hold under a new egress policy (every bound
 * host explicitly allowed): a policy change that breaks one is refused, as
 * upstream does. OSB_E_INVALID naming the binding and host. */
OSB_MUST_CHECK int osb_vault_check_policy(const struct osb_vault *v,
                                          const struct osb_policy *policy, struct osb_err *err);

/* Sanitized JSON (new references): the state, the lists, one item (NULL
 * when the name is unknown). */
json_t *osb_vault_state_json(const struct osb_vault *v);
json_t *osb_vault_credentials_json(const struct osb_vault *v);
json_t *osb_vault_bindings_json(const struct osb_vault *v);
json_t *osb_vault_credential_json(const struct osb_vault *v, const char *name);
json_t *osb_vault_binding_json(const struct osb_vault *v, const char *name);

/* Whether a binding covers host (any case, a trailing dot ignored) on port,
 * for any scheme, method and path: the DNS forwarder and the proxy
 * intercept only those. "*.example.com" covers subdomains, not the apex. */
bool osb_vault_host_bound(const struct osb_vault *v, const char *host, int port);
/* The binding for a request: 0 none, 1 one (*out), 2 more than one at the
 * best host precedence (an exact host beats a wildcard; *out NULL): the
 * proxy refuses it. Host and scheme compare in any case, the method is
 * upper-cased, a trailing dot on host and a query string on path are
 * ignored, as upstream's matcher does. */
int osb_vault_match(const struct osb_vault *v, const char *scheme, const char *host, int port,
                    const char *method, const char *path, const struct osb_vault_binding **out);
const char *osb_vault_binding_name(const struct osb_vault_binding *b);
/* The headers b adds (at most max): 0, or -1 when max is too small. */
int osb_vault_render(const struct osb_vault *v, const struct osb_vault_binding *b,
                     struct osb_vault_header *out, size_t max, size_t *n);
/* Every value the vault holds and every rendered header value (for
 * redacting answers). */
size_t osb_vault_nsecrets(const struct osb_vault *v);
const char *osb_vault_secret(const struct osb_vault *v, size_t i);

/* With the values, for the encrypted store: a JSON text (free with
 * osb_vault_dump_free, which wipes it), and back. */
char *osb_vault_dump(const struct osb_vault *v);
void osb_vault_dump_free(char *text);
OSB_MUST_CHECK int osb_vault_load(const char *text, size_t len, struct osb_vault **out,
                                  struct osb_err *err);
#endif
