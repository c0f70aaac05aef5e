#include "server/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"
#include "server/timefmt.h"

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS sandboxes ("
    " id TEXT PRIMARY KEY,"
    " spec TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " reason TEXT,"
    " message TEXT,"
    " created_us INTEGER NOT NULL,"
    " transition_us INTEGER NOT NULL,"
    " expires_us INTEGER," /* NULL: manual cleanup */
    " metadata TEXT NOT NULL,"
    " token TEXT NOT NULL,"
    " pid INTEGER," /* runtime handle; NULL until started */
    " start_time INTEGER,"
    " sock_path TEXT,"
    " log_path TEXT);"
    /* Added columns: see add_columns(). */
    "CREATE TABLE IF NOT EXISTS events ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " sandbox_id TEXT NOT NULL,"
    " ts_us INTEGER NOT NULL,"
    " type TEXT NOT NULL,"
    " message TEXT);"
    "CREATE INDEX IF NOT EXISTS events_by_sandbox ON events(sandbox_id, seq);"
    "CREATE TABLE IF NOT EXISTS snapshots ("
    " id TEXT PRIMARY KEY,"
    " record TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS pools ("
    " name TEXT PRIMARY KEY,"
    " record TEXT NOT NULL);";

enum {
    Q_PUT,
    Q_EVENT,
    Q_TRIM,
    Q_DEL,
    Q_DEL_EVENTS,
    Q_LOAD,
    Q_EVENTS,
    Q_SNAP_PUT,
    Q_SNAP_DEL,
    Q_SNAP_LOAD,
    Q_POOL_PUT,
    Q_POOL_DEL,
    Q_POOL_LOAD,
    Q_BEGIN,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_COUNT
};

static const char *const queries[Q_COUNT] = {
    [Q_PUT] = "INSERT OR REPLACE INTO sandboxes (id, spec, state, reason, message, created_us,"
              " transition_us, expires_us, metadata, token, pid, start_time, sock_path, log_path,"
              " runtime, image)"
              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    [Q_EVENT] = "INSERT INTO events (sandbox_id, ts_us, type, message) VALUES (?1, ?2, ?3, ?4)",
    [Q_TRIM] = "DELETE FROM events WHERE sandbox_id = ?1 AND seq <= (SELECT seq FROM events"
               " WHERE sandbox_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
    [Q_DEL] = "DELETE FROM sandboxes WHERE id = ?1",
    [Q_DEL_EVENTS] = "DELETE FROM events WHERE sandbox_id = ?1",
    [Q_LOAD] = "SELECT id, spec, state, reason, message, created_us, transition_us, expires_us,"
               " metadata, token, pid, start_time, sock_path, log_path, runtime, image"
               " FROM sandboxes",
    [Q_EVENTS] = "SELECT ts_us, type, message FROM (SELECT seq, ts_us, type, message FROM events"
                 " WHERE sandbox_id = ?1 ORDER BY seq DESC LIMIT ?2) ORDER BY seq",
    [Q_SNAP_PUT] = "INSERT OR REPLACE INTO snapshots (id, record) VALUES (?1, ?2)",
    [Q_SNAP_DEL] = "DELETE FROM snapshots WHERE id = ?1",
    [Q_SNAP_LOAD] = "SELECT record FROM snapshots",
    [Q_POOL_PUT] = "INSERT OR REPLACE INTO pools (name, record) VALUES (?1, ?2)",
    [Q_POOL_DEL] = "DELETE FROM pools WHERE name = ?1",
    [Q_POOL_LOAD] = "SELECT record FROM pools",
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
};

struct osb_store {
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
};

static int db_err(struct osb_store *st, struct osb_err *err, const char *what)
{
    return osb_err_set(err, OSB_E_INTERNAL, "sqlite: %s: %s", what, sqlite3_errmsg(st->db));
}

/* Columns newer than the first schema, added to an older database in
 * place (SQLite has no ADD COLUMN IF NOT EXISTS): the runtime backend a
 * sandbox runs on (NULL in older rows: "native") and the stored name of its
 * image (NULL: unknown, such a sandbox holds no image). */
static int add_columns(struct osb_store *st, const char *path, struct osb_err *err)
{
    static const char *const cols[] = {"runtime", "image"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        char sql[128], *msg = NULL;
        snprintf(sql, sizeof sql, "ALTER TABLE sandboxes ADD COLUMN %s TEXT", cols[i]);
        if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK &&
            !(msg && strstr(msg, "duplicate column name"))) {
            osb_err_set(err, OSB_E_INTERNAL, "upgrade database `%s`: %s", path, msg ? msg : "?");
            sqlite3_free(msg);
            return -1;
        }
        sqlite3_free(msg);
    }
    return 0;
}

