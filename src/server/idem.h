/* Idempotent creates: a POST /v1/sandboxes carrying an Idempotency-Key
 * header (or extensions.requestId) that this server answered in the last
 * 24 hours gets the same answer again, never a second sandbox, also
 * after a restart (a table in the store). The same key with another body
 * is a 409; the same key while its create is in flight waits for it and
 * gets its answer (docs/server.md, "Idempotent creates"). */
#ifndef OSB_SERVER_IDEM_H
#define OSB_SERVER_IDEM_H
#include <jansson.h>
#include <stdbool.h>

#include "common/err.h"
#include "server/apierr.h"

struct osb_server;
struct osb_http_req;
struct osb_sbx;
struct osb_create_job;
struct osb_idem_op;

/* Keys are kept this long (and rows older are purged). */
#define OSB_IDEM_KEEP_US (24LL * 3600 * 1000000)
#define OSB_IDEM_KEY_MAX 255

/* 1..255 printable ASCII characters (0x20..0x7e). */
bool osb_idem_key_ok(const char *key);
/* The body's fingerprint: SHA-1 hex of its canonical form (keys sorted,
 * compact, without extensions.requestId, which names the key and not the
 * request). */
void osb_idem_fingerprint(const json_t *body, char hex[41]);

int osb_idem_open(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
void osb_idem_close(struct osb_server *srv);

/* For a create's body: 0, no key (go on as usual); -1, req was answered
 * (a bad key, a 409, a replay, or it waits for the key's create in
 * flight); 1, a new key: *op is the create's owner, and the caller either
 * ends it with osb_idem_done (a request it refuses) or starts the create
 * with osb_idem_done as the job's callback and op as its ud, then hands
 * the job to osb_idem_set_job (when osb_create_start returned one). */
int osb_idem_begin(struct osb_server *srv, struct osb_http_req *req, json_t *body,
                   struct osb_idem_op **op);
void osb_idem_set_job(struct osb_idem_op *op, struct osb_create_job *job);
/* An osb_create_done: answers every request waiting on the key, and keeps
 * the answer (not a 429: nothing happened then, and a retry may create). */
void osb_idem_done(void *ud, struct osb_sbx *s, const struct osb_apierr *e);
#endif
