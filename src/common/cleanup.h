/* Scope-bound cleanup (crun/bubblewrap style). Give ownership away with
 * osb_steal_ptr(&p) / osb_steal_fd(&fd). */
#ifndef OSB_CLEANUP_H
#define OSB_CLEANUP_H
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void osb_freep(void *p)
{
    free(*(void **)p);
}
static inline void osb_closep(int *fd)
{
    if (*fd >= 0) {
        int e = errno;
        close(*fd);
        errno = e;
    }
}
static inline void osb_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}
static inline void osb_closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

#define _cleanup_free_ __attribute__((cleanup(osb_freep)))
#define _cleanup_close_ __attribute__((cleanup(osb_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(osb_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(osb_closedirp)))

static inline void *osb_steal_ptr_(void *pp)
{
    void **p = pp, *v = *p;
    *p = NULL;
    return v;
}
#define osb_steal_ptr(pp) ((__typeof__(*(pp)))osb_steal_ptr_(pp))

static inline int osb_steal_fd(int *fd)
{
    int v = *fd;
    *fd = -1;
    return v;
}

#define OSB_RETRY(expr) \
    ({ \
        long _r; \
        do \
            _r = (long)(expr); \
        while (_r == -1 && errno == EINTR); \
        _r; \
    })

#define OSB_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OSB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#endif
