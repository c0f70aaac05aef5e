/* A pooled sandbox's execd (server/pools.c): started with its entrypoint
 * deferred (env OSB_EXECD_DEFER_ENTRYPOINT=1), it serves as usual but runs
 * no entrypoint until the server claims the sandbox for a client with
 *
 *   POST /_osb/claim {"env": {K: V}, "entrypoint": [..], "keepRunning": b}
 *
 * (token-protected like every route; once only, 409 after): the env is set
 * in execd's own environment, so the entrypoint and every later command
 * and session see it, then the entrypoint (the request's, or the one on
 * execd's command line when absent) starts as the sandbox's main process,
 * with the same end report as an entrypoint started at boot unless
 * keepRunning says its end is not the sandbox's. */
#ifndef OSB_EXECD_CLAIM_H
#define OSB_EXECD_CLAIM_H
#include <stdbool.h>

#include "execd/execd.h"

#define OSB_EXECD_DEFER_ENV "OSB_EXECD_DEFER_ENTRYPOINT"

/* argv: NULL-terminated, owned by the claim module until the process
 * ends. keep_running: do not report the entrypoint's end. */
typedef void (*osb_execd_claim_start)(char **argv, bool keep_running, void *ud);

/* Whether this execd was started deferred; reads and removes the variable
 * (no child may inherit it). */
bool osb_execd_claim_deferred(void);
/* Registers POST /_osb/claim; boot_entry is the command line's entrypoint
 * (may be NULL). */
void osb_execd_claim_routes(struct osb_execd *x, char **boot_entry, osb_execd_claim_start start,
                            void *ud);
#endif
