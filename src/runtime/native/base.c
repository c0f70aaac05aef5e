/* What every file of the native backend needs: the backend's lifetime
 * (freed once closed and its last handle is), its children, sandbox ids and
 * dirs, freezing, liveness and the list of creates in flight. It calls no
 * other file of the backend (state.h gives the order). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "common/fstree.h"
#include "runtime/native/state.h"

/* ------------------------------------------------------------ lifetime */

void osb_nat_maybe_free(struct osb_nat *rt)
{
    if (!rt->closing || rt->open_handles > 0)
        return;
    free(rt->state_dir);
    free(rt->sandboxes_dir);
    free(rt->images_dir);
    free(rt->execd_path);
    free(rt->init_path);
    free(rt->kids);
    free(rt->spawn_stack);
    osb_idr_free(&rt->idr);
    osb_idclaim_drop(&rt->claim);
    if (rt->sandboxes_fd >= 0)
        close(rt->sandboxes_fd);
    if (rt->sysfs_fd >= 0)
        close(rt->sysfs_fd);
    free(rt);
}

/* ------------------------------------------------------------ children */

void osb_nat_kid_add(struct osb_nat *rt, pid_t pid, bool expected)
{
    if (rt->n_kids == rt->cap_kids) {
        rt->cap_kids = rt->cap_kids ? rt->cap_kids * 2 : 64;
        rt->kids = osb_xrealloc(rt->kids, rt->cap_kids * sizeof *rt->kids);
    }
    rt->kids[rt->n_kids++] = (struct osb_nat_kid){pid, expected};
}

static struct osb_nat_kid *find_kid(struct osb_nat *rt, pid_t pid)
{
    for (size_t i = 0; i < rt->n_kids; i++)
        if (rt->kids[i].pid == pid)
            return &rt->kids[i];
    return NULL;
}

void osb_nat_kid_expect(struct osb_nat *rt, pid_t pid)
{
    struct osb_nat_kid *k = find_kid(rt, pid);
    if (k)
        k->expected = true;
}

/* k was reaped: it leaves the list (the last one takes its place). */
static void drop_kid(struct osb_nat *rt, struct osb_nat_kid *k)
{
    rt->expected_reaped += k->expected;
    *k = rt->kids[--rt->n_kids];
}

/* waitpid(k->pid, WNOHANG); true if it was reaped (k is then gone). */
static bool reap(struct osb_nat *rt, struct osb_nat_kid *k)
{
    pid_t r = waitpid(k->pid, NULL, WNOHANG);
    if (r == 0 || (r < 0 && errno != ECHILD))
        return false;
    drop_kid(rt, k);
    return true;
}

bool osb_nat_kid_reap(struct osb_nat *rt, pid_t pid)
{
    struct osb_nat_kid *k = find_kid(rt, pid);
    return !k || reap(rt, k);
}

/* One waitpid per kid: O(live sandboxes) syscalls, only when a zombie
 * that is not ours (libuv reaps its own) hides the ones behind it. */
static void reap_each(struct osb_nat *rt)
{
    for (size_t i = 0; i < rt->n_kids;)
        if (!reap(rt, &rt->kids[i]))
            i++;
}

static bool reap_expected(struct osb_nat *rt)
{
    bool any = false;
    for (size_t i = 0; i < rt->n_kids;)
        if (rt->kids[i].expected && reap(rt, &rt->kids[i]))
            any = true;
        else
            i++;
    return any;
}

/* An expected exit reaped since the last signal (a helper reaped at its
 * result's EOF, a PID 1 right after its destroy) explains the signal too.
 * A signal that coalesced an expected exit with another leaves the other
 * to its watch (which reaps its PID 1) or to the next signal's walk. The
 * walk asks the kernel which children are zombies (waitid WNOWAIT peeks
 * and leaves the zombie for its owner) instead of a waitpid per live
 * sandbox. */
void osb_nat_reap_all(struct osb_nat *rt)
{
    bool explained = reap_expected(rt) || rt->expected_reaped > 0;
    rt->expected_reaped = 0;
    if (explained)
        return;
    for (;;) {
        siginfo_t si = {0};
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        struct osb_nat_kid *k = find_kid(rt, si.si_pid);
        if (!k) {
            reap_each(rt);
            return;
        }
        if (!reap(rt, k))
            return; /* not reapable after all: never spin on it */
    }
}

/* ------------------------------------------------------------ ids, dirs */

bool osb_nat_valid_id(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > OSB_RT_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
    }
    return true;
}

int osb_nat_check_id(const char *id, struct osb_err *err)
{
    if (!osb_nat_valid_id(id))
        return osb_err_set(err, OSB_E_INVALID, "sandbox id `%s` must be 1-%d of [a-zA-Z0-9-]",
                           id ? id : "", OSB_RT_ID_MAX);
    return 0;
}

void osb_nat_sandbox_dir(const struct osb_nat *rt, const char *id, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", rt->sandboxes_dir, id);
}

void osb_nat_load_set(const struct osb_nat *rt, const char *id, struct osb_cg_set *s)
{
    char dir[PATH_MAX];
    osb_nat_sandbox_dir(rt, id, dir, sizeof dir);
    osb_cg_set_load(&rt->plan, id, dir, s);
}

/* ------------------------------------------------------------ freeze, liveness */

int osb_nat_set_frozen(struct osb_nat *rt, const char *id, bool freeze, struct osb_err *err)
{
    struct osb_cg_set s;
    if (osb_nat_check_id(id, err) < 0)
        return -1;
    osb_nat_load_set(rt, id, &s);
    if (!osb_cg_exists(&s))
        return osb_err_set(err, OSB_E_NOTFOUND, "sandbox `%s` not found", id);
    if (osb_cg_freeze(&s, freeze, err) < 0)
        return osb_err_wrap(err, "%s `%s`", freeze ? "pause" : "resume", id);
    return 0;
}

/* /proc/<pid>/stat: field 22 (start time) and the state letter. */
static bool proc_stat(pid_t pid, uint64_t *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (osb_fs_read(path, buf, sizeof buf) <= 0)
        return false;
    char *p = strrchr(buf, ')');
    if (!p || !p[1])
        return false;
    *state = p[2];
    p++;
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    *start = p ? strtoull(p + 1, NULL, 10) : 0;
    return p != NULL;
}

bool osb_nat_alive(struct osb_rt *rt, const char *id, const struct osb_rt_handle *h)
{
    (void)rt;
    (void)id;
    uint64_t start;
    char state;
    if (!h || h->pid <= 0 || !proc_stat(h->pid, &start, &state))
        return false;
    return start == h->start_time && state != 'Z' && state != 'X';
}

/* ------------------------------------------------------------ creates in flight */

struct osb_nat_create *osb_nat_find_create(struct osb_nat *rt, const char *id)
{
    for (struct osb_nat_create *c = rt->creates; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            return c;
    return NULL;
}

/* A helper still building this sandbox: stop it first so that it cannot
 * create anything after we cleaned up. */
void osb_nat_stop_helper(struct osb_nat *rt, const char *id)
{
    struct osb_nat_create *c = osb_nat_find_create(rt, id);
    if (!c)
        return;
    c->destroyed = true;
    kill(c->helper, SIGKILL);
    if (OSB_RETRY(waitpid(c->helper, NULL, 0)) == c->helper) {
        struct osb_nat_kid *k = find_kid(rt, c->helper);
        if (k)
            drop_kid(rt, k);
    }
}
