#include "runtime/native/image.h"

/* Image names and who uses an image; the store itself is src/image/. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "runtime/native/fsutil.h"

bool osb_img_user_of(const char *sandboxes_dir, const char *name, char *id, size_t n)
{
    if (n)
        id[0] = '\0';
    _cleanup_closedir_ DIR *d = opendir(sandboxes_dir);
    struct dirent *e;
    char want[300];
    snprintf(want, sizeof want, "image %s\n", name);
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[PATH_MAX], rec[8192];
        snprintf(p, sizeof p, "%s/%s/%s", sandboxes_dir, e->d_name, OSB_SANDBOX_RECORD);
        if (osb_rtfs_read(p, rec, sizeof rec) >= 0 && strncmp(rec, want, strlen(want)) == 0) {
            if (n)
                snprintf(id, n, "%s", e->d_name);
            return true;
        }
    }
    return false;
}
