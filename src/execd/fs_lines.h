/* Line mode of GET /files/download (protocol.md 3.7): lines offset ..
 * offset+limit-1 (1-based) joined with "\n", no trailing newline, "\n" and
 * "\r\n" terminators removed. A streaming filter: file bytes go in by
 * chunks of any size, the selected text comes out, nothing is buffered but
 * a held-back '\r'. */
#ifndef OSB_EXECD_FS_LINES_H
#define OSB_EXECD_FS_LINES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct osb_fs_lines {
    int64_t first, last; /* selected line numbers, inclusive */
    int64_t line;        /* current line number */
    int64_t emitted;     /* selected lines begun so far */
    bool opened;         /* the current line has been begun in the output */
    bool started;        /* the current line has at least one byte */
    bool cr;             /* a '\r' is held back (may end a "\r\n") */
    bool failed;         /* out hit its limit: the output is cut, stop */
};

/* offset >= 1, limit >= 1 (INT64_MAX: all). */
void osb_fs_lines_init(struct osb_fs_lines *l, int64_t offset, int64_t limit);
/* Feed file bytes; appends output to out. Returns true once past the last
 * selected line, or when out is full (failed set): stop reading. */
bool osb_fs_lines_feed(struct osb_fs_lines *l, const char *data, size_t len, struct osb_buf *out);
/* At EOF: flush a final line that had no terminator. */
void osb_fs_lines_finish(struct osb_fs_lines *l, struct osb_buf *out);
#endif
