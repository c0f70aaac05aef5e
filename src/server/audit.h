/* The audit trail: one JSON line per state-changing API request, appended
 * to one file and hash-chained, so an edit, a deletion, a reordering or a
 * truncation shows (docs/operations.md, "Audit trail"). A record:
 *
 *   {"seq":N,"time":"…","actor":"sha256:…"|"-","action":"POST /sandboxes/:sandboxId/pause",
 *    "sandboxId":"…","requestId":"…","status":202,"detail":{…},"prev":"<64 hex>",
 *    "hash":"<64 hex>"}
 *
 * hash is the SHA-256 of the line's bytes up to, not including,
 * ',"hash":' followed by '}'; prev is the previous record's hash (64 zeros
 * for the first). */
#ifndef OSB_SRV_AUDIT_H
#define OSB_SRV_AUDIT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct osb_server;
struct osb_audit;

struct osb_audit_rec {
    const char *actor, *action, *sandbox_id, *request_id;
    int status;
    json_t *detail; /* borrowed; NULL: {} */
};

/* Opens (creating) the file and continues its chain; a file whose last
 * record does not verify is refused (`audit verify` says where). */
int osb_audit_open(const char *path, struct osb_audit **out, struct osb_err *err) OSB_MUST_CHECK;
void osb_audit_close(struct osb_audit *a);
/* Appends one record (one write(2)); logs, never fails the request. */
void osb_audit_append(struct osb_audit *a, const struct osb_audit_rec *r);

/* Checks a whole file: 0 with *n records, or -1 with err naming the first
 * broken record ("record N (line L): why"). */
int osb_audit_verify(const char *path, size_t *n, struct osb_err *err);
/* The records (parsed) whose sandboxId is sandbox (NULL: all) and whose
 * time is at or after since (RFC 3339, NULL: all), the last limit of them,
 * oldest first. */
json_t *osb_audit_list(const char *path, const char *sandbox, const char *since, size_t limit,
                       struct osb_err *err);
#endif
