#include "execd/fs_path.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/xalloc.h"

/* Go's filepath.Clean, written in one pass over the input: `w` is the
 * output length, `dotdot` the prefix ".." may not back up past. */
char *osb_fs_path_clean(const char *p)
{
    size_t n = strlen(p);
    if (n == 0)
        return osb_xstrdup(".");
    char *out = osb_xmalloc(n + 2);
    bool rooted = p[0] == '/';
    size_t r = 0, w = 0, dotdot = 0;
    if (rooted) {
        out[w++] = '/';
        r = dotdot = 1;
    }
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) {
                w--;
                while (w > dotdot && out[w] != '/')
                    w--;
            } else if (!rooted) {
                if (w > 0)
                    out[w++] = '/';
                out[w++] = '.';
                out[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0))
                out[w++] = '/';
            while (r < n && p[r] != '/')
                out[w++] = p[r++];
        }
    }
    if (w == 0)
        out[w++] = '.';
    out[w] = '\0';
    return out;
}

char *osb_fs_path_abs(const char *p)
{
    if (p[0] == '/')
        return osb_fs_path_clean(p);
    char *cwd = getcwd(NULL, 0);
    char *joined = osb_xasprintf("%s/%s", cwd ? cwd : "/", p);
    free(cwd);
    char *out = osb_fs_path_clean(joined);
    free(joined);
    return out;
}

char *osb_fs_path_join(const char *dir, const char *name)
{
    if (!*dir)
        return osb_fs_path_clean(name);
    if (!*name)
        return osb_fs_path_clean(dir);
    char *joined = osb_xasprintf("%s/%s", dir, name);
    char *out = osb_fs_path_clean(joined);
    free(joined);
    return out;
}

char *osb_fs_path_dir(const char *p)
{
    const char *slash = strrchr(p, '/');
    size_t keep = slash ? (size_t)(slash - p) + 1 : 0;
    char *d = osb_xstrndup(p, keep);
    char *out = osb_fs_path_clean(d);
    free(d);
    return out;
}

char *osb_fs_path_base(const char *p)
{
    size_t n = strlen(p);
    if (n == 0)
        return osb_xstrdup(".");
    while (n > 0 && p[n - 1] == '/')
        n--;
    if (n == 0)
        return osb_xstrdup("/");
    size_t start = n;
    while (start > 0 && p[start - 1] != '/')
        start--;
    return osb_xstrndup(p + start, n - start);
}
