#include "runtime/native/image.h"

/* Image names and who uses an image; the store itself is src/image/. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "runtime/native/fsutil.h"

int osb_img_name_check(const char *name, struct osb_err *err)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0)
        return osb_err_set(err, OSB_E_INVALID, "image name is empty");
    if (n > OSB_IMG_NAME_MAX)
        return osb_err_set(err, OSB_E_INVALID, "image name longer than %d characters",
                           OSB_IMG_NAME_MAX);
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` must start with a lower-case letter or digit", name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("._:/-", c);
        if (!ok)
            return osb_err_set(err, OSB_E_INVALID,
                               "image name `%s` has character '%c'; allowed: a-z 0-9 . _ : / -",
                               name, c);
    }
    if (strstr(name, "..") || strstr(name, "//") || name[n - 1] == '/' || strstr(name, "/."))
        return osb_err_set(err, OSB_E_INVALID,
                           "image name `%s` has an empty, hidden or \"..\" path component", name);
    return 0;
}

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
