/* Kubernetes resource quantities, as resourceLimits and config sizes carry
 * them: a decimal number ("1", "1.5", ".5") followed by nothing, a binary
 * suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m k M G T P E) or a
 * decimal exponent ("1e3", "2E-3"). Negative values are refused. Results
 * that are not whole are rounded up (as Kubernetes does), so "0.1m" CPU is
 * 1 millicpu and "1.5" bytes is 2. Both return 0, or -1 with errno EINVAL
 * (not a quantity) or ERANGE (does not fit in int64_t). */
#ifndef OSB_QUANTITY_H
#define OSB_QUANTITY_H
#include <stdint.h>
#include "common/err.h"

/* Bytes: "1Gi" -> 1073741824, "512Mi", "1G" -> 10^9, "1000". */
OSB_MUST_CHECK int osb_quantity_bytes(const char *s, int64_t *out);
/* CPU in thousandths of a core: "500m" -> 500, "1" -> 1000, "2.5" -> 2500. */
OSB_MUST_CHECK int osb_quantity_millicpu(const char *s, int64_t *out);
#endif
