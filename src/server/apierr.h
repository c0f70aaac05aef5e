/* An API error on its way to the client: HTTP status, wire code
 * ("SANDBOX::NOT_FOUND") and a message naming the field or object. Request
 * parsing fills one; the handler answers it once.
 *
 * One table (apierr.c) gives the status each code is raised with, so no
 * handler writes a status by hand; the route's status map (docs/errors.md)
 * may then move it to a status that route lists. A code raised with two
 * statuses for two different reasons has one row per reason, keyed
 * "CODE#reason" (the wire code is the part before '#'). */
#ifndef OSB_SERVER_APIERR_H
#define OSB_SERVER_APIERR_H
#include "common/err.h"

struct osb_http_req;
struct osb_http_server;

struct osb_apierr {
    int status;
    const char *code; /* static string */
    char msg[512];
};

/* The status the table gives key ("SANDBOX::NOT_FOUND", "CODE#reason"),
 * 0 for a key it does not have. */
int osb_apierr_status(const char *key);
/* Fills e from the table row of key and returns -1, so `return
 * osb_apierr(...)` is one line. A key not in the table is a bug: it is
 * logged and raised as 500 with the key as its code. */
int osb_apierr(struct osb_apierr *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like osb_apierr with err's message; a key not in the table takes the
 * status of err's code (osb_err_http_status). Returns -1. */
int osb_apierr_from_err(struct osb_apierr *e, const struct osb_err *err, const char *key);
/* Answers req at once with the error of key (osb_apierr + osb_apierr_respond). */
void osb_apierr_reply(struct osb_http_req *req, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Answers {"code","message"} with e's status. */
void osb_apierr_respond(struct osb_http_req *req, const struct osb_apierr *e);
/* Every error the lifecycle server answers goes out with a status the
 * upstream OpenAPI file lists for that route (docs/errors.md). */
void osb_apierr_install(struct osb_http_server *http);

/* For the static analyzer, which cannot see the -1 from here (common/err.h). */
#if defined(__clang_analyzer__) && !defined(OSB_APIERR_DEFINING)
#define osb_apierr(...) \
    ({ \
        (void)osb_apierr(__VA_ARGS__); \
        -1; \
    })
#define osb_apierr_from_err(...) \
    ({ \
        (void)osb_apierr_from_err(__VA_ARGS__); \
        -1; \
    })
#endif
#endif
