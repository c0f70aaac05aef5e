/* Images of the native runtime, kept under <state>/images:
 *   host/rootfs         the built-in `host` image: a small skeleton (a
 *                       private /etc and mount points); the host's /usr,
 *                       /bin, /sbin and /lib* are bound read-only on top
 *                       (or mirrored as symlinks on merged-/usr hosts)
 *   <dir>/rootfs        an imported root filesystem; <dir> is the name
 *                       with '/' spelled '+' and ':' spelled '@'
 *   <dir>/meta          "<size bytes> <created ms>\n"
 * Sandboxes use an image's rootfs as the read-only lower layer of their
 * overlay, so an image in use is never changed or removed. */
#ifndef OSB_RT_IMAGE_H
#define OSB_RT_IMAGE_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/init/spec.h"

#define OSB_IMG_HOST "host"
#define OSB_IMG_NAME_MAX 200

/* [a-z0-9][a-z0-9._:/-]*, at most OSB_IMG_NAME_MAX, no "..", no empty
 * path component, no trailing '/'. */
int osb_img_name_check(const char *name, struct osb_err *err);

/* The host image's read-only binds (host dirs that are real directories
 * among /usr /bin /sbin /lib /lib32 /lib64 /libx32). */
struct osb_img_host {
    struct osb_init_bind binds[8];
    size_t n_binds;
    char storage[8][16];
};
/* Build <images>/host if missing or made for another host layout. */
int osb_img_host_prepare(const char *images_dir, struct osb_img_host *h, struct osb_err *err);

/* The lower dir of an image (NOTFOUND if it does not exist). */
int osb_img_lower(const char *images_dir, const char *name, char *out, size_t n,
                  struct osb_err *err);
/* Unpack a tar (any compression libarchive reads) as image name. Blocking:
 * meant for the CLI. The archive is extracted by a child process
 * chroot()ed into a fresh directory, with libarchive's secure flags
 * (no "..", no absolute paths, no extraction through symlinks); any
 * refused entry fails the whole import and nothing is left behind. */
int osb_img_import(const char *images_dir, const char *name, const char *tar_path,
                   struct osb_err *err);
/* Refuses (EXISTS) while a sandbox under sandboxes_dir uses the image. */
int osb_img_remove(const char *images_dir, const char *sandboxes_dir, const char *name,
                   struct osb_err *err);

struct osb_img_info {
    char name[256];
    uint64_t size_bytes;
    int64_t created_ms;
};
/* The host image first, then imported ones by name; returns the count
 * written (at most max). */
int osb_img_list(const char *images_dir, struct osb_img_info *out, size_t max,
                 struct osb_err *err);
#endif
