/* Lexical path helpers for the file API, with Go's path/filepath semantics
 * (the reference execd reports paths exactly as filepath.Abs/Join/Base
 * produce them). All results are heap strings the caller frees. */
#ifndef OSB_EXECD_FS_PATH_H
#define OSB_EXECD_FS_PATH_H

/* filepath.Clean: collapse "//", ".", and ".." lexically; "" -> ".". */
char *osb_fs_path_clean(const char *p);
/* filepath.Abs: relative paths are joined to the current directory, then
 * cleaned. */
char *osb_fs_path_abs(const char *p);
/* filepath.Join of two elements (cleaned). */
char *osb_fs_path_join(const char *dir, const char *name);
/* filepath.Dir and filepath.Base. */
char *osb_fs_path_dir(const char *p);
char *osb_fs_path_base(const char *p);
#endif
