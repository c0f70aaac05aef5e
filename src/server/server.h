/* The lifecycle server's shared state and the seams between its modules:
 * api_*.c (HTTP handlers), create.c (the create pipeline as a job), lifecycle.c (state machine, TTL, restart
 * recovery), record.c (persisting a record), store.c (SQLite), registry.c
 * (in-memory index), backends.c (the runtime backends it opened),
 * images.c (the image store's users). Everything runs on one libuv loop
 * thread. */
#ifndef OSB_SERVER_SERVER_H
#define OSB_SERVER_SERVER_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/err.h"
#include "http/http.h"
#include "runtime/runtime.h"
#include "server/apierr.h"
#include "server/config.h"
#include "server/registry.h"
#include "server/spec.h"
#include "server/store.h"

struct osb_create_job;
struct osb_istore;
struct osb_pull;
struct osb_snaps;

/* Backends one server opens at most (the default + [secure_runtime] allowed). */
#define OSB_SRV_MAX_BACKENDS 4

struct osb_server {
    uv_loop_t *loop;
    const struct osb_config *cfg;
    struct osb_rt *rts[OSB_SRV_MAX_BACKENDS]; /* opened backends (backends.c) */
    size_t n_rts;
    struct osb_rt *rt;         /* the default of new sandboxes (rts[0]): [runtime] type */
    struct osb_istore *images; /* the image store (pulled, imported, snapshots) */
    struct osb_pull *pulls;    /* pulls in flight (server/pull.c) */
    struct osb_snaps *snaps;   /* snapshot records (server/snapshots.c) */
    struct osb_store *store;
    struct osb_sbx_index *reg;
    struct osb_http_server *http;
    uv_timer_t ttl_timer;
    int port;            /* bound TCP port */
    const char *api_key; /* NULL: no authentication (insecure mode) */
    struct osb_spec_limits limits;
    int64_t ready_timeout_ms;     /* how long execd gets to answer /ping */
    struct osb_vol_job *vol_jobs; /* claims being made or mounted (server/volumes.c) */
    struct osb_netglue *net;      /* sandbox networking (server/network.c) */
    struct osb_srvvault *vault;   /* the credential vault (server/vault.c) */
    struct osb_admit *admit;      /* the admission queue (server/admit.c) */
    struct osb_idem *idem;        /* idempotency keys in flight (server/idem.c) */
    struct osb_pools *pools;      /* warm pools (server/pools.c) */
    /* Set by osb_pools_open (server/pools.h): what create.c hands a claim
     * (spec->pool_ref) and a refill's completed spec (spec->pool_member).
     * Hooks, so that the create pipeline does not depend on the pools that
     * use it. */
    void (*pool_claim)(struct osb_server *srv, struct osb_create_spec *spec,
                       struct osb_create_job *job);
    void (*pool_member_prepare)(struct osb_server *srv, struct osb_create_spec *spec);
    struct osb_metrics *metrics;          /* counters and histograms (server/metrics.h) */
    struct osb_otlp *otlp;                /* OpenTelemetry export, NULL when off (server/otlp.h) */
    struct osb_http_server *metrics_http; /* [metrics] listen, or NULL */
    struct osb_audit *audit;              /* the audit trail (server/audit.h), NULL when off */
    char *audit_path;
    struct osb_signer *signer; /* signed endpoint URLs (server/signing.h) */
    char key_id[24];           /* the API key's id in logs: "sha256:" + 12 hex */
    char **v1_patterns;        /* api.c: the /v1 routes' patterns (osb_api_release) */
    size_t n_v1_patterns;
};

/* ---- lifecycle.c ---- */
/* The last phase of a create job (server/create.h): the record (stored as
 * Pending), the network slot, the runtime, execd's /ping; then done with
 * the record (Running, or ended) or the error (nothing of the sandbox
 * left). May call done before returning. spec stays the caller's. */
typedef void (*osb_lc_done)(void *ud, struct osb_sbx *s, const struct osb_apierr *e);
void osb_lc_create(struct osb_server *srv, struct osb_create_spec *spec, osb_lc_done done,
                   void *ud);
/* Deletes a sandbox in any state. req (may be NULL, for TTL expiry) gets
 * 204 once everything is gone, or 500. */
void osb_lc_delete(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req);
int osb_lc_pause(struct osb_server *srv, struct osb_sbx *s, struct osb_apierr *e) OSB_MUST_CHECK;
int osb_lc_resume(struct osb_server *srv, struct osb_sbx *s, struct osb_apierr *e) OSB_MUST_CHECK;
/* The one log line of a failed create: sandbox id (NULL: none yet), the
 * phase that failed (request, snapshot, image, network, volumes, store,
 * runtime start, readiness, entrypoint, cancelled) and the answer. */
void osb_lc_create_failed(const char *id, const char *phase, int status, const char *code,
                          const char *msg);
/* Re-arm the expiry timer after any change of an expiresAt. */
void osb_lc_ttl_rearm(struct osb_server *srv);
/* At start: load the store, re-adopt live sandboxes, fail or destroy the
 * rest, clean orphans, arm the TTL timer. */
