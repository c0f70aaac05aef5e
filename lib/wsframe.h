/* Reading WebSocket frames from a server (RFC 6455 5.2): unmasked, no
 * extensions. A pure function over a buffer, so a frame split across reads
 * is simply "not complete yet". */
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

#endif
