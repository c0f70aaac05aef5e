/* Idempotency keys (idem.h): the answers kept in the store's
 * idempotency_keys table, and the creates in flight in a list (a key is
 * in one or the other, never both). With a key the create is the key's,
 * not its client's: a client that leaves once the create was admitted
 * does not detach it, so that its retry gets the sandbox it started. */
#include "server/idem.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sha1.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "server/admit.h"
#include "server/create.h"
#include "server/server.h"
#include "server/timefmt.h"

#define KEY_HEADER "Idempotency-Key"

struct osb_idem_op {
    struct osb_idem *owner;
    struct osb_idem_op *next;
    char key[OSB_IDEM_KEY_MAX + 1];
    char hash[41];
    struct osb_http_req **reqs; /* the first request and the retries waiting */
    size_t nreqs;
    struct osb_create_job *job;
};

struct osb_idem {
    struct osb_server *srv;
    sqlite3 *db;
    sqlite3_stmt *get, *put, *purge;
    struct osb_idem_op *ops;
};

/* ---------------------------------------------------------- pure parts */

bool osb_idem_key_ok(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > OSB_IDEM_KEY_MAX)
        return false;
    for (; *key; key++)
        if (*key < 0x20 || *key > 0x7e)
            return false;
    return true;
}

void osb_idem_fingerprint(const json_t *body, char hex[41])
{
    json_t *c = json_deep_copy(body);
    json_t *x = json_is_object(c) ? json_object_get(c, "extensions") : NULL;
    if (json_is_object(x)) {
        json_object_del(x, "requestId");
        if (json_object_size(x) == 0)
            json_object_del(c, "extensions");
    }
    char *s = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    uint8_t d[OSB_SHA1_LEN];
    osb_sha1(s, strlen(s), d);
    for (int i = 0; i < OSB_SHA1_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    free(s);
    json_decref(c);
}

/* -------------------------------------------------------------- store */

static const char schema[] = "CREATE TABLE IF NOT EXISTS idempotency_keys ("
                             " key TEXT PRIMARY KEY,"
                             " body_sha1 TEXT NOT NULL,"
                             " sandbox_id TEXT," /* NULL: the answer was an error */
                             " status INTEGER NOT NULL,"
                             " response TEXT NOT NULL,"
                             " created_us INTEGER NOT NULL);"
                             "CREATE INDEX IF NOT EXISTS idempotency_keys_by_age"
                             " ON idempotency_keys(created_us);";

static int db_fail(struct osb_idem *im, struct osb_err *err, const char *what)
{
    return osb_err_set(err, OSB_E_INTERNAL, "idempotency keys: %s: %s", what,
                       sqlite3_errmsg(im->db));
}

static void purge(struct osb_idem *im)
{
    sqlite3_bind_int64(im->purge, 1, osb_now_us() - OSB_IDEM_KEEP_US);
    if (sqlite3_step(im->purge) != SQLITE_DONE)
        osb_warn("idempotency keys: purge: %s", sqlite3_errmsg(im->db));
    sqlite3_reset(im->purge);
}

int osb_idem_open(struct osb_server *srv, struct osb_err *err)
{
    struct osb_idem *im = osb_xcalloc(1, sizeof *im);
    im->srv = srv;
    im->db = osb_store_db(srv->store);
    srv->idem = im;
    if (sqlite3_exec(im->db, schema, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(im, err, "create table");
    if (sqlite3_prepare_v2(im->db,
                           "SELECT body_sha1, sandbox_id, status, response FROM idempotency_keys"
                           " WHERE key = ?1 AND created_us >= ?2",
                           -1, &im->get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(im->db,
                           "INSERT OR REPLACE INTO idempotency_keys (key, body_sha1, sandbox_id,"
                           " status, response, created_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &im->put, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(im->db, "DELETE FROM idempotency_keys WHERE created_us < ?1", -1,
                           &im->purge, NULL) != SQLITE_OK)
        return db_fail(im, err, "prepare");
    purge(im);
    return 0;
}

void osb_idem_close(struct osb_server *srv)
{
    struct osb_idem *im = srv->idem;
    if (!im)
        return;
    sqlite3_finalize(im->get);
    sqlite3_finalize(im->put);
    sqlite3_finalize(im->purge);
    while (im->ops) {
        struct osb_idem_op *op = im->ops;
        im->ops = op->next;
        free(op->reqs);
        free(op);
    }
    free(im);
    srv->idem = NULL;
}

static void put_row(struct osb_idem *im, const struct osb_idem_op *op, const char *sandbox_id,
                    int status, const char *response)
{
    sqlite3_stmt *q = im->put;
    sqlite3_bind_text(q, 1, op->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, op->hash, -1, SQLITE_STATIC);
    if (sandbox_id)
        sqlite3_bind_text(q, 3, sandbox_id, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, 3);
    sqlite3_bind_int(q, 4, status);
    sqlite3_bind_text(q, 5, response, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 6, osb_now_us());
    if (sqlite3_step(q) != SQLITE_DONE)
        osb_warn("idempotency key '%s': store the answer: %s", op->key, sqlite3_errmsg(im->db));
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    purge(im);
}

/* ---------------------------------------------------------- answering */

/* A stored answer: the sandbox's current CreateSandboxResponse while it
 * exists; once deleted, the answer as it was (its id then gives 404). */
static void replay(struct osb_idem *im, struct osb_http_req *req, const char *sandbox_id,
                   int status, const char *response)
{
    struct osb_sbx *s = sandbox_id ? osb_reg_get(im->srv->reg, sandbox_id) : NULL;
    osb_http_add_header(req, "Idempotent-Replayed", "true");
    if (s) {
        osb_http_respond_json(req, 202, osb_api_sandbox_json(s, false));
        return;
    }
    json_t *j = json_loads(response, 0, NULL);
    const char *code = json_string_value(json_object_get(j, "code"));
    if (status >= 400 && code)
        osb_http_respond_error(req, status, code, "%s",
                               json_string_value(json_object_get(j, "message")));
    else
        osb_http_respond_json(req, status, json_incref(j));
    json_decref(j);
}

/* 1: answered from the store (or a 409 for another body); 0: not there. */
static int lookup(struct osb_idem *im, struct osb_http_req *req, const char *key, const char *hash)
{
    sqlite3_stmt *q = im->get;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, osb_now_us() - OSB_IDEM_KEEP_US);
    int rc = 0;
    if (sqlite3_step(q) == SQLITE_ROW) {
        rc = 1;
        const char *h = (const char *)sqlite3_column_text(q, 0);
        if (strcmp(h, hash) != 0)
            osb_apierr_reply(req, "SANDBOX::IDEMPOTENCY_KEY_REUSED",
                             "Idempotency key '%s' was used with a different request body "
                             "in the last 24 hours.",
                             key);
        else
            replay(im, req, (const char *)sqlite3_column_text(q, 1), sqlite3_column_int(q, 2),
                   (const char *)sqlite3_column_text(q, 3));
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc;
}

static void op_unlink(struct osb_idem_op *op)
{
    struct osb_idem_op **pp = &op->owner->ops;
    while (*pp && *pp != op)
        pp = &(*pp)->next;
    if (*pp)
        *pp = op->next;
}

static void op_free(struct osb_idem_op *op)
{
    op_unlink(op);
    free(op->reqs);
    free(op);
}

/* A waiting client left. The last one leaving a create still queued for
 * admission takes it away (nothing exists yet, nothing is kept: a retry
 * creates); an admitted create goes on and its answer is kept. */
static void on_gone(struct osb_http_req *req, void *ud)
{
    struct osb_idem_op *op = ud;
    for (size_t i = 0; i < op->nreqs; i++) {
        if (op->reqs[i] == req) {
            op->reqs[i] = op->reqs[--op->nreqs];
            break;
        }
    }
    if (op->nreqs == 0 && op->job && osb_create_queued(op->job)) {
        osb_create_detach(op->job);
        op_free(op);
    }
}

static void add_req(struct osb_idem_op *op, struct osb_http_req *req)
{
    op->reqs = osb_xrealloc(op->reqs, (op->nreqs + 1) * sizeof *op->reqs);
    op->reqs[op->nreqs++] = req;
    osb_http_req_on_close(req, on_gone, op);
}

static struct osb_idem_op *in_flight(struct osb_idem *im, const char *key)
{
    for (struct osb_idem_op *op = im->ops; op; op = op->next)
        if (strcmp(op->key, key) == 0)
            return op;
    return NULL;
}

/* The key of the request: the header, or extensions.requestId; both
 * given, they must agree. 0: none; 1: key; -1 after a 400. */
static int request_key(struct osb_http_req *req, json_t *body, const char **key)
{
    const char *h = osb_http_req_header(req, KEY_HEADER);
    json_t *x = json_is_object(body) ? json_object_get(body, "extensions") : NULL;
    const char *b = json_is_object(x) ? json_string_value(json_object_get(x, "requestId")) : NULL;
    if (h && b && strcmp(h, b) != 0) {
        osb_apierr_reply(req, "SANDBOX::INVALID_PARAMETER",
                         "header '%s' and field 'extensions.requestId' differ; send one, or the "
                         "same key in both",
                         KEY_HEADER);
        return -1;
    }
    *key = h ? h : b;
    if (!*key)
        return 0;
    if (!osb_idem_key_ok(*key)) {
        osb_apierr_reply(
            req, "SANDBOX::INVALID_PARAMETER", "%s must be 1..%d printable ASCII characters",
            h ? "header '" KEY_HEADER "'" : "field 'extensions.requestId'", OSB_IDEM_KEY_MAX);
        return -1;
    }
    return 1;
}

int osb_idem_begin(struct osb_server *srv, struct osb_http_req *req, json_t *body,
                   struct osb_idem_op **out)
{
    struct osb_idem *im = srv->idem;
    const char *key;
    int rc = request_key(req, body, &key);
    if (rc <= 0)
        return rc;
    char hash[41];
    osb_idem_fingerprint(body, hash);
    struct osb_idem_op *op = in_flight(im, key);
    if (op && strcmp(op->hash, hash) != 0) {
        osb_apierr_reply(req, "SANDBOX::IDEMPOTENCY_KEY_REUSED",
                         "Idempotency key '%s' is in use by a create with a different request "
                         "body.",
                         key);
        return -1;
    }
    if (op) {
        add_req(op, req); /* answered with the first one's answer */
        return -1;
    }
    if (lookup(im, req, key, hash))
        return -1;
    op = osb_xcalloc(1, sizeof *op);
    op->owner = im;
    snprintf(op->key, sizeof op->key, "%s", key);
    memcpy(op->hash, hash, sizeof hash);
    op->next = im->ops;
    im->ops = op;
    add_req(op, req);
    *out = op;
    return 1;
}

void osb_idem_set_job(struct osb_idem_op *op, struct osb_create_job *job)
{
    op->job = job;
}

void osb_idem_done(void *ud, struct osb_sbx *s, const struct osb_apierr *e)
{
    struct osb_idem_op *op = ud;
    struct osb_server *srv = op->owner->srv;
    json_t *j = s ? osb_api_sandbox_json(s, false)
                  : json_pack("{s:s,s:s}", "code", e->code, "message", e->msg);
    if (!e || e->status != 429) {
        char *text = json_dumps(j, JSON_COMPACT);
        put_row(op->owner, op, s ? s->id : NULL, s ? 202 : e->status, text);
        free(text);
    }
    for (size_t i = 0; i < op->nreqs; i++) {
        struct osb_http_req *req = op->reqs[i];
        osb_http_req_on_close(req, NULL, NULL);
        if (e)
            osb_admit_respond(srv, req, e);
        else
            osb_http_respond_json(req, 202, json_incref(j));
    }
    json_decref(j);
    op_free(op);
}
