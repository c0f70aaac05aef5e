/* Admission control: [server] max_sandboxes (live records holding runtime
 * state) and max_concurrent_creates (creates between admission and their
 * answer). A create that finds no room waits in one FIFO queue, so a
 * later arrival never passes an earlier one, until room frees or
 * admission_wait_seconds pass; then 429 SANDBOX::CAPACITY with a
 * Retry-After header (docs/server.md, "Admission"). */
#ifndef OSB_SERVER_ADMIT_H
#define OSB_SERVER_ADMIT_H
#include <stdbool.h>
#include <stdint.h>

#include "server/apierr.h"

struct osb_server;
struct osb_http_req;
struct osb_admit_slot;

/* e NULL: admitted, the create may start; else refused (429). Either way
 * called once, maybe from inside osb_admit. */
typedef void (*osb_admit_go)(struct osb_admit_slot *slot, const struct osb_apierr *e);

/* One per create job (embedded in it): its place in the queue, and what
 * it holds once admitted. */
struct osb_admit_slot {
    struct osb_admit_slot *prev, *next; /* while queued */
    int64_t deadline_ms;                /* monotonic; once admitted, when */
    enum { OSB_ADMIT_NONE, OSB_ADMIT_QUEUED, OSB_ADMIT_IN } state;
    bool place;  /* counts against max_sandboxes (admitted, not over) */
    bool slot;   /* counts against max_concurrent_creates */
    bool resume; /* queued again after a pull: needs a slot only */
    osb_admit_go go;
};

void osb_admit_init(struct osb_server *srv);
/* At shutdown: queued creates are refused (their clients are gone). */
void osb_admit_close(struct osb_server *srv);
/* Admit now, queue, or refuse (admission_wait_seconds = 0). */
void osb_admit(struct osb_server *srv, struct osb_admit_slot *slot, osb_admit_go go);
/* The job is over (answered, or detached while queued): its place in the
 * queue or its create slot is given back. Safe on a slot in any state. */
void osb_admit_leave(struct osb_server *srv, struct osb_admit_slot *slot);
/* An admitted create waits for a pull: its create slot goes to another
 * meanwhile (a pull is the network's time, not the CPU's) while its place
 * under max_sandboxes stays. */
void osb_admit_suspend(struct osb_server *srv, struct osb_admit_slot *slot);
/* The pull is over: go(slot, NULL) once a create slot is free, ahead of
 * every create not yet admitted (it was admitted before them); never
 * refused. */
void osb_admit_resume(struct osb_server *srv, struct osb_admit_slot *slot, osb_admit_go go);
/* A sandbox was deleted or ended: room may have freed. */
void osb_admit_kick(struct osb_server *srv);
/* Answers e; a 429 gets Retry-After: the seconds the queue ahead needs
 * to drain at the recent create rate (at least 1). */
void osb_admit_respond(struct osb_server *srv, struct osb_http_req *req,
                       const struct osb_apierr *e);
/* Creates waiting in the queue. */
size_t osb_admit_queued(const struct osb_server *srv);
#endif
