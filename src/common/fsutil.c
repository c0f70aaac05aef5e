#include "common/fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

int osb_mkdir_p(const char *path, mode_t mode, struct osb_err *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return osb_err_set(err, OSB_E_INVALID, "path too long: %s", path);
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != '\0')
            continue;
        char save = *c;
        *c = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return osb_err_sys(err, "create directory `%s`", p);
        *c = save;
        if (!save)
            return 0;
    }
}
