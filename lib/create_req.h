/* The CreateSandboxRequest body, built from struct osbc_create_opts the way
 * the official SDKs build it (pure, so it is unit-tested alone). */
#ifndef OSBCL_CREATE_REQ_H
#define OSBCL_CREATE_REQ_H

#include "internal.h"

OSBCL_HIDDEN int osbcl_create_body(const struct osbc_create_opts *o, json_t **out,
                                   struct osbc_error *err);

#endif
