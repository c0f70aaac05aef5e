/* The error contract (DESIGN.md section 5): every fallible function returns
 * int (< 0 on failure) and fills a caller-owned struct osb_err. The message
 * lives in a fixed buffer so reporting an error never allocates. Only the top
 * level (an HTTP handler, main) reports, once. */
#ifndef OSB_ERR_H
#define OSB_ERR_H
#include <stddef.h>

/* On every fallible function: a result nobody looks at is a bug. */
#define OSB_MUST_CHECK __attribute__((warn_unused_result))

enum osb_errc {
    OSB_E_OK = 0,
    OSB_E_INVALID,     /* bad input from the caller: 400 */
    OSB_E_NOTFOUND,    /* the named thing does not exist: 404 */
    OSB_E_EXISTS,      /* conflicts with something that exists: 409 */
    OSB_E_TOOBIG,      /* over a limit: 413 */
    OSB_E_RANGE,       /* unsatisfiable range: 416 */
    OSB_E_UNSUPPORTED, /* not implemented / not available: 501 */
    OSB_E_SYS,         /* a system call failed; see sys_errno: 500 */
    OSB_E_INTERNAL,    /* anything else: 500 */
    OSB_E_DENIED,      /* refused by a peer (registry auth): 403 */
    OSB_E_UNAVAILABLE, /* a peer is unreachable or failing (registry down, 5xx): 502 */
    OSB_E_INTEGRITY,   /* data failed verification (digest or size mismatch): 502 */
    OSB_E_EXHAUSTED,   /* a fixed pool is used up (the native runtime's uid ranges): 503 */
};

struct osb_err {
    enum osb_errc code;
    int sys_errno; /* errno of the failing call, or 0 */
    char msg[512];
};

/* Set err (may be NULL) and return -1, so `return osb_err_set(...)` is one line. */
int osb_err_set(struct osb_err *err, enum osb_errc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like osb_err_set with OSB_E_SYS and the current errno; appends ": strerror". */
int osb_err_sys(struct osb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepend context: "context: previous message". Returns -1. */
int osb_err_wrap(struct osb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void osb_err_clear(struct osb_err *err);
/* The HTTP status an error code maps to. */
int osb_err_http_status(const struct osb_err *err);

/* The static analyzer reads one file at a time, so it cannot know that these
 * return -1 and follows impossible "succeeded" paths after
 * `return osb_err_set(...)`. Only its build sees the -1 spelled out. */
#if defined(__clang_analyzer__) && !defined(OSB_ERR_DEFINING)
#define osb_err_set(...) \
    ({ \
        (void)osb_err_set(__VA_ARGS__); \
        -1; \
    })
#define osb_err_sys(...) \
    ({ \
        (void)osb_err_sys(__VA_ARGS__); \
        -1; \
    })
#define osb_err_wrap(...) \
    ({ \
        (void)osb_err_wrap(__VA_ARGS__); \
        -1; \
    })
#endif

#endif
