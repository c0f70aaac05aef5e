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
#include <stdint.h>

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

/* Writes to a new file at path from now on (SIGHUP: the old one was
 * rotated away); the chain goes on in it (seq, prev). On failure the old
 * file stays in use. */
int osb_audit_reopen(struct osb_audit *a, const char *path, struct osb_err *err) OSB_MUST_CHECK;

/* What verify found: n records in all; from: the seq the first record
 * follows (0: the trail starts there; N: it continues a file not given,
 * rotated away); bad_file: the index of the file that broke. */
struct osb_audit_checked {
    size_t n;
    uint64_t from;
    size_t bad_file;
};
/* Checks files as one trail, oldest first (rotated files, then the
 * current one): each must go on from the one before it. 0, or -1 with err
 * naming the first broken record ("record N (line L): why") of
 * paths[out->bad_file]. */
int osb_audit_verify_files(const char *const *paths, size_t npaths, struct osb_audit_checked *out,
                           struct osb_err *err);
/* One file: 0 with *n records, or -1 as above. */
int osb_audit_verify(const char *path, size_t *n, struct osb_err *err);
/* The records (parsed) whose sandboxId is sandbox (NULL: all) and whose
 * time is at or after since (RFC 3339, NULL: all), the last limit of them,
 * oldest first. */
json_t *osb_audit_list(const char *path, const char *sandbox, const char *since, size_t limit,
                       struct osb_err *err);
#endif
