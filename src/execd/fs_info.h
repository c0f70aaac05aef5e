/* FileInfo JSON (protocol.md 3.6): key order path, type, size, modified_at,
 * created_at, owner, group, mode; mode is the octal permission digits read
 * as a decimal number (0644 -> 644); times are RFC 3339 with nanoseconds and
 * the local offset; owner/group are names from the image's own passwd/group
 * files, or the decimal id when unknown. */
#ifndef OSB_EXECD_FS_INFO_H
#define OSB_EXECD_FS_INFO_H
#include <jansson.h>
#include <sys/stat.h>

#include "common/err.h"

/* Remembers id -> name lookups for one request: a listing of thousands of
 * files owned by a handful of users must not reread /etc/passwd per entry.
 * Not shared between threads. */
struct osb_fs_names;
struct osb_fs_names *osb_fs_names_new(void);
void osb_fs_names_free(struct osb_fs_names *n);

/* "file", "directory", "symlink" or "other". */
const char *osb_fs_info_type(mode_t m);
/* Permission bits as decimal-of-octal: 0755 -> 755. */
int osb_fs_info_mode(mode_t m);
/* New FileInfo object for `path` (reported as given). */
json_t *osb_fs_info_json(const char *path, const struct stat *st, struct osb_fs_names *names);
/* Copy of s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD, as Go's encoding/json does: file names are arbitrary bytes, JSON
 * strings are not. Caller frees. */
char *osb_fs_utf8_sanitize(const char *s);
/* json_string of the sanitized text. */
json_t *osb_fs_json_string(const char *s);
/* lstat(abs) and build its FileInfo. ENOENT/ENOTDIR -> OSB_E_NOTFOUND. */
OSB_MUST_CHECK int osb_fs_info_lstat(const char *abs, struct osb_fs_names *names, json_t **out,
                                     struct osb_err *err);
#endif
