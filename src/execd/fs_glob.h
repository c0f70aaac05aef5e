/* Glob patterns for /files/search (doublestar semantics, as the reference
 * execd): `*` any run of characters except '/', `?` one character (UTF-8
 * aware) except '/', `[abc]`, `[a-z]`, `[!x]`/`[^x]` classes, `{a,b}`
 * alternatives, `\x` a literal x, and `**` as a whole path segment matching
 * any number of segments (so "**" alone matches any base name).
 * Patterns are compiled once: brace alternatives are expanded up front so
 * matching stays linear-ish per alternative. */
#ifndef OSB_EXECD_FS_GLOB_H
#define OSB_EXECD_FS_GLOB_H
#include <stdbool.h>

#include "common/err.h"

struct osb_fs_glob;

/* Fails (OSB_E_INVALID) on an unclosed class or brace, an empty class, a
 * trailing backslash, or more than 256 brace alternatives. */
OSB_MUST_CHECK struct osb_fs_glob *osb_fs_glob_new(const char *pattern, struct osb_err *err);
void osb_fs_glob_free(struct osb_fs_glob *g);
bool osb_fs_glob_match(const struct osb_fs_glob *g, const char *name);
#endif
