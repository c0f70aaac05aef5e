/* For fuzz targets: a setup step that must succeed (an osb_buf_add into
 * the target's own log, say) aborts, so the fuzzer reports it. */
#ifndef OSB_FUZZ_MUST_H
#define OSB_FUZZ_MUST_H
#include <stdlib.h>

#define MUST(call) \
    do { \
        if ((call) < 0) \
            abort(); \
    } while (0)
#endif
