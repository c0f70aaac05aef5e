/* execd's event stream, incrementally: events are "<json>\n\n" (no
 * "data:" prefix, protocol.md 0.1); "data: <json>" lines are taken too, as
 * the SDKs take them. Bytes arrive in chunks split anywhere. */
#ifndef OSBCL_SSE_H
#define OSBCL_SSE_H

#include "internal.h"

#define OSBCL_SSE_MAX_EVENT (16 * 1024 * 1024)

/* Called with each event's JSON text (NUL-terminated, len bytes); non-zero stops. */
typedef int (*osbcl_sse_fn)(void *ud, const char *json, size_t len);

struct osbcl_sse {
    struct osbcl_sb line; /* the line being read */
    bool toobig;
};

/* Feeds bytes: 0 fine, 1 the callback stopped, OSBC_E_NOMEM, or
 * OSBC_E_PROTOCOL for a line over OSBCL_SSE_MAX_EVENT. */
OSBCL_HIDDEN int osbcl_sse_feed(struct osbcl_sse *s, const char *data, size_t len, osbcl_sse_fn fn,
                                void *ud);
/* At the end of the stream: a last event without its blank line. */
OSBCL_HIDDEN int osbcl_sse_end(struct osbcl_sse *s, osbcl_sse_fn fn, void *ud);
OSBCL_HIDDEN void osbcl_sse_free(struct osbcl_sse *s);

#endif
