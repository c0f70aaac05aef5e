/* Pools: their records, their members and the refill (pools.h). Claims
 * and their queue are in pool_claim.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "net/policy.h"
#include "server/create.h"
#include "server/network.h"
#include "server/pools.h"
#include "server/pools_int.h"
#include "server/server.h"
#include "server/timefmt.h"

/* Refill creates in flight per pool: enough to keep up with claims, few
 * enough that a fill does not starve the server's other creates. */
#define MAX_STARTING 16
/* After a refill fails (a bad image, the server at capacity): wait before
 * the next one instead of spinning, 1 s doubling to 32 s while they keep
 * failing. */
#define RETRY_MS 1000
#define RETRY_MAX_SHIFT 5
/* A refill starts this long after what called for it: starting a member
 * holds the loop for a few ms (record, network, the runtime's clone), and a
 * client that just claimed one looks its endpoint up and pings execd next;
 * those go first. */
#define REFILL_DEFER_MS 5

#define BAD "SANDBOX::INVALID_PARAMETER"

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

struct pool *osb_pools_find(struct osb_server *srv, const char *name)
{
    for (struct pool *p = srv->pools ? srv->pools->head : NULL; p; p = p->next)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

struct pool *osb_pools_find_uid(struct osb_server *srv, uint64_t uid)
{
    for (struct pool *p = srv->pools ? srv->pools->head : NULL; p; p = p->next)
        if (p->uid == uid)
            return p;
    return NULL;
}

/* ------------------------------------------------------------ members */

static bool member_ok(const struct osb_sbx *s)
{
    return s && s->state == OSB_ST_RUNNING && !s->op && s->has_handle;
}

static void idle_push(struct pool *p, const char *id, int64_t rev)
{
    if (p->n_idle == p->cap_idle) {
        p->cap_idle = p->cap_idle ? 2 * p->cap_idle : 8;
        p->idle = osb_xrealloc(p->idle, p->cap_idle * sizeof *p->idle);
    }
    struct pool_member *m = &p->idle[p->n_idle++];
    snprintf(m->id, sizeof m->id, "%s", id);
    m->rev = rev;
}

static void idle_remove(struct pool *p, size_t i)
{
    memmove(&p->idle[i], &p->idle[i + 1], (p->n_idle - i - 1) * sizeof *p->idle);
    p->n_idle--;
}

/* Destroys the sandbox of a member (nothing when it is already gone). */
static void release(struct osb_server *srv, const char *id)
{
    struct osb_sbx *s = osb_reg_get(srv->reg, id);
    if (s)
        osb_lc_delete(srv, s, NULL);
}

bool osb_pools_take(struct osb_server *srv, struct pool *p, struct pool_member *out)
{
    for (size_t i = 0; i < p->n_idle; i++) {
        if (p->idle[i].rev != p->revision)
            continue;
        *out = p->idle[i];
        idle_remove(p, i);
        if (member_ok(osb_reg_get(srv->reg, out->id)))
            return true;
        release(srv, out->id); /* ended while idle */
        i--;
    }
    return false;
}

/* Idle member i leaves the list (the next one takes its index) and is
 * destroyed. */
static void release_idle_at(struct osb_server *srv, struct pool *p, size_t i)
{
    char id[64];
    memcpy(id, p->idle[i].id, sizeof id);
    idle_remove(p, i);
    release(srv, id);
}

/* Idle members whose sandbox ended meanwhile are destroyed. */
static void purge(struct osb_server *srv, struct pool *p)
{
    for (size_t i = 0; i < p->n_idle;) {
        if (member_ok(osb_reg_get(srv->reg, p->idle[i].id))) {
            i++;
            continue;
        }
        release_idle_at(srv, p, i);
    }
}

/* Releases up to n idle members, of an old revision (old) or the current. */
static void release_idle(struct osb_server *srv, struct pool *p, int64_t n, bool old)
{
    for (size_t i = 0; i < p->n_idle && n > 0;) {
        if ((p->idle[i].rev != p->revision) != old) {
            i++;
            continue;
        }
        release_idle_at(srv, p, i);
        n--;
    }
}

/* ------------------------------------------------------------- refill */

struct refill {
    struct osb_server *srv;
    uint64_t uid;
};

static void on_timer(uv_timer_t *t)
{
    struct pool *p = t->data;
    int64_t now = osb_mono_ms();
    if (now < p->backoff_until_ms) {
        uv_timer_start(t, on_timer, (uint64_t)(p->backoff_until_ms - now), 0);
        return;
    }
    p->refill_due = true;
    osb_pools_pump(p->srv, p);
}

static void refill_soon(struct pool *p)
{
    if (!uv_is_active((uv_handle_t *)&p->timer))
        uv_timer_start(&p->timer, on_timer, REFILL_DEFER_MS, 0);
}

static void backoff(struct pool *p, const char *why)
{
    snprintf(p->last_error, sizeof p->last_error, "%s", why);
    uint64_t ms = (uint64_t)RETRY_MS
                  << (p->failures < RETRY_MAX_SHIFT ? p->failures : RETRY_MAX_SHIFT);
    p->failures++;
    p->backoff_until_ms = osb_mono_ms() + (int64_t)ms;
    uv_timer_start(&p->timer, on_timer, ms, 0);
}

static void on_member(void *ud, struct osb_sbx *s, const struct osb_apierr *e)
{
    struct refill *r = ud;
    struct osb_server *srv = r->srv;
    struct pool *p = osb_pools_find_uid(srv, r->uid);
    free(r);
    if (!p) { /* the pool was deleted meanwhile */
        if (s)
            osb_lc_delete(srv, s, NULL);
        return;
    }
    p->starting--;
    if (e) {
        osb_warn("pool %s: a refill failed: %s", p->name, e->msg);
        backoff(p, e->msg);
    } else if (s->state != OSB_ST_RUNNING) {
        osb_warn("pool %s: member %s ended while starting: %s", p->name, s->id,
                 s->message ? s->message : "");
        backoff(p, s->message ? s->message : "a member ended while starting");
        osb_lc_delete(srv, s, NULL);
    } else {
        json_int_t rev = 0;
        json_t *pm = json_object_get(s->spec, "poolMember");
        rev = json_integer_value(json_object_get(pm, "revision"));
        p->last_error[0] = '\0';
        p->failures = 0;
        idle_push(p, s->id, rev);
    }
    osb_pools_pump(srv, p);
}

/* Returns false when the refill cannot start (the pool backs off). */
static bool start_member(struct osb_server *srv, struct pool *p)
{
    struct osb_create_spec spec;
    struct osb_apierr e;
    if (osb_spec_parse_create(p->body, &srv->limits, &spec, &e) < 0) {
        backoff(p, e.msg); /* the limits changed since the template was accepted */
        return false;
    }
    spec.pool_member = osb_xstrdup(p->name);
    spec.pool_rev = p->revision;
    struct refill *r = osb_xcalloc(1, sizeof *r);
    r->srv = srv;
    r->uid = p->uid;
    p->starting++;
    (void)osb_create_start(srv, &spec, on_member, r);
    return true;
}

/* The members the pool aims at: bufferMin idle plus one per waiting
 * claim, at least poolMin, at most poolMax. During a roll-over (members
 * of an old revision idle) at most a quarter of the target (at least 1)
 * is replaced at a time, as Kubernetes' maxUnavailable. */
static void refill(struct osb_server *srv, struct pool *p)
{
    int64_t cur = 0, old = 0;
    for (size_t i = 0; i < p->n_idle; i++)
        if (p->idle[i].rev == p->revision)
            cur++;
        else
            old++;
    int64_t target =
        min64(p->cap.pool_max, max64(p->cap.pool_min, p->cap.buffer_min + (int64_t)p->n_waiting));
    int64_t k = max64(1, target / 4), members = cur + p->starting;
    /* No room under poolMax for the replacements a roll-over may have in
     * flight (k): old members make it, before they are replaced. */
    if (old > 0 && members < target && osb_mono_ms() >= p->backoff_until_ms) {
        int64_t want = min64(k - p->starting, target - members);
        int64_t room = p->cap.pool_max - (members + old);
        int64_t n = min64(old, want - room);
        if (n > 0) {
            release_idle(srv, p, n, true);
            old -= n;
        }
    }
    /* (A create that fails at once sets the backoff inside the loop.) */
    while (osb_mono_ms() >= p->backoff_until_ms && members < target && p->starting < MAX_STARTING &&
           members + old < p->cap.pool_max && (old == 0 || p->starting < k)) {
        if (!start_member(srv, p))
            break;
        members++;
    }
    /* Replacements ready: the old ones go. */
    if (old > 0 && cur + old > target)
        release_idle(srv, p, min64(old, cur + old - target), true);
    /* The capacity was lowered. */
    int64_t keep = min64(p->cap.pool_max, max64(p->cap.buffer_max, target));
    if (cur > keep)
        release_idle(srv, p, cur - keep, false);
}

void osb_pools_pump(struct osb_server *srv, struct pool *p)
{
    if (p->pumping) {
        p->repump = true;
        return;
    }
    p->pumping = true;
    do {
        p->repump = false;
        purge(srv, p);
        osb_pool_serve(srv, p);
        if (p->refill_due) {
            p->refill_due = false;
            refill(srv, p);
        } else {
            refill_soon(p);
        }
    } while (p->repump);
    p->pumping = false;
}

void osb_pool_member_prepare(struct osb_server *srv, struct osb_create_spec *spec)
{
    struct osb_sandbox_spec *sb = &spec->sb;
    spec->pool_keep_running = sb->keep_running;
    sb->keep_running = false;
    sb->background = true; /* until claimed (pool_claim.c hand_over) */
    size_t n = 0;
    while (sb->env && sb->env[n])
        n++;
    sb->env = osb_xrealloc(sb->env, (n + 2) * sizeof *sb->env);
    sb->env[n] = osb_xstrdup("OSB_EXECD_DEFER_ENTRYPOINT=1");
    sb->env[n + 1] = NULL;
    if (spec->network_policy || !osb_network_enabled(srv))
        return;
    json_t *allow = json_pack("{s:s}", "defaultAction", "allow");
    struct osb_policy *pol = osb_xcalloc(1, sizeof *pol);
    struct osb_err err = {0};
    if (osb_policy_parse(allow, pol, &err) == 0)
        spec->network_policy = pol;
    else
        free(pol);
    json_decref(allow);
}

/* ------------------------------------------------------------ records */

static json_t *pool_record(const struct pool *p)
{
    return json_pack("{s:s,s:O,s:o,s:I,s:I}", "name", p->name, "template", p->given, "capacitySpec",
                     osb_pool_capacity_json(&p->cap), "revision", (json_int_t)p->revision,
                     "createdUs", (json_int_t)p->created_us);
}

static int save(struct osb_server *srv, const struct pool *p, struct osb_apierr *e)
{
    struct osb_err err = {0};
    json_t *r = pool_record(p);
    int rc = osb_store_pool_put(srv->store, p->name, r, &err);
    json_decref(r);
    if (rc < 0) {
        osb_err_log("pool %s: store: %s", p->name, err.msg);
        return osb_apierr(e, "SANDBOX::STORE_FAILED", "Failed to store pool %s: %s", p->name,
                          err.msg);
    }
    return 0;
}

static size_t allocated(struct osb_server *srv, const struct pool *p)
{
    size_t n = 0;
    for (size_t i = 0, c = osb_reg_count(srv->reg); i < c; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        const char *from = json_string_value(json_object_get(s->spec, "poolClaimed"));
        if (from && strcmp(from, p->name) == 0 &&
            (s->state == OSB_ST_RUNNING || s->state == OSB_ST_PAUSED))
            n++;
    }
    return n;
}

/* PoolInfo as upstream's server answers it, plus the template. */
static json_t *pool_json(struct osb_server *srv, struct pool *p)
{
    osb_pools_pump(srv, p); /* members that ended are not counted */
    size_t avail = 0, alloc = allocated(srv, p);
    for (size_t i = 0; i < p->n_idle; i++)
        avail += p->idle[i].rev == p->revision;
    char created[OSB_TIMEFMT_LEN], rev[24];
    osb_timefmt_us(p->created_us, created);
    snprintf(rev, sizeof rev, "%lld", (long long)p->revision);
    json_t *st = json_pack(
        "{s:I,s:I,s:I,s:s,s:I,s:I}", "total", (json_int_t)(p->n_idle + (size_t)p->starting + alloc),
        "allocated", (json_int_t)alloc, "available", (json_int_t)avail, "revision", rev, "starting",
        (json_int_t)p->starting, "waiting", (json_int_t)p->n_waiting);
    if (p->last_error[0])
        json_object_set_new(st, "lastError", json_string(p->last_error));
    return json_pack("{s:s,s:O,s:o,s:o,s:s}", "name", p->name, "template", p->given, "capacitySpec",
                     osb_pool_capacity_json(&p->cap), "status", st, "createdAt", created);
}

/* ------------------------------------------------------ pool lifetime */

static struct pool *pool_new(struct osb_server *srv, const char *name)
{
    struct pool *p = osb_xcalloc(1, sizeof *p);
    p->uid = ++srv->pools->next_uid;
    p->srv = srv;
    snprintf(p->name, sizeof p->name, "%s", name);
    uv_timer_init(srv->loop, &p->timer);
    p->timer.data = p;
    p->next = srv->pools->head;
    srv->pools->head = p;
    return p;
}

static void set_template(struct pool *p, json_t *given, json_t *body)
{
    json_decref(p->given);
    json_decref(p->body);
    p->given = json_incref(given);
    p->body = body;
    const char *img = json_string_value(json_object_get(json_object_get(body, "image"), "uri"));
    snprintf(p->image, sizeof p->image, "%s", img ? img : "");
}

static void pool_closed(uv_handle_t *h)
{
    struct pool *p = h->data;
    json_decref(p->given);
    json_decref(p->body);
    free(p->idle);
    free(p);
}

static void unlink_pool(struct osb_server *srv, struct pool *p)
{
    for (struct pool **pp = &srv->pools->head; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    uv_close((uv_handle_t *)&p->timer, pool_closed);
}

/* name, template and capacitySpec of a POST or PUT body, checked. */
static int parse_body(struct osb_server *srv, json_t *body, bool need_template, json_t **tbody,
                      struct osb_pool_capacity *cap, struct osb_apierr *e)
{
    *tbody = NULL;
    if (!json_is_object(body))
        return osb_apierr(e, BAD,
                          "request body must be a JSON object {name, template, capacitySpec}");
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        if (strcmp(k, "name") && strcmp(k, "template") && strcmp(k, "capacitySpec"))
            return osb_apierr(e, BAD,
                              "field '%s' is not known (a pool has name, template, "
                              "capacitySpec)",
                              k);
    }
    if (osb_pool_capacity_parse(json_object_get(body, "capacitySpec"), cap, e) < 0)
        return -1;
    json_t *t = json_object_get(body, "template");
    if (!t && !need_template)
        return 0;
    *tbody = osb_pool_template_body(t, &srv->limits, e);
    return *tbody ? 0 : -1;
}

int osb_pools_create(struct osb_server *srv, json_t *body, json_t **out, struct osb_apierr *e)
{
    json_t *n = json_is_object(body) ? json_object_get(body, "name") : NULL;
    if (json_is_object(body) && !json_is_string(n))
        return osb_apierr(e, BAD, "field 'name' is required (a string)");
    json_t *tbody;
    struct osb_pool_capacity cap;
    if (parse_body(srv, body, true, &tbody, &cap, e) < 0 ||
        osb_pool_name_check(json_string_value(n), e) < 0) {
        json_decref(tbody);
        return -1;
    }
    const char *name = json_string_value(n);
    if (osb_pools_find(srv, name)) {
        json_decref(tbody);
        return osb_apierr(e, "POOL::ALREADY_EXISTS", "Pool %s already exists.", name);
    }
    struct pool *p = pool_new(srv, name);
    set_template(p, json_object_get(body, "template"), tbody);
    p->cap = cap;
    p->revision = 1;
    p->created_us = osb_now_us();
    if (save(srv, p, e) < 0) {
        unlink_pool(srv, p);
        return -1;
    }
    osb_info("pool %s created (bufferMin %lld, poolMax %lld)", name, (long long)cap.buffer_min,
             (long long)cap.pool_max);
    osb_pools_pump(srv, p);
    *out = pool_json(srv, p);
    return 0;
}

static struct pool *find_or_404(struct osb_server *srv, const char *name, struct osb_apierr *e)
{
    struct pool *p = osb_pools_find(srv, name);
    if (!p)
        osb_apierr(e, "POOL::NOT_FOUND", "Pool %s not found.", name);
    return p;
}

int osb_pools_update(struct osb_server *srv, const char *name, json_t *body, json_t **out,
                     struct osb_apierr *e)
{
    struct pool *p = find_or_404(srv, name, e);
    if (!p)
        return -1;
    json_t *tbody, *n = json_is_object(body) ? json_object_get(body, "name") : NULL;
    struct osb_pool_capacity cap;
    if (parse_body(srv, body, false, &tbody, &cap, e) < 0)
        return -1;
    if (n && (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)) {
        json_decref(tbody);
        return osb_apierr(e, BAD, "field 'name' must be the pool's own name (%s) or absent", name);
    }
    bool changed = tbody && !json_equal(tbody, p->body);
    json_t *old_given = json_incref(p->given), *old_body = json_incref(p->body);
    struct osb_pool_capacity old_cap = p->cap;
    if (tbody)
        set_template(p, json_object_get(body, "template"), tbody);
    p->cap = cap;
    p->revision += changed;
    int rc = save(srv, p, e);
    if (rc < 0) {
        set_template(p, old_given, old_body); /* takes old_body */
        p->cap = old_cap;
        p->revision -= changed;
    } else {
        json_decref(old_body);
        if (changed)
            osb_info("pool %s: template changed, revision %lld; members roll over", name,
                     (long long)p->revision);
    }
    json_decref(old_given);
    if (rc < 0)
        return -1;
    osb_pools_pump(srv, p);
    *out = pool_json(srv, p);
    return 0;
}

int osb_pools_get(struct osb_server *srv, const char *name, json_t **out, struct osb_apierr *e)
{
    struct pool *p = find_or_404(srv, name, e);
    if (!p)
        return -1;
    *out = pool_json(srv, p);
    return 0;
}

json_t *osb_pools_list(struct osb_server *srv)
{
    json_t *items = json_array();
    for (struct pool *p = srv->pools->head; p; p = p->next)
        json_array_append_new(items, pool_json(srv, p));
    return json_pack("{s:o}", "items", items);
}

int osb_pools_delete(struct osb_server *srv, const char *name, struct osb_apierr *e)
{
    struct pool *p = find_or_404(srv, name, e);
    if (!p)
        return -1;
    struct osb_err err = {0};
    if (osb_store_pool_delete(srv->store, name, &err) < 0)
        return osb_apierr(e, "SANDBOX::STORE_FAILED", "Failed to delete pool %s: %s", name,
                          err.msg);
    osb_info("pool %s deleted; releasing %zu idle members", name, p->n_idle);
    /* Unlinked first: what its releases and answers trigger finds no pool. */
    unlink_pool(srv, p);
    for (size_t i = 0; i < p->n_idle; i++)
        release(srv, p->idle[i].id);
    p->n_idle = 0;
    osb_pool_drop_waiters(srv, p, true);
    return 0;
}

/* ------------------------------------------------------- open / close */

static void load_one(void *ud, json_t *r)
{
    struct osb_server *srv = ud;
    const char *name = json_string_value(json_object_get(r, "name"));
    json_t *given = json_object_get(r, "template");
    struct osb_apierr e;
    struct osb_pool_capacity cap;
    json_t *tbody = name ? osb_pool_template_body(given, &srv->limits, &e) : NULL;
    if (!tbody || osb_pool_capacity_parse(json_object_get(r, "capacitySpec"), &cap, &e) < 0) {
        osb_warn("pool %s: stored record no longer valid (%s); it is ignored", name ? name : "?",
                 tbody ? e.msg : "template");
        json_decref(tbody);
        return;
    }
    struct pool *p = pool_new(srv, name);
    set_template(p, given, tbody);
    p->cap = cap;
    p->revision = json_integer_value(json_object_get(r, "revision"));
    p->created_us = json_integer_value(json_object_get(r, "createdUs"));
}

/* Every member record: re-adopted into its pool, or destroyed. */
static void adopt_members(struct osb_server *srv)
{
    size_t n = osb_reg_count(srv->reg), k = 0;
    char(*ids)[64] = osb_xcalloc(n ? n : 1, sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        struct osb_sbx *s = osb_reg_at(srv->reg, i);
        if (osb_sbx_pool_member(s))
            memcpy(ids[k++], s->id, sizeof ids[0]);
    }
    size_t adopted = 0;
    for (size_t i = 0; i < k; i++) {
        struct osb_sbx *s = osb_reg_get(srv->reg, ids[i]);
        json_t *pm = json_object_get(s->spec, "poolMember");
        const char *name = json_string_value(json_object_get(pm, "name"));
        struct pool *p = name ? osb_pools_find(srv, name) : NULL;
        if (p && member_ok(s)) {
            idle_push(p, s->id, json_integer_value(json_object_get(pm, "revision")));
            adopted++;
        } else {
            osb_info("sandbox %s: member of %s pool %s, %s; destroying it", s->id,
                     p ? "the" : "no longer existing", name ? name : "?", osb_state_name(s->state));
            osb_lc_delete(srv, s, NULL);
        }
    }
    free(ids);
    if (k)
        osb_info("pools: %zu idle members re-adopted, %zu destroyed", adopted, k - adopted);
}

int osb_pools_open(struct osb_server *srv, struct osb_err *err)
{
    srv->pools = osb_xcalloc(1, sizeof *srv->pools);
    srv->pool_claim = osb_pool_claim;
    srv->pool_member_prepare = osb_pool_member_prepare;
    if (osb_store_pool_load(srv->store, load_one, srv, err) < 0)
        return osb_err_wrap(err, "load pools");
    adopt_members(srv);
    for (struct pool *p = srv->pools->head; p; p = p->next)
        osb_pools_pump(srv, p);
    return 0;
}

void osb_pools_close(struct osb_server *srv)
{
    if (!srv->pools)
        return;
    while (srv->pools->head) {
        struct pool *p = srv->pools->head;
        unlink_pool(srv, p);
        osb_pool_drop_waiters(srv, p, false);
    }
    free(srv->pools);
    srv->pools = NULL;
}
