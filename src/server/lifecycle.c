/* The sandbox state machine (protocol.md 1.8) on top of the runtime:
 *
 *   create:  validate -> Pending (stored) -> osb_rt_create -> watch, /ping
 *            over execd's socket -> Running (stored) -> 202
 *   delete:  any state; a create in flight is cancelled and destroyed when
 *            the runtime reports back; then the record is gone (404)
 *   TTL:     one timer for the nearest expiresAt; expiry is a delete
 *   end:     the entrypoint exits or cannot be executed (execd reports it),
 *            or PID 1 dies -> Terminated/Failed; everything but the record
 *            and the log is freed; kept until deleted/expired. During a
 *            create, the 202 then carries the ended state.
 *   restart: re-adopt live sandboxes, end or destroy the rest, clean orphans
 *
 * Every change is committed to the store before it is acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "common/random.h"
#include "server/admit.h"
#include "server/ending.h"
#include "server/network.h"
#include "server/vault.h"
#include "server/ping.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/timefmt.h"
#include "server/volumes.h"

struct osb_create_op {
    struct osb_server *srv;
    struct osb_sbx *s;
    osb_lc_done done; /* called once the create is over */
    void *done_ud;
    struct osb_http_req **waiters; /* DELETEs waiting for the cancel to finish */
    size_t nwaiters;
    struct osb_ping *ping;
    bool cancelled;
    /* monotonic us, for the debug line of a ready sandbox (docs/server.md,
     * "Performance"): Pending stored, network slot, runtime called, reported */
    int64_t t_start, t_stored, t_net, t_called, t_runtime;
};

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void on_exit_cb(void *ud, const char *id, const struct osb_rt_end *end);

/* The backend a record names (NULL: this server has not opened it; msg
 * says why). */
static struct osb_rt *rt_of(struct osb_server *srv, const struct osb_sbx *s, char *msg, size_t n)
{
    return osb_backend_get(srv, s->runtime, msg, n);
}

/* Forget a record: store row, registry entry, memory. */
static void forget(struct osb_server *srv, struct osb_sbx *s)
{
    struct osb_err err = {0};
    if (osb_store_delete(srv->store, s->id, &err) < 0)
        osb_err_log("delete sandbox %s from the store: %s", s->id, err.msg);
    osb_reg_remove(srv->reg, s->id);
    osb_vol_release(srv, s);
    osb_network_detach(srv, s);
    osb_sbx_free(s);
    osb_admit_kick(srv); /* its room may admit a queued create */
}

/* rt may be NULL (a record of a backend this server has not opened):
 * there is nothing it can destroy then. */
static void destroy_rt(struct osb_rt *rt, const char *id)
{
    struct osb_err err = {0};
    if (rt && osb_rt_destroy(rt, id, &err) < 0)
        osb_err_log("destroy sandbox %s: %s", id, err.msg);
}

void osb_lc_create_failed(const char *id, const char *phase, int status, const char *code,
                          const char *msg)
{
    osb_warn("create failed: sandbox %s, phase %s: %s (%d %s)", id && *id ? id : "-", phase, msg,
             status, code);
}

/* The sandbox ended on its own: free its processes, cgroups, state (but
 * the log) and network slot at once; the record stays, with the outcome,
 * until it is deleted or expires. Logs the end unless the caller does. */
static void end_sandbox(struct osb_server *srv, struct osb_sbx *s, const struct osb_ending *e,
                        bool quiet)
{
    struct osb_err err = {0};
    struct osb_rt *rt = rt_of(srv, s, NULL, 0);
    if (rt && osb_rt_stop(rt, s->id, &err) < 0)
        osb_err_log("stop sandbox %s: %s", s->id, err.msg);
    osb_network_detach(srv, s);
    if (!quiet)
        osb_log(e->state == OSB_ST_FAILED ? OSB_LOG_WARN : OSB_LOG_INFO,
                "sandbox %s ended: %s (%s): %s", s->id, osb_state_name(e->state), e->reason,
                e->message);
    osb_sbx_set_status(s, e->state, e->reason, e->message, osb_now_us());
    osb_sbx_record(srv, s, osb_state_name(e->state), e->message);
    osb_admit_kick(srv);
}

