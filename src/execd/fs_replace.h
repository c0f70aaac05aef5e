/* POST /files/replace: replace every occurrence of `old` with `new` in a
 * file, streaming (memory is bounded by one chunk plus len(old)), through a
 * temp file and rename(2) so a reader never sees a half-written file. */
#ifndef OSB_EXECD_FS_REPLACE_H
#define OSB_EXECD_FS_REPLACE_H
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* Copy fd `in` to fd `out`, replacing non-overlapping occurrences of old
 * (left to right, as Go's strings.ReplaceAll; oldlen > 0). *count gets the
 * number replaced. */
OSB_MUST_CHECK int osb_fs_replace_fd(int in, int out, const char *old, size_t oldlen,
                                     const char *rep, size_t replen, int64_t *count,
                                     struct osb_err *err);
/* Replace in the file at path; a symlink is resolved and its target
 * rewritten. Mode and owner are kept. With no occurrence the file is left
 * untouched. Missing -> OSB_E_NOTFOUND; not a regular file -> OSB_E_INVALID
 * (a directory -> OSB_E_SYS EISDIR, as the reference). */
OSB_MUST_CHECK int osb_fs_replace_file(const char *path, const char *old, size_t oldlen,
                                       const char *rep, size_t replen, int64_t *count,
                                       struct osb_err *err);
#endif
