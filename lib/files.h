/* The pure parts of files.c, shared with its unit test: a mode on the
 * wire and the multipart framing of an upload (protocol.md 3.6, 3.7). */
#ifndef OSBCL_FILES_H
#define OSBCL_FILES_H

#include "internal.h"

/* A mode as execd takes it: the octal digits read as a decimal number
 * (0644 -> 644, 04755 -> 4755). */
OSBCL_HIDDEN int osbcl_mode_wire(int mode);

/* {"mode"?, "owner"?, "group"?} of a Permission: attrs may be NULL; a mode
 * < 0 takes def_mode, and a def_mode < 0 leaves "mode" out. NULL on OOM or
 * a name that is not UTF-8. */
OSBCL_HIDDEN json_t *osbcl_perm_json(const struct osbc_file_attrs *attrs, int def_mode);

/* An upload's body is head + the file's bytes + tail, so a file of known
 * size gives an exact Content-Length. head: the "metadata" part
 * ({"path", mode?, owner?, group?}, a file part named "metadata" as execd
 * requires) and the header of the "file" part; tail: the closing boundary. */
struct osbcl_upload_frame {
    char *head, *tail;
    size_t head_len, tail_len;
};
/* Builds f for path and attrs (may be NULL): 0, OSBC_E_NOMEM, or
 * OSBC_E_ARG for a path or name that is not UTF-8. boundary: up to 70
 * characters of [0-9A-Za-z-]. */
OSBCL_HIDDEN int osbcl_upload_frame(struct osbcl_upload_frame *f, const char *boundary,
                                    const char *path, const struct osbc_file_attrs *attrs);
OSBCL_HIDDEN void osbcl_upload_frame_free(struct osbcl_upload_frame *f);

#endif
