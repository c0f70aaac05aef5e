/* Starting the helper without the server's descriptor table.
 *
 * posix_spawn gives the child a copy of the parent's descriptor table,
 * which exec then closes one by one: the server holds a descriptor per
 * sandbox, so with thousands alive every create paid for thousands of
 * copies and closes while the server's loop waited (vfork). Here the child
 * shares the parent's table just long enough to drop it for an empty one
 * (close_range with CLOSE_RANGE_UNSHARE copies nothing), then takes the
 * few descriptors it needs from the parent through a pidfd. */
#ifndef OSB_RT_NATIVE_SPAWN_H
#define OSB_RT_NATIVE_SPAWN_H
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* The parent's descriptor from becomes the child's to. */
struct osb_nat_fdmap {
    int from, to;
};

/* Start path with argv {path, NULL} and the server's environment, in a new
 * session, with default signal dispositions, an empty signal mask and only
 * the mapped descriptors. stack: a caller-owned buffer of
 * OSB_NAT_SPAWN_STACK bytes (the child runs on it until it execs). */
#define OSB_NAT_SPAWN_STACK (64 * 1024)
pid_t osb_nat_spawn(const char *path, const struct osb_nat_fdmap *map, size_t n, char *stack,
                    struct osb_err *err) OSB_MUST_CHECK;
#endif
