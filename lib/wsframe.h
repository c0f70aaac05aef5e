/* Reading a server's WebSocket messages (RFC 6455 5.2-5.5): frames
 * unmasked, no extensions. Pure functions over bytes, so a frame split
 * across reads is simply "not complete yet" and the tests feed any split.
 * Nothing here aborts: allocations are checked. */
#ifndef OSBCL_WSFRAME_H
#define OSBCL_WSFRAME_H

#include <stdint.h>

#include "internal.h"

struct osbcl_wsframe {
    bool fin;
    int opcode;
    const uint8_t *payload; /* points into the buffer */
    size_t len;
};

/* Parses the frame at the start of b: returns its total size, 0 when b
 * holds only part of it, or -1 with *why set (a masked frame, RSV bits, a
 * fragmented or oversized control frame, an unknown opcode, a payload over
 * max). */
OSBCL_HIDDEN ssize_t osbcl_wsframe_parse(const uint8_t *b, size_t n, size_t max,
                                         struct osbcl_wsframe *f, const char **why);

/* A message reader: bytes go in with osbcl_wsr_feed, whole messages come
 * out of osbcl_wsr_next, fragments joined. Zero-initialise, set max. */
struct osbcl_wsr {
    size_t max;  /* a message's size limit */
    uint8_t *in; /* bytes fed and not yet parsed: in[off, len) */
    size_t off, len, cap;
    uint8_t *msg; /* the fragmented message being joined */
    size_t msg_len, msg_cap;
    int msg_op; /* its opcode, or 0 when none is open */
};

struct osbcl_wsmsg {
    int opcode;          /* OSB_WS_OP_TEXT, _BINARY, _PING, _PONG or _CLOSE */
    const uint8_t *data; /* the payload (a close's reason); valid until the next call on r */
    size_t len;
    int close_code; /* a close's code; 1005 when it has none */
};

/* Appends bytes: 0, or OSBC_E_NOMEM. */
OSBCL_HIDDEN int osbcl_wsr_feed(struct osbcl_wsr *r, const void *data, size_t len);
/* The next message: 1 with m filled, 0 when more bytes are needed, or
 * OSBC_E_PROTOCOL (with *why) / OSBC_E_NOMEM; after an error the stream is
 * unusable. Control frames come out as they arrive, also between the
 * fragments of a message. Text must be UTF-8. */
OSBCL_HIDDEN int osbcl_wsr_next(struct osbcl_wsr *r, struct osbcl_wsmsg *m, const char **why);
OSBCL_HIDDEN void osbcl_wsr_free(struct osbcl_wsr *r);

#endif