/* Watch the sandbox (its PID 1 and execd's report of the entrypoint). */
static int watch(struct osb_server *srv, struct osb_rt *rt, struct osb_sbx *s, struct osb_err *err)
{
    return osb_rt_watch(rt, s->id, &s->handle, on_exit_cb, srv, err);
}

/* ------------------------------------------------------------- create */


static void op_free(struct osb_create_op *op)
{
    if (op->s)
        op->s->op = NULL;
    free(op->waiters);
    free(op);
}

/* The create ended without a sandbox: answer everybody, drop the record. */
static void op_fail(struct osb_create_op *op, const char *code, const char *msg)
{
    struct osb_server *srv = op->srv;
    osb_lc_done done = op->done;
    void *ud = op->done_ud;
    for (size_t i = 0; i < op->nwaiters; i++)
        osb_http_respond_empty(op->waiters[i], 204);
    struct osb_sbx *s = op->s;
    op->s = NULL;
    s->op = NULL;
    op_free(op);
    forget(srv, s);
    osb_lc_ttl_rearm(srv);
    struct osb_apierr e;
    osb_apierr(&e, code, "%s", msg);
    done(ud, NULL, &e);
}

static void op_cancelled(struct osb_create_op *op)
{
    char msg[160];
    snprintf(msg, sizeof msg, "Sandbox %s was deleted before it became ready.", op->s->id);
    osb_lc_create_failed(op->s->id, "cancelled", 409, "SANDBOX::DELETED", msg);
    op_fail(op, "SANDBOX::DELETED", msg);
}

/* The answer to the POST once the create is over, ended or running. */
static void op_answer(struct osb_create_op *op)
{
    osb_lc_done done = op->done;
    void *ud = op->done_ud;
    struct osb_sbx *s = op->s;
    op_free(op);
    done(ud, s, NULL);
}

/* The entrypoint ended (or PID 1 died) before execd answered /ping: the
 * create is over, and its answer carries the ended state (GET shows it
 * too until the record is deleted). */
static void op_ended(struct osb_create_op *op, const struct osb_rt_end *end)
{
    struct osb_sbx *s = op->s;
    if (op->ping) {
        osb_ping_cancel(op->ping);
        op->ping = NULL;
    }
    struct osb_ending e;
    osb_ending_describe(s->spec, end, &e);
    osb_lc_create_failed(s->id, end->how == OSB_RT_END_REPORTED ? "entrypoint" : "readiness", 202,
                         e.reason, e.message);
    end_sandbox(op->srv, s, &e, true);
    op_answer(op);
}

static void on_ready(void *ud, int ok, const char *why)
{
    struct osb_create_op *op = ud;
    struct osb_server *srv = op->srv;
    struct osb_sbx *s = op->s;
    op->ping = NULL;
    if (ok < 0) {
        destroy_rt(rt_of(srv, s, NULL, 0), s->id);
        char msg[400];
        snprintf(msg, sizeof msg,
                 "Sandbox %s did not become ready: execd did not answer /ping "
                 "within %lld ms (%s).",
                 s->id, (long long)srv->ready_timeout_ms, why);
        osb_lc_create_failed(s->id, "readiness", 500, "SANDBOX::START_FAILED", msg);
        op_fail(op, "SANDBOX::START_FAILED", msg);
        return;
    }
    int64_t t_ping = mono_us();
    osb_sbx_set_status(s, OSB_ST_RUNNING, "SANDBOX_RUNNING", "Sandbox is running.", osb_now_us());
    struct osb_apierr e;
    if (osb_sbx_save(srv, s, "Running", "execd answered /ping; the sandbox is ready.", &e) < 0) {
        destroy_rt(rt_of(srv, s, NULL, 0), s->id);
        osb_lc_create_failed(s->id, "store", e.status, e.code, e.msg);
        op_fail(op, e.code, e.msg);
        return;
    }
    int64_t now = mono_us();
    osb_debug("sandbox %s ready in %lld us: store %lld, network %lld, runtime call %lld, "
              "runtime done %lld, execd /ping %lld, store %lld",
              s->id, (long long)(now - op->t_start), (long long)(op->t_stored - op->t_start),
              (long long)(op->t_net - op->t_stored), (long long)(op->t_called - op->t_net),
              (long long)(op->t_runtime - op->t_called), (long long)(t_ping - op->t_runtime),
              (long long)(now - t_ping));
    op_answer(op);
}

