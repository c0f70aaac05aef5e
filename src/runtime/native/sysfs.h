/* The one sysfs every native sandbox binds as its /sys.
 *
 * A sysfs mounted for a sandbox's own network namespace is a superblock of
 * its own, and every superblock costs every memory cgroup on the host a
 * slot in its shrinker table (docs/runtime.md, "Why so few filesystems").
 * sysfs differs between network namespaces only in /sys/class/net (and the
 * net devices under /sys/devices/virtual/net), so the runtime mounts one,
 * read-only, for a network namespace of its own that holds nothing but a
 * loopback that is down, and the helper binds a clone of it into every
 * sandbox (OSB_INIT_SYSFS_FD). A sandbox's interfaces show in
 * /proc/net/dev and through netlink, not in /sys/class/net. */
#ifndef OSB_RT_NATIVE_SYSFS_H
#define OSB_RT_NATIVE_SYSFS_H
#include "common/err.h"

/* A detached, read-only sysfs mount of a new, empty network namespace
 * (close-on-exec), or -1 with err. */
int osb_nat_sysfs_open(struct osb_err *err) OSB_MUST_CHECK;
#endif
