/* A variable execd set for itself (e.g. UV_THREADPOOL_SIZE for libuv), to
 * be left out of every child's environment. Its own module because both
 * the thread-pool start (which sets it) and process creation (which drops
 * it) need it, and neither may depend on the other both ways. */
#ifndef OSB_EXECD_ENVHIDE_H
#define OSB_EXECD_ENVHIDE_H
#include <stdbool.h>
#include <stddef.h>

#include "execd/execd.h"

/* Hide `key` (a static string) from children from now on. One at most. */
void osb_execd_env_hide(struct osb_execd *x, const char *key);
/* Whether anything is hidden (an inherited environment must be rebuilt). */
bool osb_execd_env_hiding(const struct osb_execd *x);
/* Whether the entry "KEY=VALUE" whose key is `keylen` bytes is hidden. */
bool osb_execd_env_hidden(const struct osb_execd *x, const char *kv, size_t keylen);
#endif
