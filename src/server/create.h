/* A create from a parsed request to a ready sandbox, for any caller: the
 * POST handler, the batch route, a pool's refill. The pipeline:
 *
 *   backend -> snapshot's image -> resolve (pull first when missing)
 *   -> complete -> claims -> lifecycle (record, runtime, /ping)
 *
 * Admission (admit.h) comes first: a job may wait in its queue, or be
 * refused with 429, before the backend is chosen.
 *
 * Everything runs on the loop thread; done is called exactly once per job,
 * unless the job is detached first. */
#ifndef OSB_SERVER_CREATE_H
#define OSB_SERVER_CREATE_H
#include "server/apierr.h"
#include "server/spec.h"

struct osb_server;
struct osb_sbx;
struct osb_create_job;

/* s: the record, Running or ended during the create (its state says
 * which; e is NULL then); or e: why there is no sandbox (s is NULL, and
 * nothing of it is left: no record, no runtime state, no network slot).
 * s stays owned by the registry. */
typedef void (*osb_create_done)(void *ud, struct osb_sbx *s, const struct osb_apierr *e);

/* Start creating from a parsed spec (taken: *spec is emptied; spec->id is
 * the sandbox id, a fresh uuid4 when empty). Returns the job, or NULL when
 * done was already called from inside this call. */
struct osb_create_job *osb_create_start(struct osb_server *srv, struct osb_create_spec *spec,
                                        osb_create_done done, void *ud);

/* The caller no longer wants the answer (its client left): done is never
 * called. A create that has no record yet (pulling, making claims) stops
 * there and leaves nothing; one that has a record goes on, and its
 * sandbox stays, as Docker's does. */
void osb_create_detach(struct osb_create_job *job);
/* Waiting for admission (admit.h): detaching it now leaves nothing. */
bool osb_create_queued(const struct osb_create_job *job);

/* Whether the job was detached (its answer is not wanted any more). */
bool osb_create_detached(const struct osb_create_job *job);
/* For a job waiting in a queue (server/pool_claim.c): fn(ud) runs when the
 * job is detached (fn NULL: no longer). */
void osb_create_on_detach(struct osb_create_job *job, void (*fn)(void *), void *ud);

/* ---- for server/pool_claim.c: the end of a claim ---- */
void osb_create_finish(struct osb_create_job *job, struct osb_sbx *s, const struct osb_apierr *e);
#endif
