/* Admission control (admit.h). The queue is a doubly linked list of the
 * jobs' own slots; every waiter has the same wait, so deadlines grow from
 * head to tail and one timer on the head's deadline serves them all.
 * Admitting from the queue runs from a zero timer, never from inside the
 * call that freed room: a create that finishes inside its own start must
 * not start the next one on the same stack. */
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
    size_t creating; /* admitted, not yet over */
    int64_t max_sandboxes, max_creates, wait_ms;
    int64_t avg_create_ms; /* moving average, for Retry-After */
    uv_timer_t pump, deadline;
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

static bool has_room(const struct osb_admit *a)
{
    if (a->max_creates > 0 && (int64_t)a->creating >= a->max_creates)
        return false;
    return a->max_sandboxes <= 0 ||
           (int64_t)(live_records(a->srv) + a->creating) < a->max_sandboxes;
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

static void on_deadline(uv_timer_t *t);

static void arm_deadline(struct osb_admit *a)
{
    if (!a->head) {
        uv_timer_stop(&a->deadline);
        return;
    }
    int64_t left = a->head->deadline_ms - osb_mono_ms();
    uv_timer_start(&a->deadline, on_deadline, left > 0 ? (uint64_t)left : 0, 0);
}

static void admit_slot(struct osb_admit *a, struct osb_admit_slot *sl)
{
    sl->state = OSB_ADMIT_IN;
    sl->deadline_ms = osb_mono_ms(); /* from now on: when the create began */
    a->creating++;
    sl->go(sl, NULL);
}

static void refuse(struct osb_admit *a, struct osb_admit_slot *sl)
{
    struct osb_apierr e;
    if (a->max_creates > 0 && (int64_t)a->creating >= a->max_creates)
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
    while (a->head && a->head->deadline_ms <= now) {
        struct osb_admit_slot *sl = a->head;
        unlink_slot(a, sl);
        refuse(a, sl);
    }
    arm_deadline(a);
}

static void on_pump(uv_timer_t *t)
{
    struct osb_admit *a = t->data;
    bool moved = false;
    while (a->head && has_room(a)) {
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

void osb_admit(struct osb_server *srv, struct osb_admit_slot *sl, osb_admit_go go)
{
    struct osb_admit *a = adm(srv);
    sl->go = go;
    sl->prev = sl->next = NULL;
    if (!a) { /* shutting down: the create fails on its own */
        go(sl, NULL);
        return;
    }
    if (!a->head && has_room(a)) {
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
    osb_info("create queued: %zu waiting, %zu creating (max_sandboxes %lld, "
             "max_concurrent_creates %lld)",
             a->queued, a->creating, (long long)a->max_sandboxes, (long long)a->max_creates);
    if (a->head == sl)
        arm_deadline(a);
}

void osb_admit_leave(struct osb_server *srv, struct osb_admit_slot *sl)
{
    struct osb_admit *a = adm(srv);
    if (!a)
        return;
    if (sl->state == OSB_ADMIT_QUEUED) {
        bool was_head = a->head == sl;
        unlink_slot(a, sl);
        osb_info("queued create left the queue (client gone): %zu waiting", a->queued);
        if (was_head)
            arm_deadline(a);
        osb_admit_kick(srv); /* the next one may fit where this one did not */
        return;
    }
    if (sl->state != OSB_ADMIT_IN)
        return;
    sl->state = OSB_ADMIT_NONE;
    a->creating--;
    int64_t took = osb_mono_ms() - sl->deadline_ms;
    a->avg_create_ms = a->avg_create_ms ? (a->avg_create_ms * 7 + took) / 8 : took;
    osb_admit_kick(srv);
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

/* The default of max_concurrent_creates when the file does not set it:
 * see docs/configuration.md for the measurement behind it. */
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
    srv->admit = a;
}

static void on_closed(uv_handle_t *h)
{
    struct osb_admit *a = h->data;
    if (h == (uv_handle_t *)&a->deadline)
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
