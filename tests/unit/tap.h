/* Minimal TAP helpers for unit tests: each check prints "ok - ..." or
 * "not ok - ... (file:line)"; main returns tap_done(). */
#ifndef OSB_TAP_H
#define OSB_TAP_H
#include <stdio.h>
#include <string.h>

static int tap_failed;

static inline void tap_check(int cond, const char *file, int line, const char *what)
{
    if (cond) {
        printf("ok - %s\n", what);
    } else {
        printf("not ok - %s (%s:%d)\n", what, file, line);
        tap_failed++;
    }
    fflush(stdout);
}

#define OK(cond, what) tap_check(!!(cond), __FILE__, __LINE__, (what))
#define IS_INT(a, b, what) \
    do { \
        long long _a = (long long)(a), _b = (long long)(b); \
        if (_a != _b) \
            printf("# %s: got %lld, want %lld\n", (what), _a, _b); \
        tap_check(_a == _b, __FILE__, __LINE__, (what)); \
    } while (0)
#define IS_STR(a, b, what) \
    do { \
        const char *_a = (a), *_b = (b); \
        int _eq = _a && _b && strcmp(_a, _b) == 0; \
        if (!_eq) \
            printf("# %s: got \"%s\", want \"%s\"\n", (what), _a ? _a : "(null)", \
                   _b ? _b : "(null)"); \
        tap_check(_eq, __FILE__, __LINE__, (what)); \
    } while (0)

/* A setup step that must succeed (an osb_buf_add, say): silent when it
 * does, a failed check when it does not. */
#define MUST(call) \
    do { \
        if ((call) < 0) \
            tap_check(0, __FILE__, __LINE__, "setup: " #call); \
    } while (0)

static inline int tap_done(void)
{
    return tap_failed ? 1 : 0;
}
#endif