static void on_created(void *ud, const struct osb_rt_handle *h, const struct osb_err *err)
{
    struct osb_create_op *op = ud;
    struct osb_server *srv = op->srv;
    struct osb_sbx *s = op->s;
    if (err) {
        if (op->cancelled) {
            op_cancelled(op);
            return;
        }
        char msg[600];
        snprintf(msg, sizeof msg, "Sandbox %s failed to start: %s", s->id, err->msg);
        const char *code =
            err->code == OSB_E_INVALID ? "SANDBOX::INVALID_PARAMETER" : "SANDBOX::START_FAILED";
        osb_lc_create_failed(s->id, "runtime start", osb_apierr_status(code), code, msg);
        op_fail(op, code, msg);
        return;
    }
    s->handle = *h;
    s->has_handle = true;
    op->t_runtime = mono_us();
    if (op->cancelled) {
        destroy_rt(rt_of(srv, s, NULL, 0), s->id);
        op_cancelled(op);
        return;
    }
    /* Watched from now on: an entrypoint that fails at once ends the
     * create instead of leaving /ping to time out. */
    struct osb_err werr = {0};
    if (watch(srv, rt_of(srv, s, NULL, 0), s, &werr) < 0) {
        destroy_rt(rt_of(srv, s, NULL, 0), s->id);
        char msg[600];
        snprintf(msg, sizeof msg, "Sandbox %s failed to start: %s", s->id, werr.msg);
        osb_lc_create_failed(s->id, "readiness", 500, "SANDBOX::START_FAILED", msg);
        op_fail(op, "SANDBOX::START_FAILED", msg);
        return;
    }
    op->ping =
        osb_ping_start(srv->loop, h->sock_path, s->token, srv->ready_timeout_ms, on_ready, op);
}

static struct osb_sbx *new_record(struct osb_create_spec *spec)
{
    char id[sizeof spec->id];
    if (spec->id[0])
        memcpy(id, spec->id, sizeof id);
    else
        osb_random_uuid4(id);
    struct osb_sbx *s = osb_sbx_new(id);
    osb_random_hex(s->token, 32);
    s->created_us = osb_now_us();
    if (spec->timeout_s)
        s->expires_us = s->created_us + spec->timeout_s * 1000000;
    s->spec = osb_spec_record(spec);
    snprintf(s->runtime, sizeof s->runtime, "%s", spec->runtime);
    snprintf(s->image, sizeof s->image, "%s", spec->img.name);
    s->metadata = spec->metadata;
    spec->metadata = NULL;
    osb_sbx_set_status(s, OSB_ST_PENDING, "SANDBOX_PENDING", "Sandbox is being created.",
                       s->created_us);
    return s;
}

/* The last of the spec: the record's id and execd token, the volumes'
 * mount list, the network slot; then the backend builds the sandbox. */
