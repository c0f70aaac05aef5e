/* Control bytes (0x00-0x1f, 0x7f) in ids, names and paths. C string calls
 * would stop at an embedded NUL ("<id>\0x" names sandbox <id>) and a newline
 * or escape in a name forges log lines, so every id, name and path that
 * comes from a request is checked once with these. */
#ifndef OSB_CTL_H
#define OSB_CTL_H
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Offset of the first control byte in s[0..n), or -1 if there is none. */
long osb_ctl_find(const char *s, size_t n);
/* 0, or -1 with an OSB_E_INVALID err: "<what> contains control byte 0xNN". */
OSB_MUST_CHECK int osb_ctl_check(const char *what, const char *s, size_t n, struct osb_err *err);
#endif
