/* The reading side of a command, session or code run: execd's event
 * stream turned into callbacks and an osbc_exec_result (protocol.md 0.3,
 * 3.3). Pure, so its unit test replays recorded streams. */
#ifndef OSBCL_EXEC_H
#define OSBCL_EXEC_H

#include "sse.h"

struct osbcl_run {
    const struct osbc_exec_cbs *cbs; /* may be NULL */
    struct osbc_exec_result *r;
    struct osbcl_sse sse;
    int rc;       /* OSBC_E_NOMEM / _PROTOCOL met while reading, or 0 */
    bool stopped; /* a callback asked to stop */
    bool errored; /* an error event (or error object) arrived */
};

/* Clears r and starts a run: exit_code and execution_time_ms -1 until the
 * stream says otherwise. */
OSBCL_HIDDEN void osbcl_run_init(struct osbcl_run *x, const struct osbc_exec_cbs *cbs,
                                 struct osbc_exec_result *r);
/* Feeds stream bytes (an osbcl_data_fn): non-zero when reading must stop,
 * because a callback asked (x->stopped) or x->rc is set. */
OSBCL_HIDDEN int osbcl_run_feed(void *x, const char *data, size_t len);
/* The stream ended: a last event without its blank line. */
OSBCL_HIDDEN void osbcl_run_end(struct osbcl_run *x);
OSBCL_HIDDEN void osbcl_run_free(struct osbcl_run *x);

#endif
