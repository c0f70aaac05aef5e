#include "runtime/native/sysfs.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include "common/cleanup.h"

struct job {
    int fd, sys_errno;
    const char *step;
};

static int mount_sysfs(struct job *j)
{
    j->step = "create a network namespace";
    if (unshare(CLONE_NEWNET) < 0)
        return -1;
    j->step = "create a sysfs";
    _cleanup_close_ int fs = fsopen("sysfs", FSOPEN_CLOEXEC);
    if (fs < 0 || fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return -1;
    j->step = "mount the sysfs";
    return fsmount(fs, FSMOUNT_CLOEXEC,
                   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
}

/* On a thread of its own: unshare changes only the calling thread's
 * network namespace, and the thread ends with it (the mount keeps the
 * namespace alive). */
static void *make(void *arg)
{
    struct job *j = arg;
    j->fd = mount_sysfs(j);
    j->sys_errno = errno;
    return NULL;
}

int osb_nat_sysfs_open(struct osb_err *err)
{
    struct job j = {.fd = -1};
    pthread_t t;
    int r = pthread_create(&t, NULL, make, &j);
    if (r != 0) {
        errno = r;
        return osb_err_sys(err, "start a thread for the sandboxes' sysfs");
    }
    pthread_join(t, NULL);
    if (j.fd < 0) {
        errno = j.sys_errno;
        return osb_err_sys(err, "the sandboxes' sysfs: %s", j.step);
    }
    return j.fd;
}
