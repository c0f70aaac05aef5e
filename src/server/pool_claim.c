/* Claims (pools.h osb_pool_claim): a create with extensions.poolRef waits
 * in its pool's FIFO queue until an idle member is free, at most
 * [server] admission_wait_seconds. Serving takes the member off the idle
 * list in the same loop turn (so no two claims get it), puts the
 * request's network policy on its slot, then hands execd the request's
 * env and entrypoint (POST /_osb/claim; execd/claim.h). A member whose
 * execd does not take it is destroyed and the claim goes back to the head
 * of the queue for the next one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "runtime/runtime.h"
#include "server/create.h"
#include "server/execd_call.h"
#include "server/network.h"
#include "server/pools.h"
#include "server/pools_int.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/timefmt.h"

/* How long execd gets to take a claim: a live one answers in well under a
 * millisecond; one that does not is treated as dead. */
#define CLAIM_TIMEOUT_MS 2000

struct pool_waiter {
    struct osb_server *srv;
    uint64_t pool_uid;
    char pool_name[64];
    struct osb_create_job *job;
    struct osb_create_spec *spec; /* the job's */
    uv_timer_t timer;             /* admission_wait_seconds */
    struct pool_waiter *next;
    char member[64]; /* while claiming: the member being handed over */
    bool claiming, expired;
};

static void waiter_closed(uv_handle_t *h)
{
    free(h->data);
}

/* The claim is over: answered (s or e), or silently (both NULL: its
 * client left). */
static void waiter_end(struct pool_waiter *w, struct osb_sbx *s, const struct osb_apierr *e)
{
    if (e)
        osb_lc_create_failed(w->spec->id, "pool", e->status, e->code, e->msg);
    osb_create_on_detach(w->job, NULL, NULL);
    osb_create_finish(w->job, s, e);
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, waiter_closed);
}

static void unqueue(struct pool *p, struct pool_waiter *w)
{
    struct pool_waiter *prev = NULL;
    for (struct pool_waiter *q = p->wq_head; q; prev = q, q = q->next) {
        if (q != w)
            continue;
        if (prev)
            prev->next = q->next;
        else
            p->wq_head = q->next;
        if (p->wq_tail == q)
            p->wq_tail = prev;
        p->n_waiting--;
        w->next = NULL;
        return;
    }
}

static void push_back(struct pool *p, struct pool_waiter *w)
{
    w->next = NULL;
    if (p->wq_tail)
        p->wq_tail->next = w;
    else
        p->wq_head = w;
    p->wq_tail = w;
    p->n_waiting++;
}

static void push_front(struct pool *p, struct pool_waiter *w)
{
    w->next = p->wq_head;
    p->wq_head = w;
    if (!p->wq_tail)
        p->wq_tail = w;
    p->n_waiting++;
}

static void exhausted(struct pool_waiter *w)
{
    struct osb_apierr e;
    osb_apierr(&e, "SANDBOX::POOL_EXHAUSTED",
               "Pool %s had no idle sandbox within %lld seconds ([server] "
               "admission_wait_seconds); try again later.",
               w->pool_name, (long long)w->srv->cfg->server.admission_wait_seconds);
    waiter_end(w, NULL, &e);
}

static void on_wait_over(uv_timer_t *t)
{
    struct pool_waiter *w = t->data;
    if (w->claiming) {
        w->expired = true; /* the hand-over in flight decides */
        return;
    }
    struct pool *p = osb_pools_find_uid(w->srv, w->pool_uid);
    if (p)
        unqueue(p, w);
    exhausted(w);
}

/* Its client left while it waited: out of the queue at once (so it does
 * not count towards the refill), nothing to answer. While a member is
 * being handed over, the hand-over's end sees it (claimed()). */
static void on_detach(void *ud)
{
    struct pool_waiter *w = ud;
    if (w->claiming)
        return;
    struct pool *p = osb_pools_find_uid(w->srv, w->pool_uid);
    if (p)
        unqueue(p, w);
    waiter_end(w, NULL, NULL);
}

/* --------------------------------------------------------- hand-over */

static bool is_keepalive(char *const *ep)
{
    return ep[0] && ep[1] && ep[2] && !ep[3] && strcmp(ep[0], "tail") == 0 &&
           strcmp(ep[1], "-f") == 0 && strcmp(ep[2], "/dev/null") == 0;
}

/* The SDKs' keep-alive default asks for a sandbox that stays up: the
 * member's own command (the template's, as a fresh create would run the
 * image's) goes on, with the template's end semantics. Any other
 * entrypoint replaces it, and its end is the sandbox's. */
