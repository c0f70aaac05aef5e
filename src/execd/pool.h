/* libuv's thread pool, which runs execd's file operations. */
#ifndef OSB_EXECD_POOL_H
#define OSB_EXECD_POOL_H
#include "execd/execd.h"

/* Size the pool (at start-up); it starts with the first file call. */
void osb_execd_pool_prepare(struct osb_execd *x);
/* Start it now if it is not running yet (idempotent). Called before every
 * spawn of a user process: once those exist, a sandbox's pids limit could
 * make libuv's thread creation fail, and libuv aborts on that. */
void osb_execd_pool_start(struct osb_execd *x);
#endif