static int start_runtime(struct osb_server *srv, struct osb_create_op *op,
                         struct osb_create_spec *spec, struct osb_apierr *e)
{
    struct osb_sandbox_spec *sb = &spec->sb;
    sb->id = op->s->id;
    sb->execd_token = op->s->token;
    free(sb->volumes);
    sb->volumes = osb_vol_rt(spec);
    sb->n_volumes = spec->n_volumes;
    if (osb_srvvault_prepare(srv, spec, e) < 0) {
        osb_lc_create_failed(op->s->id, "network", e->status, e->code, e->msg);
        return -1;
    }
    if (osb_network_attach(srv, op->s, spec, sb, e) < 0) {
        osb_lc_create_failed(op->s->id, "network", e->status, e->code, e->msg);
        return -1;
    }
    op->t_net = mono_us();
    struct osb_err err = {0};
    struct osb_rt *rt = rt_of(srv, op->s, err.msg, sizeof err.msg);
    if (!rt)
        err.code = OSB_E_INVALID;
    if (!rt || osb_rt_create(rt, sb, on_created, op, &err) < 0) {
        bool bad = err.code == OSB_E_INVALID || err.code == OSB_E_NOTFOUND;
        /* The native runtime's uid ranges: a capacity limit, not a fault. */
        const char *code = bad                           ? "SANDBOX::INVALID_PARAMETER"
                           : err.code == OSB_E_EXHAUSTED ? "SANDBOX::USERNS_EXHAUSTED"
                                                         : "SANDBOX::START_FAILED";
        osb_apierr(e, code, "%s", err.msg);
        osb_lc_create_failed(op->s->id, "runtime start", e->status, e->code, e->msg);
        return -1;
    }
    op->t_called = mono_us();
    return 0;
}

/* A failure before the create has a record. */
static void create_refused(osb_lc_done done, void *ud, const char *id, const char *phase,
                           const struct osb_apierr *e)
{
    osb_lc_create_failed(id, phase, e->status, e->code, e->msg);
    done(ud, NULL, e);
}

void osb_lc_create(struct osb_server *srv, struct osb_create_spec *spec, osb_lc_done done, void *ud)
{
    struct osb_apierr e;
    if (spec->network_policy && !osb_network_enabled(srv)) {
        osb_apierr(&e, "SANDBOX::INVALID_PARAMETER",
                   "field 'networkPolicy': this server's sandboxes have no network "
                   "([network] mode = \"none\")");
        create_refused(done, ud, spec->id, "network", &e);
        return;
    }
    /* Claims are created here, in the same loop turn as the record that
     * uses them is registered: no release can slip in between. */
    if (osb_vol_prepare(srv->cfg, spec, &e) < 0) {
        create_refused(done, ud, spec->id, "volumes", &e);
        return;
    }
    int64_t t0 = mono_us();
    struct osb_sbx *s = new_record(spec);
    if (osb_sbx_save(srv, s, "Pending", "Sandbox accepted; building it.", &e) < 0) {
        osb_sbx_free(s);
        create_refused(done, ud, spec->id, "store", &e);
        return;
    }
    osb_reg_add(srv->reg, s);
    struct osb_create_op *op = osb_xcalloc(1, sizeof *op);
    op->srv = srv;
    op->s = s;
    op->done = done;
    op->done_ud = ud;
    op->t_start = t0;
    op->t_stored = mono_us();
    s->op = op;
    if (start_runtime(srv, op, spec, &e) < 0) {
        op_fail(op, e.code, e.msg);
        return;
    }
    osb_lc_ttl_rearm(srv);
}

/* ------------------------------------------------------------- delete */

