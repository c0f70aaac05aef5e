/* An API error on its way to the client: HTTP status, wire code
 * ("SANDBOX::NOT_FOUND") and a message naming the field or object. Request
 * parsing fills one; the handler answers it once. */
#ifndef OSB_SERVER_APIERR_H
#define OSB_SERVER_APIERR_H

struct osb_http_req;
struct osb_http_server;

struct osb_apierr {
    int status;
    const char *code;   /* static string */
    char msg[512];
};

/* Fills e and returns -1, so `return osb_apierr_set(...)` is one line. */
int osb_apierr_set(struct osb_apierr *e, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answers {"code","message"} with e's status. */
void osb_apierr_respond(struct osb_http_req *req, const struct osb_apierr *e);
/* Every error the lifecycle server answers goes out with a status the
 * upstream OpenAPI file lists for that route (docs/errors.md). */
void osb_apierr_install(struct osb_http_server *http);

/* For the static analyzer, which cannot see the -1 from here (common/err.h). */
#if defined(__clang_analyzer__) && !defined(OSB_APIERR_DEFINING)
#define osb_apierr_set(...) ({ (void)osb_apierr_set(__VA_ARGS__); -1; })
#endif
#endif
