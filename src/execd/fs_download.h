/* GET /files/download (protocol.md 3.7): the whole file, one byte range
 * (206), or a range of lines (line mode). The file is read in 256 KiB
 * chunks on the thread pool and written with backpressure, so memory stays
 * bounded whatever the file size. */
#ifndef OSB_EXECD_FS_DOWNLOAD_H
#define OSB_EXECD_FS_DOWNLOAD_H
#include "http/http.h"

void osb_fs_download(struct osb_http_req *req, void *ud);
#endif
