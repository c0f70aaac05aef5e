/* Vaults at rest: one file per sandbox, <dir>/<id>.vault, encrypted with
 * AES-256-GCM under <dir>/vault.key (32 random bytes, mode 0600, made on
 * first use). The sandbox id is the additional data, so a file copied to
 * another sandbox's name does not decrypt. A file is "OSBV1", a 12-byte
 * random nonce, the ciphertext of osb_vault_dump and the 16-byte tag,
 * written atomically (temporary file, fsync, rename, fsync of the dir).
 * Used on the server's loop thread only. */
#ifndef OSB_VAULT_STORE_H
#define OSB_VAULT_STORE_H
#include "common/err.h"

struct osb_vault;
struct osb_vault_store;

OSB_MUST_CHECK int osb_vault_store_open(const char *dir, struct osb_vault_store **out,
                                        struct osb_err *err);
void osb_vault_store_close(struct osb_vault_store *st);
/* Errors: OSB_E_INVALID (a bad id), OSB_E_SYS. */
OSB_MUST_CHECK int osb_vault_store_put(struct osb_vault_store *st, const char *id,
                                       const struct osb_vault *v, struct osb_err *err);
/* OSB_E_NOTFOUND when there is none; OSB_E_INTEGRITY when it does not
 * decrypt or parse (never a partial vault). */
OSB_MUST_CHECK int osb_vault_store_get(struct osb_vault_store *st, const char *id,
                                       struct osb_vault **out, struct osb_err *err);
/* Removes it; none is fine. */
OSB_MUST_CHECK int osb_vault_store_del(struct osb_vault_store *st, const char *id,
                                       struct osb_err *err);
#endif
