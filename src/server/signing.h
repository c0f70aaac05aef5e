/* Signed endpoint URLs: GET /sandboxes/{id}/endpoints/{port}?expires=T
 * answers "{host}/sandboxes/{id}/signed/{port}/{ticket}", a URL that reaches
 * the port through the server proxy with no header at all, until T (Unix
 * seconds). That is what a browser needs: a WebSocket cannot carry the
 * execd token header, and a link cannot either (docs/server.md, "Signed
 * endpoints").
 *
 * ticket = base36(T) "-" the first 32 hex digits of
 *          HMAC-SHA256(key, "osb-endpoint-v1\n{id}\n{port}\n{base36(T)}\n")
 * with a 32-byte key kept in <state_dir>/signing.key (made at the first
 * start; delete it to revoke every signed URL). */
#ifndef OSB_SRV_SIGNING_H
#define OSB_SRV_SIGNING_H
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/* The longest life a signed URL may ask for. */
#define OSB_SIGN_MAX_SECONDS (7 * 24 * 3600)
/* base36 of an int64 (13 digits) + '-' + 32 hex + NUL */
#define OSB_TICKET_MAX 48

struct osb_signer;

OSB_MUST_CHECK int osb_signer_open(const char *key_path, struct osb_signer **out,
                                   struct osb_err *err);
void osb_signer_free(struct osb_signer *s);
void osb_signer_ticket(const struct osb_signer *s, const char *id, long port, int64_t expires,
                       char out[OSB_TICKET_MAX]);
/* True when ticket was made by this key for (id, port) and its time, at
 * now (Unix seconds), has not passed. Equal-time on the signature. */
bool osb_signer_check(const struct osb_signer *s, const char *id, long port, const char *ticket,
                      int64_t now);
#endif