int osb_store_open(const char *path, struct osb_store **out, struct osb_err *err)
{
    struct osb_store *st = osb_xcalloc(1, sizeof *st);
    int rc = sqlite3_open_v2(
        path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        osb_err_set(err, OSB_E_SYS, "open database `%s`: %s", path,
                    st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        osb_store_close(st);
        return -1;
    }
    sqlite3_busy_timeout(st->db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(st->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        osb_err_set(err, OSB_E_INTERNAL, "initialise database `%s`: %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        osb_store_close(st);
        return -1;
    }
    if (add_columns(st, path, err) < 0) {
        osb_store_close(st);
        return -1;
    }
    for (int i = 0; i < Q_COUNT; i++) {
        if (sqlite3_prepare_v2(st->db, queries[i], -1, &st->q[i], NULL) != SQLITE_OK) {
            db_err(st, err, "prepare");
            osb_store_close(st);
            return -1;
        }
    }
    *out = st;
    return 0;
}

struct sqlite3 *osb_store_db(struct osb_store *st)
{
    return st->db;
}

void osb_store_close(struct osb_store *st)
{
    if (!st)
        return;
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(st->q[i]);
    sqlite3_close(st->db);
    free(st);
}

/* Runs a fully bound statement that returns no rows, then resets it. */
static int step_done(struct osb_store *st, int q, struct osb_err *err)
{
    int rc = sqlite3_step(st->q[q]);
    sqlite3_reset(st->q[q]);
    sqlite3_clear_bindings(st->q[q]);
    if (rc != SQLITE_DONE)
        return db_err(st, err, queries[q]);
    return 0;
}

static void bind_text(sqlite3_stmt *q, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, i);
}

static void bind_json(sqlite3_stmt *q, int i, const json_t *j)
{
    size_t len;
    char *s = osb_json_dump(j, &len);
    sqlite3_bind_text(q, i, s, (int)len, free);
}

static int put_row(struct osb_store *st, const struct osb_sbx *s, struct osb_err *err)
{
    sqlite3_stmt *q = st->q[Q_PUT];
    bind_text(q, 1, s->id);
    bind_json(q, 2, s->spec);
    bind_text(q, 3, osb_state_name(s->state));
    bind_text(q, 4, s->reason);
    bind_text(q, 5, s->message);
    sqlite3_bind_int64(q, 6, s->created_us);
    sqlite3_bind_int64(q, 7, s->transition_us);
    if (s->expires_us)
        sqlite3_bind_int64(q, 8, s->expires_us);
    bind_json(q, 9, s->metadata);
    bind_text(q, 10, s->token);
    if (s->has_handle) {
        sqlite3_bind_int64(q, 11, s->handle.pid);
        sqlite3_bind_int64(q, 12, (sqlite3_int64)s->handle.start_time);
        bind_text(q, 13, s->handle.sock_path);
        bind_text(q, 14, s->handle.log_path);
    }
    bind_text(q, 15, s->runtime);
    bind_text(q, 16, s->image[0] ? s->image : NULL);
    return step_done(st, Q_PUT, err);
}

static int put_event(struct osb_store *st, const char *id, int64_t ts, const char *type,
                     const char *msg, struct osb_err *err)
{
    sqlite3_stmt *q = st->q[Q_EVENT];
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, ts);
    bind_text(q, 3, type);
    bind_text(q, 4, msg);
    if (step_done(st, Q_EVENT, err) < 0)
        return -1;
    q = st->q[Q_TRIM];
    bind_text(q, 1, id);
    sqlite3_bind_int(q, 2, OSB_STORE_MAX_EVENTS);
    return step_done(st, Q_TRIM, err);
}

/* BEGIN; body; COMMIT, or ROLLBACK on failure. */
static int in_txn(struct osb_store *st, int rc_body, struct osb_err *err)
{
    if (rc_body < 0) {
        step_done(st, Q_ROLLBACK, NULL);
        return -1;
    }
    if (step_done(st, Q_COMMIT, err) < 0) {
        step_done(st, Q_ROLLBACK, NULL);
        return -1;
    }
    return 0;
}

int osb_store_put(struct osb_store *st, const struct osb_sbx *s, const char *ev_type,
                  const char *ev_msg, struct osb_err *err)
{
    if (step_done(st, Q_BEGIN, err) < 0)
        return -1;
    int rc = put_row(st, s, err);
    if (rc == 0 && ev_type)
        rc = put_event(st, s->id, osb_now_us(), ev_type, ev_msg, err);
    return in_txn(st, rc, err);
}

int osb_store_event(struct osb_store *st, const char *id, const char *ev_type, const char *ev_msg,
                    struct osb_err *err)
{
    if (step_done(st, Q_BEGIN, err) < 0)
        return -1;
    return in_txn(st, put_event(st, id, osb_now_us(), ev_type, ev_msg, err), err);
}

int osb_store_delete(struct osb_store *st, const char *id, struct osb_err *err)
{
    if (step_done(st, Q_BEGIN, err) < 0)
        return -1;
    bind_text(st->q[Q_DEL], 1, id);
    int rc = step_done(st, Q_DEL, err);
    if (rc == 0) {
        bind_text(st->q[Q_DEL_EVENTS], 1, id);
        rc = step_done(st, Q_DEL_EVENTS, err);
    }
    return in_txn(st, rc, err);
}

static const char *col_text(sqlite3_stmt *q, int i)
{
    return (const char *)sqlite3_column_text(q, i);
}

static char *col_dup(sqlite3_stmt *q, int i)
{
    const char *s = col_text(q, i);
    return s ? osb_xstrdup(s) : NULL;
}

static json_t *col_json(sqlite3_stmt *q, int i, bool object)
{
    const char *s = col_text(q, i);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    if (!j || (object && !json_is_object(j))) {
        json_decref(j);
        j = json_object();
    }
    return j;
}

static struct osb_sbx *row_to_sbx(sqlite3_stmt *q)
{
    struct osb_sbx *s = osb_sbx_new(col_text(q, 0));
    s->spec = col_json(q, 1, true);
    enum osb_sbx_state stt = OSB_ST_FAILED;
    if (col_text(q, 2) && osb_state_parse(col_text(q, 2), &stt) < 0)
        stt = OSB_ST_FAILED; /* a state this version does not know */
    s->state = stt;
    s->reason = col_dup(q, 3);
    s->message = col_dup(q, 4);
    s->created_us = sqlite3_column_int64(q, 5);
    s->transition_us = sqlite3_column_int64(q, 6);
    s->expires_us = sqlite3_column_type(q, 7) == SQLITE_NULL ? 0 : sqlite3_column_int64(q, 7);
    s->metadata = col_json(q, 8, true);
    snprintf(s->token, sizeof s->token, "%s", col_text(q, 9) ? col_text(q, 9) : "");
    if (sqlite3_column_type(q, 10) != SQLITE_NULL) {
        s->has_handle = true;
        s->handle.pid = (pid_t)sqlite3_column_int64(q, 10);
        s->handle.start_time = (uint64_t)sqlite3_column_int64(q, 11);
        snprintf(s->handle.sock_path, sizeof s->handle.sock_path, "%s",
                 col_text(q, 12) ? col_text(q, 12) : "");
        snprintf(s->handle.log_path, sizeof s->handle.log_path, "%s",
                 col_text(q, 13) ? col_text(q, 13) : "");
    }
    snprintf(s->runtime, sizeof s->runtime, "%s", col_text(q, 14) ? col_text(q, 14) : "native");
    snprintf(s->image, sizeof s->image, "%s", col_text(q, 15) ? col_text(q, 15) : "");
    return s;
}

int osb_store_load(struct osb_store *st, osb_store_load_cb cb, void *ud, struct osb_err *err)
{
    sqlite3_stmt *q = st->q[Q_LOAD];
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        cb(ud, row_to_sbx(q));
    sqlite3_reset(q);
    if (rc != SQLITE_DONE)
        return db_err(st, err, "load sandboxes");
    return 0;
}

int osb_store_events(struct osb_store *st, const char *id, size_t limit,
                     struct osb_store_event **out, size_t *n, struct osb_err *err)
{
    sqlite3_stmt *q = st->q[Q_EVENTS];
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)limit);
    struct osb_store_event *ev = NULL;
    size_t cnt = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        ev = osb_xrealloc(ev, (cnt + 1) * sizeof *ev);
        ev[cnt].ts_us = sqlite3_column_int64(q, 0);
        ev[cnt].type = col_dup(q, 1);
        ev[cnt].message = col_dup(q, 2);
        cnt++;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (rc != SQLITE_DONE) {
        osb_store_events_free(ev, cnt);
        return db_err(st, err, "read events");
    }
    *out = ev;
    *n = cnt;
    return 0;
}

