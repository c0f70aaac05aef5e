/* The gVisor backend: sandboxes run by Debian's runsc (OCI bundles,
 * runsc create/start/kill/delete). docs/internals/gvisor.md. */
#ifndef OSB_RT_GVISOR_H
#define OSB_RT_GVISOR_H
#include "runtime/runtime.h"

extern const struct osb_runtime_ops osb_gvisor_ops;
#endif
