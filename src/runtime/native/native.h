/* The native backend (Linux namespaces + overlayfs + cgroups + seccomp):
 * its ops for the backend table in runtime.c. */
#ifndef OSB_RT_NATIVE_H
#define OSB_RT_NATIVE_H
#include "runtime/runtime.h"

extern const struct osb_runtime_ops osb_native_ops;
#endif