static char *claim_body(const struct osb_create_spec *spec, const struct osb_sbx *s)
{
    json_t *env = json_object();
    for (size_t i = 0; spec->sb.env && spec->sb.env[i]; i++) {
        const char *kv = spec->sb.env[i], *eq = strchr(kv, '=');
        char *k = osb_xstrndup(kv, (size_t)(eq - kv));
        json_object_set_new(env, k, json_string(eq + 1));
        free(k);
    }
    json_t *b = json_pack("{s:o}", "env", env);
    if (is_keepalive(spec->sb.entrypoint)) {
        json_t *pm = json_object_get(s->spec, "poolMember");
        json_object_set_new(b, "keepRunning",
                            json_boolean(json_is_true(json_object_get(pm, "keepRunning"))));
    } else {
        json_t *ep = json_array();
        for (size_t i = 0; spec->sb.entrypoint[i]; i++)
            json_array_append_new(ep, json_string(spec->sb.entrypoint[i]));
        json_object_set_new(b, "entrypoint", ep);
        json_object_set_new(b, "keepRunning", json_false());
    }
    char *txt = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    return txt;
}

/* The record becomes the client's sandbox, as a fresh create makes it. */
static void rewrite_record(struct osb_server *srv, struct pool_waiter *w, struct osb_sbx *s)
{
    struct osb_create_spec *spec = w->spec;
    int64_t now = osb_now_us();
    /* The list is ordered by createdAt: re-inserted under the new one. */
    osb_reg_remove(srv->reg, s->id);
    s->created_us = now;
    s->expires_us = spec->timeout_s ? now + spec->timeout_s * 1000000 : 0;
    json_object_update(s->metadata, spec->metadata); /* the template's, under the request's */
    if (!is_keepalive(spec->sb.entrypoint)) {
        json_t *ep = json_array();
        for (size_t i = 0; spec->sb.entrypoint[i]; i++)
            json_array_append_new(ep, json_string(spec->sb.entrypoint[i]));
        json_object_set_new(s->spec, "entrypoint", ep);
    }
    if (spec->timeout_s)
        json_object_set_new(s->spec, "timeout", json_integer(spec->timeout_s));
    else
        json_object_del(s->spec, "timeout");
    json_object_del(s->spec, "poolMember");
    json_object_set_new(s->spec, "poolClaimed", json_string(w->pool_name));
    osb_sbx_set_status(s, OSB_ST_RUNNING, "SANDBOX_RUNNING", "Sandbox is running.", now);
    osb_reg_add(srv->reg, s);
}

static void claimed(struct pool_waiter *w, struct osb_sbx *s)
{
    struct osb_server *srv = w->srv;
    if (osb_create_detached(w->job)) {
        /* Its client left: nobody will ever know this sandbox. */
        osb_lc_delete(srv, s, NULL);
        waiter_end(w, NULL, NULL);
        return;
    }
    rewrite_record(srv, w, s);
    struct osb_apierr e;
    char msg[160];
    snprintf(msg, sizeof msg, "Claimed from pool %s.", w->pool_name);
    if (osb_sbx_save(srv, s, "Claimed", msg, &e) < 0) {
        osb_lc_delete(srv, s, NULL);
        waiter_end(w, NULL, &e);
        return;
    }
    osb_lc_ttl_rearm(srv);
    osb_debug("sandbox %s claimed from pool %s", s->id, w->pool_name);
    osb_metrics_job(srv->metrics, OSB_M_POOL_CLAIM, "member");
    waiter_end(w, s, NULL);
}

static void on_handed(void *ud, int status, const char *why)
{
    struct pool_waiter *w = ud;
    struct osb_server *srv = w->srv;
    struct osb_sbx *s = osb_reg_get(srv->reg, w->member);
    w->claiming = false;
    struct pool *p = osb_pools_find_uid(srv, w->pool_uid);
    if (status == 200 && s && s->state == OSB_ST_RUNNING) {
        claimed(w, s);
        if (p)
            osb_pools_pump(srv, p);
        return;
    }
    osb_warn("pool %s: member %s did not take the claim (%s); destroying it", w->pool_name,
             w->member, why ? why : "execd refused it");
    if (s)
        osb_lc_delete(srv, s, NULL);
    if (!p) {
        struct osb_apierr e;
        osb_apierr(&e, "SANDBOX::POOL_NOT_FOUND", "Pool %s was deleted.", w->pool_name);
        waiter_end(w, NULL, &e);
        return;
    }
    if (w->expired) {
        exhausted(w);
        return;
    }
    push_front(p, w);
    osb_pools_pump(srv, p);
}

