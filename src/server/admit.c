/* Admission control (admit.h). The queue is a doubly linked list of the
 * jobs' own slots: first the creates resumed after a pull (admitted
 * before everything else waiting; they need only a create slot), then the
 * new ones in arrival order. Every new one has the same wait, so their
 * deadlines grow towards the tail and one timer on the first one's
 * deadline serves them all. Admitting from the queue runs from a zero
 * timer, never from inside the call that freed room: a create that
 * finishes inside its own start must not start the next one on the same
 * stack. */
#include "server/admit.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "http/http.h"
#include "server/server.h"

struct osb_admit {
    struct osb_server *srv;
    struct osb_admit_slot *head, *tail;
    size_t queued;
    size_t places;   /* admitted creates not over (for max_sandboxes) */
    size_t creating; /* of those, the ones not waiting for a pull */
    int64_t max_sandboxes, max_creates, wait_ms;
    int64_t avg_create_ms; /* moving average, for Retry-After */
    uv_timer_t pump, deadline;
    int open_handles; /* freed when both timers' close callbacks ran */
};

static struct osb_admit *adm(const struct osb_server *srv)
{
    return srv->admit;
}

/* Records holding runtime state that no admitted create accounts for
 * (a record being created has an op, and its create counts it). */
static size_t live_records(const struct osb_server *srv)
{
    size_t n = 0;
    for (size_t i = 0, c = osb_reg_count(srv->reg); i < c; i++) {
        const struct osb_sbx *s = osb_reg_at(srv->reg, i);
        if (s->state <= OSB_ST_STOPPING && !s->op)
            n++;
    }
    return n;
}

static bool slot_free(const struct osb_admit *a)
{
    return a->max_creates <= 0 || (int64_t)a->creating < a->max_creates;
}

static bool has_room(const struct osb_admit *a, const struct osb_admit_slot *sl)
{
    if (!slot_free(a))
        return false;
    return sl->resume || a->max_sandboxes <= 0 ||
           (int64_t)(live_records(a->srv) + a->places) < a->max_sandboxes;
}

static void unlink_slot(struct osb_admit *a, struct osb_admit_slot *sl)
{
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        a->head = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    else
        a->tail = sl->prev;
    sl->prev = sl->next = NULL;
    sl->state = OSB_ADMIT_NONE;
    a->queued--;
}

/* The first new create waiting (resumed ones have no deadline). */
static struct osb_admit_slot *first_new(const struct osb_admit *a)
{
    struct osb_admit_slot *sl = a->head;
    while (sl && sl->resume)
        sl = sl->next;
    return sl;
}

static void on_deadline(uv_timer_t *t);

static void arm_deadline(struct osb_admit *a)
{
    struct osb_admit_slot *sl = first_new(a);
    if (!sl) {
        uv_timer_stop(&a->deadline);
        return;
    }
    int64_t left = sl->deadline_ms - osb_mono_ms();
    uv_timer_start(&a->deadline, on_deadline, left > 0 ? (uint64_t)left : 0, 0);
}

static void admit_slot(struct osb_admit *a, struct osb_admit_slot *sl)
{
    sl->state = OSB_ADMIT_IN;
    if (!sl->place) {
        sl->place = true;
        a->places++;
        sl->deadline_ms = osb_mono_ms(); /* from now on: when the create began */
    }
    sl->slot = true;
    sl->resume = false;
    a->creating++;
    sl->go(sl, NULL);
}

static void refuse(struct osb_admit *a, struct osb_admit_slot *sl)
{
    struct osb_apierr e;
    if (!slot_free(a))
        osb_apierr(&e, "SANDBOX::CAPACITY",
                   "The server is at capacity: %zu creates in progress "
                   "([server] max_concurrent_creates = %lld) and none finished within "
                   "admission_wait_seconds = %lld; retry later.",
                   a->creating, (long long)a->max_creates, (long long)(a->wait_ms / 1000));
    else
        osb_apierr(&e, "SANDBOX::CAPACITY",
                   "The server is at capacity: %lld sandboxes ([server] max_sandboxes) and "
                   "none ended within admission_wait_seconds = %lld; delete one or retry "
                   "later.",
                   (long long)a->max_sandboxes, (long long)(a->wait_ms / 1000));
    sl->state = OSB_ADMIT_NONE;
    sl->go(sl, &e);
}

static void on_deadline(uv_timer_t *t)
{
    struct osb_admit *a = t->data;
    int64_t now = osb_mono_ms();
    struct osb_admit_slot *sl;
    while ((sl = first_new(a)) && sl->deadline_ms <= now) {
        unlink_slot(a, sl);
        refuse(a, sl);
    }
    arm_deadline(a);
}

static void on_pump(uv_timer_t *t)
{
    struct osb_admit *a = t->data;
    bool moved = false;
    while (a->head && has_room(a, a->head)) {
        struct osb_admit_slot *sl = a->head;
        unlink_slot(a, sl);
        moved = true;
        admit_slot(a, sl);
    }
    if (moved)
        arm_deadline(a);
}

void osb_admit_kick(struct osb_server *srv)
{
    struct osb_admit *a = adm(srv);
    if (a && a->head && !uv_is_active((uv_handle_t *)&a->pump))
        uv_timer_start(&a->pump, on_pump, 0, 0);
}

static void log_queued(const struct osb_admit *a)
{
    osb_info("create queued: %zu waiting, %zu creating (max_sandboxes %lld, "
             "max_concurrent_creates %lld)",
             a->queued, a->creating, (long long)a->max_sandboxes, (long long)a->max_creates);
}

