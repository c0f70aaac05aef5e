/* How a sandbox that ended on its own is shown: its state, reason and
 * message (docs/server.md, "States"), worded by the server from what the
 * runtime learnt (runtime.h struct osb_rt_end). Nothing the sandbox wrote
 * reaches the message as text: execd reports numbers only, and the
 * entrypoint's name comes from the stored spec. */
#ifndef OSB_SERVER_ENDING_H
#define OSB_SERVER_ENDING_H
#include <jansson.h>

#include "runtime/runtime.h"
#include "server/registry.h"

struct osb_ending {
    enum osb_sbx_state state; /* OSB_ST_TERMINATED or OSB_ST_FAILED */
    const char *reason;       /* static: ENTRYPOINT_EXITED, ENTRYPOINT_FAILED, SANDBOX_EXITED,
                                 OOM_KILLED, PIDS_LIMIT */
    char message[512];
};

/* spec: the sandbox's stored spec record (its "entrypoint" names the
 * program in exec failures); may be NULL. */
void osb_ending_describe(json_t *spec, const struct osb_rt_end *end, struct osb_ending *out);
#endif