int osb_lc_recover(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
void osb_lc_init(struct osb_server *srv);
void osb_lc_close(struct osb_server *srv);

/* ---- record.c ---- */
/* Persist s (and an event when type is non-NULL); 500 apierr on failure
 * (logged too). osb_sbx_record: the same for a change nobody waits on
 * (a failure is only logged). */
void osb_sbx_record(struct osb_server *srv, struct osb_sbx *s, const char *ev_type,
                    const char *ev_msg);
int osb_sbx_save(struct osb_server *srv, struct osb_sbx *s, const char *ev_type, const char *ev_msg,
                 struct osb_apierr *e) OSB_MUST_CHECK;

/* ---- backends.c ---- */
/* Open the default backend ([runtime] type, after [secure_runtime] type)
 * as srv->rt and every other one [secure_runtime] allowed names; a backend
 * that cannot open fails the whole call (nothing stays open). */
int osb_backends_open(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
void osb_backends_close(struct osb_server *srv);
/* The backend a create asks for in extensions.runtime (name NULL: the
 * default), or NULL with e filled (400 SANDBOX::RUNTIME_NOT_ALLOWED naming
 * the allowed ones). */
struct osb_rt *osb_backend_choose(struct osb_server *srv, const char *name,
                                  struct osb_apierr *e) OSB_MUST_CHECK;
/* The opened backend named name, or NULL (then msg gets why, naming the
 * backends this server has). */
struct osb_rt *osb_backend_get(struct osb_server *srv, const char *name, char *msg,
                               size_t n) OSB_MUST_CHECK;
/* What a sandbox's cgroups say now: 0 with out filled; 1 when it has none
 * to read (not running or paused); -1 with err when the runtime fails. */
int osb_backend_stats(struct osb_server *srv, const struct osb_sbx *s, struct osb_rt_stats *out,
                      struct osb_err *err);

/* ---- images.c ---- */
/* Whether a sandbox record that still holds its runtime state (Pending,
 * Running, Paused, Stopping) runs the image stored as `name` (by gets its
 * id; may be NULL with n = 0). Also for the CLI, on the store's records. */
bool osb_images_used_by(const struct osb_sbx_index *reg, const char *name, char *by, size_t n);
/* osb_istore_in_use_cb over a registry (ud). */
bool osb_images_in_use_cb(void *ud, const char *name);

/* ---- api.c: routes, auth, request ids, shared JSON ---- */
void osb_api_register(struct osb_server *srv);
/* After the HTTP server is closed: frees what registering allocated. */
void osb_api_release(struct osb_server *srv);
/* The list queries page (>= 1, default 1) and pageSize (1..200, default
 * 20); -1 after answering 400. */
int osb_api_page(struct osb_http_req *req, long *page, long *size);
/* PaginationInfo (protocol.md 1.5) for a list page. New ref. */
json_t *osb_api_pagination(long page, long size, size_t total);
/* Sandbox (full) or CreateSandboxResponse (full = false) JSON. New ref. */
json_t *osb_api_sandbox_json(const struct osb_sbx *s, bool full);
/* The sandbox named by the route's :id, or NULL after answering 404. */
struct osb_sbx *osb_api_find(struct osb_server *srv, struct osb_http_req *req);
/* The request body as a JSON value; NULL after answering 400.
 * allow_empty: an empty body gives an empty object. */
json_t *osb_api_body(struct osb_http_req *req, bool allow_empty);
/* An optional integer query parameter in lo..hi (def when absent); -1
 * after answering 400. */
int osb_api_query_int(struct osb_http_req *req, const char *name, long lo, long hi, long def,
                      long *out);
/* 32 random hex chars (uuid4().hex style) into buf[33]; n random bytes
 * hex-encoded into out[2n+1]. */

/* api_batch.c: POST /sandboxes/batch (docs/server.md, "Batch create"). */
void osb_api_batch_create(struct osb_http_req *req, void *ud);

/* Route tables of the other api files, each registered at /v1 and at /. */
extern const struct osb_http_route osb_api_sandbox_routes[];
extern const size_t osb_api_sandbox_nroutes;
#define API_KEY_HEADER "OPEN-SANDBOX-API-KEY"              /* protocol.md 1.1 */
extern const struct osb_http_route osb_api_audit_routes[]; /* api_audit.c */
extern const size_t osb_api_audit_nroutes;
extern const struct osb_http_route osb_api_metrics_routes[]; /* api_metrics.c */
extern const size_t osb_api_metrics_nroutes;
/* api_metrics.c: everything GET /metrics shows, in Prometheus' text
 * format (also what otlp.c exports): 0, or -1 when b is full. */
struct osb_buf;
int osb_metrics_text(struct osb_server *srv, struct osb_buf *b);
/* [metrics] listen: the keyless /metrics listener (nothing when unset). */
int osb_metrics_listen(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
/* access.c: metrics and the access log line of every request. */
void osb_access_install(struct osb_server *srv);
extern const struct osb_http_route osb_api_misc_routes[];
extern const size_t osb_api_misc_nroutes;
extern const struct osb_http_route osb_api_diag_routes[];
extern const size_t osb_api_diag_nroutes;
extern const struct osb_http_route osb_api_proxy_routes[];
extern const size_t osb_api_proxy_nroutes;
extern const struct osb_http_route osb_api_pool_routes[]; /* api_pools.c */
extern const size_t osb_api_pool_nroutes;
extern const struct osb_http_route osb_api_image_routes[]; /* api_images.c */
extern const size_t osb_api_image_nroutes;
extern const struct osb_http_route osb_api_console_routes[]; /* api_console.c */
extern const size_t osb_api_console_nroutes;
extern const struct osb_http_route osb_api_openapi_routes[]; /* api_openapi.c */
extern const size_t osb_api_openapi_nroutes;
#endif
