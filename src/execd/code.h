/* Code interpreter (protocol.md 3.2, 3.3 "POST /code", 3.5): persistent
 * Python, JavaScript and bash contexts without Jupyter, each one long-lived
 * interpreter process (code_interp.h), plus `command` runs. Routes:
 * osb_execd_code_routes (execd.h). docs/internals/code.md has the design
 * and the choices where upstream leaves room. */
#ifndef OSB_EXECD_CODE_H
#define OSB_EXECD_CODE_H
#include <stddef.h>

#include "execd/execd.h"
#include "http/http.h"

/* POST /code with language `command` (code_command.c): run `code` with
 * `bash -c` (sh without bash) and stream it like a foreground /command:
 * init, one stdout/stderr event per line, then execution_complete or a
 * CommandExecError error. Takes the request. */
void osb_code_command_run(struct osb_execd *x, struct osb_http_req *req, const char *code,
                          size_t len);
/* Interrupt the code context `id` (SIGINT to the run in progress, for
 * DELETE /code, interrupt.c); -1 if there is none. */
OSB_MUST_CHECK int osb_execd_code_interrupt(struct osb_execd *x, const char *id);
#endif