static void delete_creating(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req)
{
    struct osb_create_op *op = s->op;
    if (req) {
        op->waiters = osb_xrealloc(op->waiters, (op->nwaiters + 1) * sizeof *op->waiters);
        op->waiters[op->nwaiters++] = req;
    }
    if (op->cancelled)
        return;
    op->cancelled = true;
    osb_sbx_set_status(s, OSB_ST_STOPPING, "SANDBOX_DELETING", "Sandbox is being deleted.",
                       osb_now_us());
    osb_sbx_record(srv, s, "Stopping", "Delete requested while the sandbox was being created.");
    if (op->ping) {
        /* The runtime already reported back: tear the sandbox down now. */
        osb_ping_cancel(op->ping);
        op->ping = NULL;
        destroy_rt(rt_of(srv, s, NULL, 0), s->id);
        op_cancelled(op);
        return;
    }
    /* The runtime stops a create in progress and reports an error to
     * on_created(), which finishes the cancel (maybe from inside this call:
     * op and s must not be touched after it). */
    char id[sizeof s->id];
    memcpy(id, s->id, sizeof id);
    destroy_rt(rt_of(srv, s, NULL, 0), id);
}

void osb_lc_delete(struct osb_server *srv, struct osb_sbx *s, struct osb_http_req *req)
{
    if (s->op) {
        delete_creating(srv, s, req);
        return;
    }
    struct osb_err err = {0};
    int64_t t0 = mono_us();
    struct osb_rt *rt = rt_of(srv, s, err.msg, sizeof err.msg);
    if (!rt)
        osb_warn("delete sandbox %s: %s; only its record is removed", s->id, err.msg);
    else if (osb_rt_destroy(rt, s->id, &err) < 0) {
        osb_err_log("delete sandbox %s: %s", s->id, err.msg);
        if (req)
            osb_apierr_reply(req, "SANDBOX::DELETE_FAILED", "Failed to delete sandbox %s: %s",
                             s->id, err.msg);
        return;
    }
    forget(srv, s);
    osb_metrics_event(srv->metrics, OSB_M_DELETE);
    osb_metrics_delete(srv->metrics, (double)(mono_us() - t0) / 1e6);
    osb_lc_ttl_rearm(srv);
    if (req)
        osb_http_respond_empty(req, 204);
}

/* ------------------------------------------------------- pause/resume */

int osb_lc_pause(struct osb_server *srv, struct osb_sbx *s, struct osb_apierr *e)
{
    if (s->snapshotting)
        return osb_apierr(e, "SANDBOX::SNAPSHOT_IN_PROGRESS",
                          "Sandbox %s is being snapshotted; try again in a moment.", s->id);
    if (s->state != OSB_ST_RUNNING || s->op)
        return osb_apierr(e, "SANDBOX::NOT_RUNNING",
                          "Sandbox is not in a running state (sandbox %s is %s).", s->id,
                          osb_state_name(s->state));
    struct osb_err err = {0};
    struct osb_rt *rt = rt_of(srv, s, err.msg, sizeof err.msg);
    if (!rt || osb_rt_pause(rt, s->id, &err) < 0)
        return osb_apierr(e, "SANDBOX::PAUSE_FAILED", "Failed to pause sandbox %s: %s", s->id,
                          err.msg);
    osb_sbx_set_status(s, OSB_ST_PAUSED, "SANDBOX_PAUSED", "Sandbox is paused.", osb_now_us());
    osb_metrics_event(srv->metrics, OSB_M_PAUSE);
    return osb_sbx_save(srv, s, "Paused", "Sandbox paused (cgroup freezer).", e);
}

int osb_lc_resume(struct osb_server *srv, struct osb_sbx *s, struct osb_apierr *e)
{
    if (s->snapshotting)
        return osb_apierr(e, "SANDBOX::SNAPSHOT_IN_PROGRESS",
                          "Sandbox %s is being snapshotted; try again in a moment.", s->id);
    if (s->state != OSB_ST_PAUSED)
        return osb_apierr(e, "SANDBOX::NOT_PAUSED",
                          "Sandbox is not in a paused state (sandbox %s is %s).", s->id,
                          osb_state_name(s->state));
    struct osb_err err = {0};
    struct osb_rt *rt = rt_of(srv, s, err.msg, sizeof err.msg);
    if (!rt || osb_rt_resume(rt, s->id, &err) < 0)
        return osb_apierr(e, "SANDBOX::RESUME_FAILED", "Failed to resume sandbox %s: %s", s->id,
                          err.msg);
    osb_sbx_set_status(s, OSB_ST_RUNNING, "SANDBOX_RUNNING", "Sandbox is running.", osb_now_us());
    osb_metrics_event(srv->metrics, OSB_M_RESUME);
    return osb_sbx_save(srv, s, "Resumed", "Sandbox resumed.", e);
}

