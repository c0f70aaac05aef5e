/* A growable byte buffer with a hard cap (curl dynbuf style): appending past
 * `max` fails and leaves the buffer as it was. Always NUL-terminated.
 *
 * A full buffer is an error its caller handles, never a silently shorter
 * text: every append is OSB_MUST_CHECK. A builder of several pieces may
 * collect the results (`rc |= osb_buf_addf(...)`: each is 0 or -1) and
 * check once before it uses the buffer; what it built is then thrown away
 * (or answered as an error), not sent with a hole in it. */
#ifndef OSB_BUF_H
#define OSB_BUF_H
#include <stdarg.h>
#include <stddef.h>

#include "common/err.h"

struct osb_buf {
    char *data;
    size_t len, cap, max;
};

void osb_buf_init(struct osb_buf *b, size_t max);
void osb_buf_free(struct osb_buf *b);
void osb_buf_reset(struct osb_buf *b);
/* 0 on success, -1 if the result would exceed max. */
OSB_MUST_CHECK int osb_buf_add(struct osb_buf *b, const void *data, size_t len);
OSB_MUST_CHECK int osb_buf_adds(struct osb_buf *b, const char *s);
OSB_MUST_CHECK int osb_buf_addf(struct osb_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes. */
void osb_buf_consume(struct osb_buf *b, size_t n);
/* Take ownership of the data (caller frees); the buffer becomes empty.
 * Never NULL: an empty buffer gives "". */
char *osb_buf_steal(struct osb_buf *b, size_t *len);
#endif