/* Returns false when the member was unusable (destroyed; w not used). */
static bool hand_over(struct osb_server *srv, struct pool_waiter *w, const char *id)
{
    struct osb_sbx *s = osb_reg_get(srv->reg, id);
    struct osb_create_spec *spec = w->spec;
    /* Started at the lowest priority (pools.c); the claimant's sandbox
     * runs at the normal one, as a fresh sandbox does. */
    osb_rt_foreground(&s->handle);
    if (spec->network_policy) {
        /* Before the entrypoint runs, as a fresh sandbox has it from its
         * first instruction. */
        struct osb_err err = {0};
        if (osb_network_set_policy(srv, s, spec->network_policy, &err) < 0) {
            osb_warn("pool %s: member %s: set the network policy: %s; destroying it", w->pool_name,
                     id, err.msg);
            osb_lc_delete(srv, s, NULL);
            return false;
        }
    }
    snprintf(w->member, sizeof w->member, "%s", id);
    w->claiming = true;
    char *body = claim_body(spec, s);
    osb_execd_call(srv->loop, s->handle.sock_path, s->token, "POST", "/_osb/claim", body,
                   CLAIM_TIMEOUT_MS, on_handed, w);
    free(body);
    return true;
}

void osb_pool_serve(struct osb_server *srv, struct pool *p)
{
    while (p->wq_head) {
        struct pool_waiter *w = p->wq_head;
        if (osb_create_detached(w->job)) {
            unqueue(p, w);
            waiter_end(w, NULL, NULL);
            continue;
        }
        struct pool_member m;
        if (!osb_pools_take(srv, p, &m))
            return;
        unqueue(p, w);
        if (!hand_over(srv, w, m.id))
            push_front(p, w);
    }
}

void osb_pool_drop_waiters(struct osb_server *srv, struct pool *p, bool answer)
{
    (void)srv;
    while (p->wq_head) {
        struct pool_waiter *w = p->wq_head;
        unqueue(p, w);
        if (!answer) {
            /* Shutdown: the job stays as every create in flight does (its
             * request may still be closed after this); only the waiter goes. */
            osb_create_on_detach(w->job, NULL, NULL);
            uv_timer_stop(&w->timer);
            uv_close((uv_handle_t *)&w->timer, waiter_closed);
            continue;
        }
        struct osb_apierr e;
        osb_apierr(&e, "SANDBOX::POOL_NOT_FOUND", "Pool %s was deleted.", w->pool_name);
        waiter_end(w, NULL, &e);
    }
}

/* ------------------------------------------------------------ a claim */

/* What a claim cannot change: the image and the volumes are the
 * template's (a claim does no image work); resourceLimits are ignored, as
 * upstream's pooled create takes the pool's pod resources (the SDKs send
 * their defaults on every create). */
static int check_request(struct osb_server *srv, const struct pool *p,
                         const struct osb_create_spec *spec, struct osb_apierr *e)
{
    if (spec->snapshot_id)
        return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                          "field 'snapshotId' cannot be combined with extensions.poolRef");
    if (spec->image && strcmp(spec->image, p->image) != 0)
        return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                          "field 'image.uri' (%.200s) differs from the image of pool %s's "
                          "template (%.200s): a claimed sandbox runs the pool's image",
                          spec->image, p->name, p->image);
    if (spec->n_volumes)
        return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                          "field 'volumes' cannot be applied to a pooled sandbox (put them in "
                          "pool %s's template)",
                          p->name);
    if (spec->runtime_req) {
        const char *want =
            json_string_value(json_object_get(json_object_get(p->body, "extensions"), "runtime"));
        const char *has = want ? want : osb_rt_name(srv->rt);
        if (strcmp(spec->runtime_req, has) != 0)
            return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                              "field 'extensions.runtime' (%s) differs from pool %s's (%s)",
                              spec->runtime_req, p->name, has);
    }
    if (spec->network_policy && !osb_network_enabled(srv))
        return osb_apierr(e, "SANDBOX::INVALID_PARAMETER",
                          "field 'networkPolicy': this server's sandboxes have no network "
                          "([network] mode = \"none\")");
    return 0;
}

void osb_pool_claim(struct osb_server *srv, struct osb_create_spec *spec,
                    struct osb_create_job *job)
{
    struct osb_apierr e;
    struct pool *p = osb_pools_find(srv, spec->pool_ref);
    if (!p)
        osb_apierr(&e, "SANDBOX::POOL_NOT_FOUND", "Pool %s not found (extensions.poolRef).",
                   spec->pool_ref);
    if (!p || check_request(srv, p, spec, &e) < 0) {
        osb_lc_create_failed(spec->id, "request", e.status, e.code, e.msg);
        osb_create_finish(job, NULL, &e);
        return;
    }
    struct pool_waiter *w = osb_xcalloc(1, sizeof *w);
    w->srv = srv;
    w->pool_uid = p->uid;
    snprintf(w->pool_name, sizeof w->pool_name, "%s", p->name);
    w->job = job;
    w->spec = spec;
    uv_timer_init(srv->loop, &w->timer);
    w->timer.data = w;
    uv_timer_start(&w->timer, on_wait_over,
                   (uint64_t)srv->cfg->server.admission_wait_seconds * 1000, 0);
    osb_create_on_detach(job, on_detach, w);
    push_back(p, w);
    osb_pools_pump(srv, p);
}
