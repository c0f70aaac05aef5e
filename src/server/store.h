/* Persistent sandbox records and lifecycle events: SQLite in WAL mode at
 * <state_dir>/opensandbox.db.
 *
 * Every state change is written (committed) before the API acknowledges
 * it. Writes run on the loop thread as short transactions: with WAL and
 * synchronous=NORMAL a commit appends to the WAL without an fsync (tens of
 * microseconds), and a committed transaction survives the server being
 * SIGKILLed at any moment (only a power loss can drop the last commits). */
#ifndef OSB_SERVER_STORE_H
#define OSB_SERVER_STORE_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "server/registry.h"

struct osb_store;

int osb_store_open(const char *path, struct osb_store **out, struct osb_err *err) OSB_MUST_CHECK;
void osb_store_close(struct osb_store *st);

/* Insert or replace the whole record and, when ev_type is non-NULL, append
 * an event; one transaction. */
int osb_store_put(struct osb_store *st, const struct osb_sbx *s, const char *ev_type,
                  const char *ev_msg, struct osb_err *err) OSB_MUST_CHECK;
/* Append an event alone (the record unchanged). */
int osb_store_event(struct osb_store *st, const char *id, const char *ev_type, const char *ev_msg,
                    struct osb_err *err) OSB_MUST_CHECK;
/* Remove the record and its events. */
int osb_store_delete(struct osb_store *st, const char *id, struct osb_err *err) OSB_MUST_CHECK;

/* Every stored record, each handed to cb (which takes ownership). */
typedef void (*osb_store_load_cb)(void *ud, struct osb_sbx *s);
int osb_store_load(struct osb_store *st, osb_store_load_cb cb, void *ud,
                   struct osb_err *err) OSB_MUST_CHECK;

struct osb_store_event {
    int64_t ts_us;
    char *type;
    char *message; /* may be NULL */
};
/* The last `limit` events of a sandbox, oldest first. *out is an array the
 * caller frees with osb_store_events_free. */
int osb_store_events(struct osb_store *st, const char *id, size_t limit,
                     struct osb_store_event **out, size_t *n, struct osb_err *err) OSB_MUST_CHECK;
void osb_store_events_free(struct osb_store_event *ev, size_t n);

/* Snapshot records (server/snapshots.c owns their JSON shape). */
int osb_store_snap_put(struct osb_store *st, const char *id, const json_t *record,
                       struct osb_err *err) OSB_MUST_CHECK;
int osb_store_snap_delete(struct osb_store *st, const char *id, struct osb_err *err) OSB_MUST_CHECK;
/* Every record, each lent to cb. */
typedef void (*osb_store_snap_cb)(void *ud, json_t *record);
int osb_store_snap_load(struct osb_store *st, osb_store_snap_cb cb, void *ud,
                        struct osb_err *err) OSB_MUST_CHECK;

/* The database, for the modules that keep their own table in it
 * (server/idem.c). */
struct sqlite3 *osb_store_db(struct osb_store *st);

/* Pool records (server/pools.c owns their JSON shape), keyed by name. */
int osb_store_pool_put(struct osb_store *st, const char *name, const json_t *record,
                       struct osb_err *err) OSB_MUST_CHECK;
int osb_store_pool_delete(struct osb_store *st, const char *name,
                          struct osb_err *err) OSB_MUST_CHECK;
int osb_store_pool_load(struct osb_store *st, osb_store_snap_cb cb, void *ud,
                        struct osb_err *err) OSB_MUST_CHECK;

/* Events kept per sandbox; older ones are dropped as new ones arrive. */
#define OSB_STORE_MAX_EVENTS 1000
#endif
