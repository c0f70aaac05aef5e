/* A run proxied to a sandbox's execd, for its audit record: the server's
 * proxy (api_proxy.c) taps the exchange of POST /command, /session/{id}/run,
 * /code and /pty, and keeps the run with the request
 * (osb_http_req_set_note); the access observer (access.c) adds what it
 * read to the record's detail when the exchange is over: the text run (cut
 * to OSB_AUDIT_MAX_TEXT), and the exit code, or the error, or how it ended
 * without one. Nothing else of the request is read (its envs may hold
 * secrets), and at most a few KiB are kept per exchange (audit_execd.h). */
#ifndef OSB_SRV_AUDIT_RUN_H
#define OSB_SRV_AUDIT_RUN_H
#include <jansson.h>

#include "http/http.h"

struct osb_audit_run;

/* A run when method and path (the proxied path below execd's endpoint,
 * decoded, no leading '/', as the proxy forwards it) name one; NULL
 * otherwise. */
struct osb_audit_run *osb_audit_run_new(const char *method, const char *path);
/* Frees a run (void *: the request's note free function). */
void osb_audit_run_free(void *run);
/* The proxy tap that feeds the run; the run must outlive the exchange
 * (the request's note does: its tap ends before the request is freed). */
void osb_audit_run_tap(struct osb_audit_run *r, struct osb_http_tap *tap);
/* Adds text, textTruncated, background, exitCode, error or ended to detail. */
void osb_audit_run_detail(struct osb_audit_run *r, json_t *detail);
#endif
