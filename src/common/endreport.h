/* The one line execd (PID 1 of a sandbox) writes on its report pipe when
 * the entrypoint ends, and the runtime reads on the host side:
 *
 *   "exit <code>\n"     the entrypoint exited (code 0..255)
 *   "signal <n>\n"      the entrypoint was killed by signal n (1..64)
 *   "exec <errno>\n"    the entrypoint could not be executed (errno 1..4095)
 *
 * Numbers only, so nothing the sandbox controls reaches a log or an API
 * answer as text: the server words the outcome itself. The reader treats
 * the line as untrusted (a compromised execd can write anything there). */
#ifndef OSB_COMMON_ENDREPORT_H
#define OSB_COMMON_ENDREPORT_H
#include <stddef.h>
#include "common/err.h"

/* Longest valid line, newline included: "signal 64\n" < "exec 4095\n" < 16. */
#define OSB_ENDREPORT_MAX 16

enum osb_end_kind {
    OSB_END_EXITED = 1,  /* value: exit code */
    OSB_END_SIGNALED,    /* value: signal number */
    OSB_END_EXEC_FAILED, /* value: errno of the failed exec */
};

struct osb_endreport {
    enum osb_end_kind kind;
    int value;
};

/* Formats r into buf (at least OSB_ENDREPORT_MAX bytes); returns the
 * length, or -1 when r is out of range. */
OSB_MUST_CHECK int osb_endreport_format(const struct osb_endreport *r, char *buf, size_t n);
/* Parses exactly one line (n bytes, the newline required, nothing after
 * it); -1 on anything else, *out untouched. */
OSB_MUST_CHECK int osb_endreport_parse(const char *buf, size_t n, struct osb_endreport *out);
#endif
