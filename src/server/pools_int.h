/* What pools.c (state, refill, routes) and pool_claim.c (claims and
 * their queue) share. Not for other modules: they use pools.h. */
#ifndef OSB_SERVER_POOLS_INT_H
#define OSB_SERVER_POOLS_INT_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "server/pool_spec.h"

struct osb_server;
struct pool_waiter;

struct pool_member {
    char id[64];
    int64_t rev; /* the template revision it was built from */
};

struct pool {
    struct osb_server *srv;
    uint64_t uid; /* never reused: a refill or claim in flight finds its pool by it */
    char name[64];
    json_t *given; /* the template as the client sent it (echoed by GET) */
    json_t *body;  /* the template as a create request of our shape */
    char image[256];
    struct osb_pool_capacity cap;
    int64_t revision; /* bumped by a PUT that changes the template */
    int64_t created_us;
    struct pool_member *idle; /* ready members, oldest first */
    size_t n_idle, cap_idle;
    int64_t starting;                      /* refill creates in flight */
    struct pool_waiter *wq_head, *wq_tail; /* claims waiting, FIFO */
    size_t n_waiting;
    bool pumping, repump;
    int64_t backoff_until_ms; /* after a failed refill: no new one before */
    unsigned failures;        /* refills failed in a row (the backoff doubles) */
    char last_error[300];
    uv_timer_t timer; /* runs the refill: soon after a change, or when the backoff ends */
    bool refill_due;  /* the timer fired: this pump refills */
    struct pool *next;
};

struct osb_pools {
    struct pool *head;
    uint64_t next_uid;
};

struct pool *osb_pools_find(struct osb_server *srv, const char *name);
struct pool *osb_pools_find_uid(struct osb_server *srv, uint64_t uid);
/* Serve waiters with idle members now, refill soon (REFILL_DEFER_MS);
 * re-entrant (a nested call makes the outer one loop once more). */
void osb_pools_pump(struct osb_server *srv, struct pool *p);
/* Takes the oldest idle member of the current revision; false when none. */
bool osb_pools_take(struct osb_server *srv, struct pool *p, struct pool_member *out);

/* ---- pool_claim.c ---- */
/* Hand idle members to the waiters at the head of p's queue. */
void osb_pool_serve(struct osb_server *srv, struct pool *p);
/* p is going away: every waiter in its queue gets 400 POOL_NOT_FOUND
 * (or nothing at shutdown, when answer is false). */
void osb_pool_drop_waiters(struct osb_server *srv, struct pool *p, bool answer);
#endif
