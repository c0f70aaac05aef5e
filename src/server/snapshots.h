/* Snapshots (protocol.md 1.3, 1.5, 1.7) on the native runtime: a snapshot
 * is the sandbox's writable layer, copied while the sandbox is frozen,
 * stored as an image `snapshot/<id>` whose base is the sandbox's own image
 * (so a restore stacks the copy on the same layers). Records live in
 * SQLite and in memory; the states are Creating -> Ready | Failed. */
#ifndef OSB_SERVER_SNAPSHOTS_H
#define OSB_SERVER_SNAPSHOTS_H
#include "server/server.h"

#define OSB_SNAP_IMAGE_PREFIX "snapshot/"

struct osb_snaps;
/* Load the records; snapshots left Creating by a crash become Failed. */
int osb_snaps_open(struct osb_server *srv, struct osb_err *err) OSB_MUST_CHECK;
void osb_snaps_close(struct osb_server *srv);

/* For a create with snapshotId: the image name to run ("snapshot/<id>"),
 * or an API error (404 SNAPSHOT::NOT_FOUND, 409 SNAPSHOT::NOT_READY). */
int osb_snaps_image_for(struct osb_server *srv, const char *id, char *image, size_t n,
                        struct osb_apierr *e) OSB_MUST_CHECK;

extern const struct osb_http_route osb_api_snapshot_routes[];
extern const size_t osb_api_snapshot_nroutes;
#endif
