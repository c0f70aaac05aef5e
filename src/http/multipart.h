/* Streaming multipart/form-data parser (RFC 7578 on RFC 2046).
 *
 * Bytes go in through osb_multipart_feed in chunks of any size (one byte at a
 * time works); parts come out through callbacks. Part bodies are never
 * buffered: each chunk's data is handed on in as few on_part_data calls as
 * possible (usually one per fed chunk; a boundary split across chunks may add
 * one short extra call). Memory is bounded by the boundary length plus
 * OSB_MAX_PART_HEAD for the header block of the current part.
 *
 * Accepted framing: an optional preamble; "--boundary" lines ending in
 * optional spaces/tabs and CRLF; CRLF-terminated part headers (names case-
 * insensitive, no obsolete line folding); "--boundary--" closes the body and
 * anything after it (the epilogue) is ignored. A line starting with
 * "--boundary" followed by other than "--", SP, HT or CR is part data, as in
 * Go's mime/multipart. Every part must carry
 * `Content-Disposition: form-data; name="..."`; `filename` is optional and
 * `filename*=UTF-8''...` (or ISO-8859-1) overrides it when present. Quoted
 * values take backslash escapes. Violations fail with OSB_E_INVALID and a
 * message naming the problem; header blocks over OSB_MAX_PART_HEAD fail with
 * OSB_E_TOOBIG. */
#ifndef OSB_MULTIPART_H
#define OSB_MULTIPART_H
#include <stddef.h>

#include "common/err.h"

struct osb_multipart;

/* Borrowed for the duration of on_part_begin; copy what must outlive it. */
struct osb_multipart_part {
    const char *name;         /* never NULL (may be "") */
    const char *filename;     /* NULL if absent */
    const char *content_type; /* trimmed header value, NULL if absent */
};

/* Any callback may be NULL. A negative return aborts parsing: feed returns
 * -1 with err = OSB_E_INTERNAL "multipart: aborted by a part callback" (the
 * callback keeps its real reason in ud). Callbacks must not call feed,
 * finish or free on the same parser. */
struct osb_multipart_cbs {
    int (*on_part_begin)(void *ud, const struct osb_multipart_part *p);
    int (*on_part_data)(void *ud, const char *data, size_t len);
    int (*on_part_end)(void *ud);
};

/* content_type: the request's Content-Type header. Fails (NULL, err set,
 * OSB_E_INVALID) unless it is multipart/form-data with a boundary parameter
 * (quoted or not, 1..200 printable ASCII chars). cbs is copied. */
OSB_MUST_CHECK struct osb_multipart *osb_multipart_new(const char *content_type,
                                                       const struct osb_multipart_cbs *cbs,
                                                       void *ud, struct osb_err *err);
/* 0, or -1 with err set. Errors are sticky: later feed/finish calls fail
 * again with the same error. Data after the closing boundary is ignored. */
OSB_MUST_CHECK int osb_multipart_feed(struct osb_multipart *mp, const char *data, size_t len,
                                      struct osb_err *err);
/* Call at the end of the body: fails (OSB_E_INVALID) if the closing boundary
 * was not seen, i.e. the body was truncated. */
OSB_MUST_CHECK int osb_multipart_finish(struct osb_multipart *mp, struct osb_err *err);
/* Number of parts begun so far. */
unsigned osb_multipart_parts(const struct osb_multipart *mp);
/* NULL is a no-op. */
void osb_multipart_free(struct osb_multipart *mp);
#endif
