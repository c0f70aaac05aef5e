/* The host-wide claim of a uid range (native/idclaim.h), in a temp dir
 * instead of OSB_IDCLAIM_DIR; another server is a forked child. */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/native/idclaim.h"
#include "tap.h"

static char dir[64];

static int take_as(struct osb_idclaim *c, uint32_t first, uint32_t count, const char *state,
                   struct osb_err *err)
{
    osb_idclaim_init(c);
    memset(err, 0, sizeof *err);
    return osb_idclaim_take(c, dir, first, count, state, err);
}

static int take(struct osb_idclaim *c, uint32_t first, uint32_t count, struct osb_err *err)
{
    return take_as(c, first, count, "/state/x", err);
}

static bool exists(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void test_overlap(void)
{
    struct osb_idclaim a, b, c;
    struct osb_err err;
    OK(take(&a, 100000, 6553600, &err) == 0, "a first claim succeeds");
    OK(exists("100000-6553600"), "its file is named by start and count");
    char p[128], buf[128] = "";
    snprintf(p, sizeof p, "%s/100000-6553600", dir);
    FILE *f = fopen(p, "r");
    OK(f && fgets(buf, sizeof buf, f), "the file is readable");
    if (f)
        fclose(f);
    char want[64];
    snprintf(want, sizeof want, "%d /state/x\n", (int)getpid());
    IS_STR(buf, want, "it holds the pid and the state dir");
    OK(fcntl(a.fd, F_GETFD) & FD_CLOEXEC && fcntl(a.dirfd, F_GETFD) & FD_CLOEXEC,
       "its fds are close-on-exec (helpers and sandboxes never hold the lock)");

    OK(take(&b, 6553600, 65536, &err) < 0 && err.code == OSB_E_EXISTS, "an overlap is refused");
    snprintf(want, sizeof want, "pid %d", (int)getpid());
    OK(strstr(err.msg, "\"6553600:65536\" overlaps \"100000:6553600\"") && strstr(err.msg, want) &&
           strstr(err.msg, "/state/x") && strstr(err.msg, "its own userns_range"),
       "the message names both ranges, the other server's pid and state dir, and the fix");
    printf("# %s\n", err.msg);
    OK(take(&b, 100000, 6553600, &err) < 0 && err.code == OSB_E_EXISTS,
       "the same range is refused too");
    OK(take(&b, 6653600, 65536, &err) == 0, "a range starting where the other ends is fine");
    OK(take(&c, 34464, 65536, &err) == 0, "one ending where the other starts too");
    osb_idclaim_drop(&a);
    OK(!exists("100000-6553600") && a.fd < 0, "drop removes the file");
    OK(take(&a, 6553600, 65536, &err) == 0, "the dropped range can be claimed");
    osb_idclaim_drop(&a);
    osb_idclaim_drop(&b);
    osb_idclaim_drop(&c);
    osb_idclaim_drop(&c);
}

static void test_stale(void)
{
    char p[128];
    snprintf(p, sizeof p, "%s/300000000-655360", dir);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    snprintf(p, sizeof p, "%s/notes", dir);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    struct osb_idclaim a;
    struct osb_err err;
    OK(take(&a, 300000000, 65536, &err) == 0, "an unlocked file (its server died) is no claim");
    OK(!exists("300000000-655360"), "and is removed");
    OK(exists("notes"), "a file not named like a claim is left alone");
    osb_idclaim_drop(&a);
    unlink(p);
}

/* A claim of another process dies with it (SIGKILL: no clean-up). */
static void test_other_process(void)
{
    int ready[2];
    if (pipe(ready) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        struct osb_idclaim c;
        struct osb_err err;
        char ok = take(&c, 1 << 24, 1 << 21, &err) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char ok = 0;
    close(ready[1]);
    OK(read(ready[0], &ok, 1) == 1 && ok == 'y', "another process claims a range");
    close(ready[0]);
    struct osb_idclaim a;
    struct osb_err err;
    char want[32];
    snprintf(want, sizeof want, "pid %d,", (int)pid);
    OK(take(&a, (1 << 24) + (1 << 20), 65536, &err) < 0 && strstr(err.msg, want),
       "an overlap with it is refused, naming its pid");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    OK(take(&a, (1 << 24) + (1 << 20), 65536, &err) == 0, "once it is killed, its range is free");
    char name[32];
    snprintf(name, sizeof name, "%d-%d", 1 << 24, 1 << 21);
    OK(!exists(name), "and its file is gone");
    osb_idclaim_drop(&a);
}

/* A dead server's claim still locked (through a child that had not yet
 * exec'd when it died): its own state dir's next server takes it over,
 * another state dir's server does not. */
static void test_predecessor(void)
{
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char p[128];
    snprintf(p, sizeof p, "%s/5000000-65536", dir);
    int held = open(p, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    dprintf(held, "%d /state/y\n", (int)dead);
    OK(held >= 0 && flock(held, LOCK_EX) == 0, "a claim of a dead pid, locked by another fd");
    struct osb_idclaim a;
    struct osb_err err;
    char want[32];
    snprintf(want, sizeof want, "pid %d,", (int)dead);
    OK(take(&a, 5000000, 65536, &err) < 0 && strstr(err.msg, want),
       "another state dir's server is refused");
    OK(take_as(&a, 5000000, 65536, "/state/y", &err) == 0,
       "the server of the state dir it names takes it over");
    char buf[64] = "", mine[64];
    FILE *f = fopen(p, "r");
    OK(f && fgets(buf, sizeof buf, f), "the claim file is there");
    if (f)
        fclose(f);
    snprintf(mine, sizeof mine, "%d /state/y\n", (int)getpid());
    IS_STR(buf, mine, "and is the new server's");
    close(held);
    osb_idclaim_drop(&a);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/osb-idclaim-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    /* take() makes a missing directory (and its parents) itself. */
    size_t n = strlen(dir);
    snprintf(dir + n, sizeof dir - n, "/userns");
    test_overlap();
    test_stale();
    test_other_process();
    test_predecessor();
    struct stat st;
    OK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the directory is 0700");
    rmdir(dir);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
    return tap_done();
}
