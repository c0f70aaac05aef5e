/* Destroy and stop (kill the cgroup, remove cgroups and the state dir, but
 * the log for stop) and the removal of orphans after a crash. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "runtime/init/spec.h"
#include "common/fstree.h"
#include "runtime/native/state.h"

/* Everything in the sandbox dir but its log. */
static int remove_all_but_log(const char *dir, struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : osb_err_sys(err, "open `%s`", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, OSB_SANDBOX_LOG) == 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (osb_fs_remove_tree(path, err) < 0)
            return -1;
    }
    return 0;
}

static int destroy_id(struct osb_nat *rt, const char *id, bool keep_log, struct osb_err *err)
{
    char dir[PATH_MAX];
    struct osb_cg_set s;
    pid_t pid1 = osb_nat_cancel_watches(rt, id);
    osb_nat_close_log(rt, id, keep_log);
    osb_nat_stop_helper(rt, id);
    osb_nat_sandbox_dir(rt, id, dir, sizeof dir);
    osb_cg_set_load(&rt->plan, id, dir, &s);
    if (osb_cg_kill(&s, err) < 0 || osb_cg_remove(&s, err) < 0 ||
        (keep_log ? remove_all_but_log(dir, err) : osb_fs_remove_tree(dir, err)) < 0)
        return osb_err_wrap(err, "%s sandbox `%s`", keep_log ? "stop" : "destroy", id);
    /* Its userns record went with the dir: the range is free again. */
    osb_idr_release(&rt->idr, id);
    /* Reap PID 1 now if it is already gone; SIGCHLD reaps it by pid
     * otherwise (an unwatched one: the next walk). */
    if (pid1 > 0) {
        osb_nat_kid_expect(rt, pid1);
        osb_nat_kid_reap(rt, pid1);
    } else {
        osb_nat_reap_all(rt);
    }
    return 0;
}

void osb_nat_destroy_quiet(struct osb_nat *rt, const char *id)
{
    struct osb_err err = {0};
    if (destroy_id(rt, id, false, &err) < 0)
        osb_warn("%s", err.msg);
}

int osb_nat_destroy(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    return destroy_id(osb_nat_of(rt), id, false, err);
}

int osb_nat_stop(struct osb_rt *rt, const char *id, struct osb_err *err)
{
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    return destroy_id(osb_nat_of(rt), id, true, err);
}

/* ------------------------------------------------------------ orphans */

static bool known_id(const char *const *known, const char *id)
{
    for (size_t i = 0; known && known[i]; i++)
        if (strcmp(known[i], id) == 0)
            return true;
    return false;
}

static int destroy_unknown_in(struct osb_nat *rt, const char *dir, const char *const *known,
                              struct osb_err *err)
{
    _cleanup_closedir_ DIR *d = opendir(dir);
    if (!d)
        return 0;
    int r = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || !osb_nat_valid_id(e->d_name) || known_id(known, e->d_name) ||
            osb_nat_find_create(rt, e->d_name))
            continue;
        osb_info("removing orphaned sandbox %s", e->d_name);
        struct osb_err one = {0};
        if (destroy_id(rt, e->d_name, false, &one) < 0) {
            if (r == 0 && err)
                *err = one;
            r = -1;
        }
    }
    return r;
}

int osb_nat_cleanup_orphans(struct osb_rt *base, const char *const *known, struct osb_err *err)
{
    struct osb_nat *rt = osb_nat_of(base);
    int r = destroy_unknown_in(rt, rt->sandboxes_dir, known, err);
    for (size_t i = 0; i < rt->plan.n; i++)
        if (destroy_unknown_in(rt, rt->plan.bases[i].base, known, err) < 0)
            r = -1;
    return r;
}
