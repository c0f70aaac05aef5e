/* Daemon allocation: abort on out-of-memory so callers never check for NULL
 * (crun/redis policy). The client library (lib/) must not use these. */
#ifndef OSB_XALLOC_H
#define OSB_XALLOC_H
#include <stddef.h>

void *osb_xmalloc(size_t n);
void *osb_xcalloc(size_t n, size_t size);
void *osb_xrealloc(void *p, size_t n);
char *osb_xstrdup(const char *s);
char *osb_xstrndup(const char *s, size_t n);
char *osb_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
