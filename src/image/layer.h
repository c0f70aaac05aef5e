/* Layers: directories in overlayfs's own format, made from tar streams
 * (OCI/Docker layers, imported root filesystems) or copied from a
 * sandbox's writable layer (snapshots).
 *
 * Unpacking runs libarchive in a child process chroot()ed into the new
 * directory, with SECURE_NODOTDOT | SECURE_SYMLINKS | SECURE_NOABSOLUTEPATHS:
 * absolute paths, "..", and symlink tricks cannot write outside it; any
 * refused entry fails the whole layer with a message naming the entry.
 * Kept: modes (setuid too), numeric owners, timestamps, xattrs (except
 * trusted.overlay.*, which only the whiteout rules below may set), hard
 * links, device nodes. OCI whiteouts become overlayfs ones:
 *   dir/.wh.name       -> dir/name as a 0/0 character device
 *   dir/.wh..wh..opq   -> trusted.overlay.opaque="y" on dir
 * Compression (gzip, zstd, xz, bzip2, or none) is detected from the data. */
#ifndef OSB_IMAGE_LAYER_H
#define OSB_IMAGE_LAYER_H
#include <stddef.h>

#include "common/err.h"

struct osb_layer_writer;

/* Start unpacking into dir, which must not exist (it is created; its
 * parent must exist). Feed the tar stream with osb_layer_write, then
 * osb_layer_commit; osb_layer_abort (or a failed commit) removes dir. */
OSB_MUST_CHECK int osb_layer_begin(const char *dir, struct osb_layer_writer **out,
                                   struct osb_err *err);
OSB_MUST_CHECK int osb_layer_write(struct osb_layer_writer *w, const void *data, size_t len,
                                   struct osb_err *err);
/* End of stream: waits for the unpacker; frees w whatever the outcome. */
OSB_MUST_CHECK int osb_layer_commit(struct osb_layer_writer *w, struct osb_err *err);
void osb_layer_abort(struct osb_layer_writer *w);

/* The same from a tar file. */
OSB_MUST_CHECK int osb_layer_from_file(const char *dir, const char *tar_path, struct osb_err *err);

/* Copy the tree under src_dirfd (an overlay upper dir) into dir (must not
 * exist), keeping overlayfs whiteouts and opaque/redirect xattrs as they
 * are: the result stacks as a lower layer. */
OSB_MUST_CHECK int osb_layer_copy_tree(int src_dirfd, const char *dir, struct osb_err *err);

/* Write the layer dir as a tar stream (overlay whiteouts turned back into
 * OCI ones) to fd; used by `image export`. */
OSB_MUST_CHECK int osb_layer_to_tar(const char *dir, int fd, struct osb_err *err);

/* rm -rf without following symlinks or crossing into another filesystem;
 * a missing dir is fine. err may be NULL. */
OSB_MUST_CHECK int osb_layer_remove(const char *dir, struct osb_err *err);
/* Best-effort osb_layer_remove for cleanup paths (the caller already has
 * an error to report, or nothing waits on it): a failure is logged. */
void osb_layer_discard(const char *dir);

/* Bytes used by the files of a layer dir (st_blocks * 512, hard links once). */
OSB_MUST_CHECK int osb_layer_size(const char *dir, unsigned long long *bytes, struct osb_err *err);
#endif
