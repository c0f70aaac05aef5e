/* A gvisor sandbox's output into its bounded log (runtime/logdrain.h).
 *
 * runsc passes only stdio into the sandbox, so execd's stdout and stderr
 * are runsc create's: a named FIFO in the host-only sandbox dir, which the
 * Sentry holds open read-write. The server opens it read-only and drains
 * it on the loop; after a restart it opens it again by name (nothing to
 * take from the sandbox's fd table, which lives in the Sentry). The
 * Sentry's own read end keeps writes from failing while no server reads;
 * they block once the FIFO is full, as a native sandbox's pipe. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "runtime/gvisor/state.h"
#include "runtime/logdrain.h"

struct osb_gv_log {
    struct osb_gv_log *next;
    char id[OSB_RT_ID_MAX + 1];
    struct osb_logdrain *drain;
};

int osb_gv_fifo(const char *dir, const char *name, struct osb_err *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (mkfifo(path, 0600) < 0)
        return osb_err_sys(err, "mkfifo %s", path);
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return osb_err_sys(err, "open %s", path);
    /* Blocking for the writers: a full FIFO makes them wait, not fail. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(fd);
        return osb_err_sys(err, "fcntl %s", path);
    }
    return fd;
}

void osb_gv_log_tail(int fd, char *out, size_t n)
{
    size_t len = 0;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0) {
        char chunk[4096];
        ssize_t r;
        /* Keep the last n - 1 bytes. */
        while ((r = read(fd, chunk, sizeof chunk)) > 0) {
            size_t k = (size_t)r < n - 1 ? (size_t)r : n - 1;
            if (len + k > n - 1) {
                size_t drop = len + k - (n - 1);
                memmove(out, out + drop, len - drop);
                len -= drop;
            }
            memcpy(out + len, chunk + (size_t)r - k, k);
            len += k;
        }
        fcntl(fd, F_SETFL, fl);
    }
    while (len && (out[len - 1] == '\n' || out[len - 1] == ' '))
        len--;
    out[len] = '\0';
}

static struct osb_gv_log *find_log(struct osb_gv *rt, const char *id)
{
    for (struct osb_gv_log *l = rt->logs; l; l = l->next)
        if (strcmp(l->id, id) == 0)
            return l;
    return NULL;
}

int osb_gv_attach_log(struct osb_gv *rt, const char *id, const struct osb_rt_handle *h,
                      struct osb_err *err)
{
    if (find_log(rt, id))
        return 0;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    osb_gv_dir(rt, id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/" OSB_GV_LOG_FIFO, dir);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT)
        return 0; /* started before the bounded log: it writes the file itself */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
        osb_err_sys(err, "open the output FIFO %s", path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct osb_logdrain *d;
    if (osb_logdrain_open(rt->loop, fd, h->log_path, OSB_RT_LOG_MAX_BYTES, OSB_RT_LOG_KEEP_BYTES,
                          &d, err) < 0)
        return -1;
    struct osb_gv_log *l = osb_xcalloc(1, sizeof *l);
    snprintf(l->id, sizeof l->id, "%s", id);
    l->drain = d;
    l->next = rt->logs;
    rt->logs = l;
    rt->open_handles++;
    return 0;
}

static void on_log_closed(void *ud)
{
    struct osb_gv *rt = ud;
    rt->open_handles--;
    osb_gv_maybe_free(rt);
}

void osb_gv_close_log(struct osb_gv *rt, const char *id, bool flush)
{
    for (struct osb_gv_log **p = &rt->logs; *p; p = &(*p)->next) {
        struct osb_gv_log *l = *p;
        if (strcmp(l->id, id) != 0)
            continue;
        *p = l->next;
        if (flush)
            osb_logdrain_flush(l->drain);
        osb_logdrain_close(l->drain, on_log_closed, rt);
        free(l);
        return;
    }
}

void osb_gv_log_note(struct osb_gv *rt, const char *id, const char *text)
{
    struct osb_gv_log *l = find_log(rt, id);
    if (l)
        osb_logdrain_note(l->drain, text);
}

void osb_gv_close_logs(struct osb_gv *rt)
{
    while (rt->logs)
        osb_gv_close_log(rt, rt->logs->id, false);
}
