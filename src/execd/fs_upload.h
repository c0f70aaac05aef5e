/* POST /files/upload (protocol.md 3.7): multipart pairs of a `metadata`
 * part (JSON {path, owner?, group?, mode?}) and a `file` part, the k-th
 * metadata going with the k-th file. File data streams straight into a
 * temp file beside its target; only when the whole body has arrived and
 * every pair is valid are the temp files fsynced and renamed over their
 * targets. An aborted or truncated upload leaves the old content. */
#ifndef OSB_EXECD_FS_UPLOAD_H
#define OSB_EXECD_FS_UPLOAD_H
#include "http/http.h"

/* Route handler; needs OSB_ROUTE_STREAM_BODY. */
void osb_fs_upload(struct osb_http_req *req, void *ud);
#endif