/* ---------------------------------------------------------- the end */

static void on_exit_cb(void *ud, const char *id, const struct osb_rt_end *end)
{
    struct osb_server *srv = ud;
    struct osb_sbx *s = osb_reg_get(srv->reg, id);
    if (!s)
        return; /* deleted */
    if (s->op) {
        if (!s->op->cancelled)
            op_ended(s->op, end);
        return;
    }
    if (s->state != OSB_ST_RUNNING && s->state != OSB_ST_PAUSED)
        return; /* already ended */
    struct osb_ending e;
    osb_ending_describe(s->spec, end, &e);
    end_sandbox(srv, s, &e, false);
}

/* ---------------------------------------------------------------- TTL */

static bool expiring(const struct osb_sbx *s)
{
    return s->expires_us && !(s->op && s->op->cancelled);
}

static void on_ttl(uv_timer_t *t)
{
    struct osb_server *srv = t->data;
    int64_t now = osb_now_us();
    size_t n = osb_reg_count(srv->reg), k = 0;
    char(*ids)[64] = osb_xcalloc(n ? n : 1, sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        if (expiring(s) && s->expires_us <= now)
            memcpy(ids[k++], s->id, sizeof ids[0]);
    }
    for (size_t i = 0; i < k; i++) {
        struct osb_sbx *s = osb_reg_get(srv->reg, ids[i]);
        if (!s)
            continue;
        osb_info("sandbox %s expired; deleting it", s->id);
        osb_metrics_event(srv->metrics, OSB_M_EXPIRE);
        osb_lc_delete(srv, s, NULL);
    }
    free(ids);
    osb_lc_ttl_rearm(srv);
}

void osb_lc_ttl_rearm(struct osb_server *srv)
{
    int64_t next = 0;
    size_t n = osb_reg_count(srv->reg);
    for (size_t i = 0; i < n; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        if (expiring(s) && (!next || s->expires_us < next))
            next = s->expires_us;
    }
    if (!next) {
        uv_timer_stop(&srv->ttl_timer);
        return;
    }
    int64_t delay_us = next - osb_now_us();
    uint64_t delay_ms = delay_us <= 0 ? 0 : (uint64_t)((delay_us + 999) / 1000);
    uv_timer_start(&srv->ttl_timer, on_ttl, delay_ms, 0);
}

/* ------------------------------------------------------------ recovery */

static void load_one(void *ud, struct osb_sbx *s)
{
    struct osb_server *srv = ud;
    osb_reg_add(srv->reg, s);
}

static void mark_failed(struct osb_server *srv, struct osb_sbx *s, const char *reason,
                        const char *msg)
{
    osb_warn("sandbox %s: %s", s->id, msg);
    osb_sbx_set_status(s, OSB_ST_FAILED, reason, msg, osb_now_us());
    osb_sbx_record(srv, s, "Failed", msg);
}

/* Its socket path and its output pipe's drain, as this process sees them.
 * A failure leaves the sandbox running (its output waits in the pipe). */
static void adopt(struct osb_rt *rt, struct osb_sbx *s)
{
    struct osb_err err = {0};
    if (osb_rt_adopt(rt, s->id, &s->handle, &err) < 0)
        osb_warn("adopt sandbox %s: %s", s->id, err.msg);
}

