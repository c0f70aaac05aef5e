/* Users and groups from the image's own /etc/passwd and /etc/group: glibc's
 * static getpwnam needs NSS modules at run time, which a static execd in a
 * busybox image does not have. */
#ifndef OSB_EXECD_USERS_H
#define OSB_EXECD_USERS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"

/* Name for an id; writes the decimal id when unknown. */
void osb_users_name(uid_t uid, char *buf, size_t n);
void osb_users_group_name(gid_t gid, char *buf, size_t n);
/* Id for a name (a decimal string is accepted as an id); -1 if unknown. */
OSB_MUST_CHECK int osb_users_uid(const char *name, uid_t *out);
OSB_MUST_CHECK int osb_users_gid(const char *name, gid_t *out);
/* Supplementary groups of uid plus primary gid in groups[0]; returns count. */
int osb_users_groups_of(uid_t uid, gid_t gid, gid_t *groups, size_t max);
/* Home directory of uid, or NULL (caller frees). */
char *osb_users_home(uid_t uid);
#endif
