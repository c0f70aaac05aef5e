/* Warm pools (docs/pools.md): named sets of started, execd-ready sandboxes
 * ("members") built from a template, kept idle until a create with
 * extensions.poolRef claims one. A member is an ordinary sandbox record
 * whose spec carries "poolMember" {name, revision, keepRunning}: hidden
 * from the sandbox routes (osb_sbx_pool_member, registry.h), re-adopted at restart like any live sandbox.
 * Its execd runs no entrypoint (execd/claim.h) until the claim hands it
 * the request's env and entrypoint; the claim then rewrites the record
 * (createdAt, expiresAt, metadata, entrypoint) and the pool refills in the
 * background. Loop thread only. */
#ifndef OSB_SERVER_POOLS_H
#define OSB_SERVER_POOLS_H
#include <jansson.h>
#include <stdbool.h>

#include "common/err.h"
#include "server/apierr.h"

struct osb_server;
struct osb_sbx;
struct osb_create_spec;
struct osb_create_job;

/* After the records are recovered and the network is open: load the
 * pools, re-adopt their live members (destroying members of no pool and
 * ended ones), start the refills. */
int osb_pools_open(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
/* At shutdown: forget the pools (members stay, for the next start);
 * waiting claims are dropped unanswered (the HTTP server is closing). */
void osb_pools_close(struct osb_server *srv);

/* create.c, for a refill's spec once it is complete: the member's execd
 * defers the entrypoint, always has an end report (the claim decides
 * whether it is used), and on a server with networking always has a
 * policy (allow-all unless the template has one), so a claim can set the
 * request's. */
void osb_pool_member_prepare(struct osb_server *srv, struct osb_create_spec *spec);

/* create.c: a create with spec->pool_ref, before any image work. Finishes
 * job (osb_create_finish) with the claimed member, or with 400 (no such
 * pool, a field that cannot differ from the template), or 429 after
 * [server] admission_wait_seconds without a member. spec is the job's. */
void osb_pool_claim(struct osb_server *srv, struct osb_create_spec *spec,
                    struct osb_create_job *job);

/* ---- the /pools routes (api_pools.c); *out: a new ref ---- */
int osb_pools_create(struct osb_server *srv, json_t *body, json_t **out,
                     struct osb_apierr *e) OSB_MUST_CHECK;
int osb_pools_update(struct osb_server *srv, const char *name, json_t *body, json_t **out,
                     struct osb_apierr *e) OSB_MUST_CHECK;
int osb_pools_get(struct osb_server *srv, const char *name, json_t **out,
                  struct osb_apierr *e) OSB_MUST_CHECK;
json_t *osb_pools_list(struct osb_server *srv);
int osb_pools_delete(struct osb_server *srv, const char *name, struct osb_apierr *e) OSB_MUST_CHECK;
#endif