/* PID 1 exited while no server watched: how is unknown. */
static void end_lost(struct osb_server *srv, struct osb_sbx *s)
{
    struct osb_ending e = {.state = OSB_ST_FAILED, .reason = "SANDBOX_LOST"};
    snprintf(e.message, sizeof e.message,
             "The sandbox's init process exited while the server was down (its entrypoint "
             "ended or it was killed); how is unknown.");
    end_sandbox(srv, s, &e, false);
}

/* A record naming a backend this server has not opened: nothing can be
 * done to its sandbox here, so it is marked Failed, saying why; a server
 * with that backend still finds the sandbox known (not an orphan). */
static bool recover_unknown(struct osb_server *srv, struct osb_sbx *s, const char *why)
{
    if (s->state == OSB_ST_TERMINATED || s->state == OSB_ST_FAILED)
        return true;
    char msg[400];
    snprintf(msg, sizeof msg, "The sandbox cannot be recovered: %s.", why);
    mark_failed(srv, s, "RUNTIME_UNKNOWN", msg);
    return true;
}

/* Decide one record's fate after a restart; returns false when it is gone. */
static bool recover_one(struct osb_server *srv, struct osb_sbx *s)
{
    char why[300];
    struct osb_rt *rt = rt_of(srv, s, why, sizeof why);
    if (!rt)
        return recover_unknown(srv, s, why);
    switch (s->state) {
    case OSB_ST_RUNNING:
    case OSB_ST_PAUSED: {
        /* A report execd wrote while we were down is read by the watch. */
        struct osb_err err = {0};
        if (s->has_handle && osb_rt_alive(rt, s->id, &s->handle)) {
            adopt(rt, s);
            if (watch(srv, rt, s, &err) == 0)
                return true;
            osb_warn("watch sandbox %s: %s", s->id, err.msg);
        }
        end_lost(srv, s);
        return true;
    }
    case OSB_ST_PENDING:
        destroy_rt(rt, s->id);
        s->has_handle = false;
        mark_failed(srv, s, "PROVISIONING_INTERRUPTED",
                    "The server stopped while the sandbox was being created.");
        return true;
    case OSB_ST_STOPPING:
        destroy_rt(rt, s->id);
        forget(srv, s);
        return false;
    case OSB_ST_TERMINATED:
    case OSB_ST_FAILED:
    default: return true;
    }
}

int osb_lc_recover(struct osb_server *srv, struct osb_err *err)
{
    if (osb_store_load(srv->store, load_one, srv, err) < 0)
        return -1;
    size_t n = osb_reg_count(srv->reg);
    struct osb_sbx **all = osb_xcalloc(n + 1, sizeof *all);
    for (size_t i = 0; i < n; i++)
        all[i] = osb_reg_at(srv->reg, i);
    size_t adopted = 0;
    for (size_t i = 0; i < n; i++)
        if (recover_one(srv, all[i]) && all[i]->state != OSB_ST_FAILED)
            adopted++;
    free(all);
    n = osb_reg_count(srv->reg);
    const char **known = osb_xcalloc(n + 1, sizeof *known);
    for (size_t i = 0; i < n; i++)
        known[i] = osb_reg_at(srv->reg, i)->id;
    int rc = 0;
    for (size_t i = 0; i < srv->n_rts && rc == 0; i++)
        rc = osb_rt_cleanup_orphans(srv->rts[i], known, err);
    free(known);
    if (rc < 0)
        return osb_err_wrap(err, "clean up orphaned sandboxes");
    if (n)
        osb_info("recovered %zu sandboxes from the store (%zu live)", n, adopted);
    osb_lc_ttl_rearm(srv);
    return 0;
}

void osb_lc_init(struct osb_server *srv)
{
    uv_timer_init(srv->loop, &srv->ttl_timer);
    srv->ttl_timer.data = srv;
}

void osb_lc_close(struct osb_server *srv)
{
    if (!srv->ttl_timer.data)
        return; /* never initialised */
    uv_timer_stop(&srv->ttl_timer);
    uv_close((uv_handle_t *)&srv->ttl_timer, NULL);
}
