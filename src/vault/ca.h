/* The vault proxy's certificate authority: one per server, its key under
 * the state dir (mode 0600), made on first use and kept across restarts so
 * sandboxes that trust it keep trusting it. Sandboxes with a credential
 * proxy trust this CA; the proxy shows them a leaf certificate for the
 * bound name it intercepts, minted here and cached.
 *
 * Thread-safe: the proxy's threads ask for leaves concurrently. */
#ifndef OSB_VAULT_CA_H
#define OSB_VAULT_CA_H
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "common/err.h"

struct osb_vault_ca;

/* Loads dir/ca.key and dir/ca.crt, or makes them (EC P-256, ten years)
 * when neither exists; dir is created 0700. A key file readable by others
 * than its owner, or one of the two files without the other, is an error. */
OSB_MUST_CHECK int osb_vault_ca_open(const char *dir, struct osb_vault_ca **out,
                                     struct osb_err *err);
void osb_vault_ca_close(struct osb_vault_ca *ca);

/* The CA certificate as PEM (what sandboxes are told to trust). */
const char *osb_vault_ca_pem(const struct osb_vault_ca *ca);

/* A leaf certificate for host (a DNS name, lower case), valid for 30 days
 * from an hour ago, signed by the CA; cached per host. The caller frees it
 * with X509_free. The leaves' key is osb_vault_ca_leaf_key (borrowed). */
OSB_MUST_CHECK int osb_vault_ca_leaf(struct osb_vault_ca *ca, const char *host, X509 **out,
                                     struct osb_err *err);
EVP_PKEY *osb_vault_ca_leaf_key(const struct osb_vault_ca *ca);
#endif