void osb_admit(struct osb_server *srv, struct osb_admit_slot *sl, osb_admit_go go)
{
    struct osb_admit *a = adm(srv);
    sl->go = go;
    sl->prev = sl->next = NULL;
    sl->place = sl->slot = sl->resume = false;
    if (!a) { /* shutting down: the create fails on its own */
        go(sl, NULL);
        return;
    }
    if (!a->head && has_room(a, sl)) {
        admit_slot(a, sl);
        return;
    }
    if (a->wait_ms <= 0) {
        refuse(a, sl);
        return;
    }
    sl->state = OSB_ADMIT_QUEUED;
    sl->deadline_ms = osb_mono_ms() + a->wait_ms;
    sl->prev = a->tail;
    if (a->tail)
        a->tail->next = sl;
    else
        a->head = sl;
    a->tail = sl;
    a->queued++;
    log_queued(a);
    if (first_new(a) == sl)
        arm_deadline(a);
}

static void give_slot(struct osb_admit *a, struct osb_admit_slot *sl)
{
    if (sl->slot) {
        sl->slot = false;
        a->creating--;
    }
}

void osb_admit_suspend(struct osb_server *srv, struct osb_admit_slot *sl)
{
    struct osb_admit *a = adm(srv);
    if (!a || sl->state != OSB_ADMIT_IN)
        return;
    give_slot(a, sl);
    osb_admit_kick(srv);
}

void osb_admit_resume(struct osb_server *srv, struct osb_admit_slot *sl, osb_admit_go go)
{
    struct osb_admit *a = adm(srv);
    sl->go = go;
    if (!a || sl->state != OSB_ADMIT_IN || sl->slot) {
        go(sl, NULL);
        return;
    }
    sl->resume = true;
    if ((!a->head || !a->head->resume) && slot_free(a)) {
        admit_slot(a, sl);
        return;
    }
    /* after the other resumed ones, before every new one */
    struct osb_admit_slot *after = NULL;
    for (struct osb_admit_slot *p = a->head; p && p->resume; p = p->next)
        after = p;
    sl->state = OSB_ADMIT_QUEUED;
    sl->prev = after;
    sl->next = after ? after->next : a->head;
    if (sl->next)
        sl->next->prev = sl;
    else
        a->tail = sl;
    if (after)
        after->next = sl;
    else
        a->head = sl;
    a->queued++;
    log_queued(a);
}

void osb_admit_leave(struct osb_server *srv, struct osb_admit_slot *sl)
{
    struct osb_admit *a = adm(srv);
    if (!a)
        return;
    if (sl->state == OSB_ADMIT_QUEUED) {
        bool was_first = first_new(a) == sl;
        unlink_slot(a, sl);
        osb_info("queued create left the queue (client gone): %zu waiting", a->queued);
        if (was_first)
            arm_deadline(a);
    }
    sl->state = OSB_ADMIT_NONE;
    give_slot(a, sl);
    if (sl->place) {
        sl->place = false;
        a->places--;
        int64_t took = osb_mono_ms() - sl->deadline_ms;
        a->avg_create_ms = a->avg_create_ms ? (a->avg_create_ms * 7 + took) / 8 : took;
    }
    osb_admit_kick(srv); /* the next one may fit where this one did not */
}

size_t osb_admit_queued(const struct osb_server *srv)
{
    return adm(srv) ? adm(srv)->queued : 0;
}

/* The seconds the queue ahead of a new arrival needs at the recent rate:
 * a capacity bound by max_sandboxes frees only when sandboxes end, so it
 * cannot be predicted; the create rate is the best guess there is. */
static long retry_after(const struct osb_admit *a)
{
    int64_t par = a->max_creates > 0 ? a->max_creates : 1;
    int64_t ms = ((int64_t)a->queued + 1) * (a->avg_create_ms ? a->avg_create_ms : 100) / par;
    long s = (long)((ms + 999) / 1000);
    return s < 1 ? 1 : s;
}

void osb_admit_respond(struct osb_server *srv, struct osb_http_req *req, const struct osb_apierr *e)
{
    if (e->status == 429 && adm(srv)) {
        char v[24];
        snprintf(v, sizeof v, "%ld", retry_after(adm(srv)));
        osb_http_add_header(req, "Retry-After", v);
    }
    osb_apierr_respond(req, e);
}

void osb_admit_init(struct osb_server *srv)
{
    struct osb_admit *a = osb_xcalloc(1, sizeof *a);
    a->srv = srv;
    a->max_sandboxes = srv->cfg->server.max_sandboxes;
    a->max_creates = srv->cfg->server.max_concurrent_creates;
    a->wait_ms = srv->cfg->server.admission_wait_seconds * 1000;
    uv_timer_init(srv->loop, &a->pump);
    uv_timer_init(srv->loop, &a->deadline);
    a->pump.data = a->deadline.data = a;
    a->open_handles = 2;
    srv->admit = a;
}

static void on_closed(uv_handle_t *h)
{
    /* libuv runs close callbacks in no promised order: the last one frees. */
    struct osb_admit *a = h->data;
    if (--a->open_handles == 0)
        free(a);
}

void osb_admit_close(struct osb_server *srv)
{
    struct osb_admit *a = adm(srv);
    if (!a)
        return;
    while (a->head) {
        struct osb_admit_slot *sl = a->head;
        unlink_slot(a, sl);
        refuse(a, sl);
    }
    srv->admit = NULL;
    uv_close((uv_handle_t *)&a->pump, on_closed);
    uv_close((uv_handle_t *)&a->deadline, on_closed);
}
