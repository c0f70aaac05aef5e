/* libuv's thread pool, which runs execd's file operations. */
#ifndef OSB_EXECD_POOL_H
#define OSB_EXECD_POOL_H
#include "execd/execd.h"

/* Start the pool a moment after start-up, off the path to the first /ping. */
void osb_execd_pool_schedule(struct osb_execd *x);
/* Start it now if it is not running yet (idempotent). Called before every
 * spawn: once user processes exist, a sandbox's pids limit could make
 * libuv's thread creation fail, and libuv aborts on that. */
void osb_execd_pool_start(struct osb_execd *x);
#endif
