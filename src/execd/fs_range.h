/* Pure HTTP pieces of GET /files/download (protocol.md 3.7): the Range
 * header as the reference execd reads it, Content-Disposition, and the
 * If-Modified-Since date. */
#ifndef OSB_EXECD_FS_RANGE_H
#define OSB_EXECD_FS_RANGE_H
#include <stdint.h>
#include <time.h>

#include "common/err.h"

enum osb_fs_range {
    OSB_FS_RANGE_OK,         /* serve [start, start+len) with 206 */
    OSB_FS_RANGE_NONE,       /* no range in the list: serve everything */
    OSB_FS_RANGE_NO_OVERLAP, /* every range starts at or past EOF: 416 text */
    OSB_FS_RANGE_INVALID,    /* bad syntax: 416 {"code":"UNKNOWN"} */
};

/* "bytes=a-b" / "a-" / "-n", comma-separated; the first range that starts
 * before EOF wins and is clipped to the file. */
enum osb_fs_range osb_fs_range_parse(const char *hdr, int64_t size, int64_t *start, int64_t *len);
/* `attachment; filename="name"`, or for names that are not plain printable
 * ASCII `attachment; filename="<pct>"; filename*=UTF-8''<pct>` with Go's
 * url.PathEscape encoding (quotes, backslashes and control characters are
 * encoded too, so a hostile name cannot break the header). Caller frees. */
char *osb_fs_content_disposition(const char *filename);
/* HTTP dates in the three formats of RFC 7231 7.1.1.1; -1 if unparsable. */
OSB_MUST_CHECK int osb_fs_http_date_parse(const char *s, time_t *out);
#endif
