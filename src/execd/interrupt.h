/* DELETE /command?id= and DELETE /code?id= (upstream's shared Interrupt):
 * the id may name a command (SIGTERM, then SIGKILL after 3 s), a session
 * (closed) or a code context (SIGINT to the run in progress). A module of
 * its own so that /command and /code need not reach into each other: it
 * asks each of them in turn and nobody calls back into it. Routes:
 * osb_execd_interrupt_routes (execd.h). */
#ifndef OSB_EXECD_INTERRUPT_H
#define OSB_EXECD_INTERRUPT_H
#include "execd/execd.h"
#endif
