/* The built-in `host` image
 * (<state>/images/host/rootfs: a small skeleton with a private /etc and
 * mount points; the host's /usr, /bin, /sbin and /lib* are bound read-only
 * on top, or mirrored as symlinks on merged-/usr hosts). Pulled, imported
 * and snapshot images live in the server's image store (src/image/), which
 * hands a backend their layer directories. */
#ifndef OSB_RT_HOSTIMAGE_H
#define OSB_RT_HOSTIMAGE_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "runtime/init/spec.h"

#define OSB_IMG_HOST "host"

/* The host image's read-only binds (host dirs that are real directories
 * among /usr /bin /sbin /lib /lib32 /lib64 /libx32). */
struct osb_img_host {
    struct osb_init_bind binds[8];
    size_t n_binds;
    char storage[8][16];
};
/* Build <images>/host if missing or made for another host layout. */
int osb_img_host_prepare(const char *images_dir, struct osb_img_host *h,
                         struct osb_err *err) OSB_MUST_CHECK;
#endif
