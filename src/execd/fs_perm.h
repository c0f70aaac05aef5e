/* Permission objects (protocol.md 3.6) for /files/permissions, /directories
 * and upload metadata: {"owner"?: str, "group"?: str, "mode"?: int}. null
 * means absent; mode is octal digits written as a decimal number (755 ->
 * 0755) and 0 or absent means "do not chmod". */
#ifndef OSB_EXECD_FS_PERM_H
#define OSB_EXECD_FS_PERM_H
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

struct osb_fs_perm {
    bool has_mode;
    mode_t mode;
    uid_t uid; /* (uid_t)-1: leave the owner alone */
    gid_t gid; /* (gid_t)-1: leave the group alone */
};

/* Decimal-of-octal to mode bits: 755 -> 0755. Only the 0777 bits are
 * applied (as the reference execd, whose Go FileMode drops the rest).
 * -1 if a digit is 8 or 9, the value is negative or above 7777. */
OSB_MUST_CHECK int osb_fs_perm_mode(long long dec, mode_t *out);
/* Fill p from a Permission object (NULL or JSON null: nothing to do).
 * Wrong types or bad mode digits -> OSB_E_INVALID naming `what`; an owner
 * or group that the image does not know -> OSB_E_INTERNAL (the reference
 * answers 500 for a failed lookup). */
OSB_MUST_CHECK int osb_fs_perm_parse(json_t *obj, const char *what, struct osb_fs_perm *p,
                                     struct osb_err *err);
/* chmod (when apply_mode and a mode was given), then chown. */
OSB_MUST_CHECK int osb_fs_perm_apply(const char *path, const struct osb_fs_perm *p, bool apply_mode,
                                     struct osb_err *err);
/* chown only (for directories created on the way). */
OSB_MUST_CHECK int osb_fs_perm_chown(const char *path, const struct osb_fs_perm *p,
                                     struct osb_err *err);
#endif