void osb_store_events_free(struct osb_store_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(ev[i].type);
        free(ev[i].message);
    }
    free(ev);
}

/* ------------------------------------------------------------ snapshots */

int osb_store_snap_put(struct osb_store *st, const char *id, const json_t *record,
                       struct osb_err *err)
{
    bind_text(st->q[Q_SNAP_PUT], 1, id);
    bind_json(st->q[Q_SNAP_PUT], 2, record);
    return step_done(st, Q_SNAP_PUT, err);
}

int osb_store_snap_delete(struct osb_store *st, const char *id, struct osb_err *err)
{
    bind_text(st->q[Q_SNAP_DEL], 1, id);
    return step_done(st, Q_SNAP_DEL, err);
}

static int load_records(struct osb_store *st, int qi, osb_store_snap_cb cb, void *ud,
                        struct osb_err *err)
{
    sqlite3_stmt *q = st->q[qi];
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        json_t *j = col_json(q, 0, true);
        cb(ud, j);
        json_decref(j);
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_err(st, err, queries[qi]);
}

int osb_store_snap_load(struct osb_store *st, osb_store_snap_cb cb, void *ud, struct osb_err *err)
{
    return load_records(st, Q_SNAP_LOAD, cb, ud, err);
}

/* ---------------------------------------------------------------- pools */

int osb_store_pool_put(struct osb_store *st, const char *name, const json_t *record,
                       struct osb_err *err)
{
    bind_text(st->q[Q_POOL_PUT], 1, name);
    bind_json(st->q[Q_POOL_PUT], 2, record);
    return step_done(st, Q_POOL_PUT, err);
}

int osb_store_pool_delete(struct osb_store *st, const char *name, struct osb_err *err)
{
    bind_text(st->q[Q_POOL_DEL], 1, name);
    return step_done(st, Q_POOL_DEL, err);
}

int osb_store_pool_load(struct osb_store *st, osb_store_snap_cb cb, void *ud, struct osb_err *err)
{
    return load_records(st, Q_POOL_LOAD, cb, ud, err);
}
