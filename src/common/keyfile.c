#include "common/keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/random.h"

int osb_read_all(int fd, void *buf, size_t cap, size_t *n)
{
    *n = 0;
    while (*n < cap) {
        ssize_t r = read(fd, (char *)buf + *n, cap - *n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        *n += (size_t)r;
    }
    return 0;
}

int osb_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int make_key(const char *path, size_t len, struct osb_err *err)
{
    unsigned char key[64];
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    osb_random_bytes(key, len);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int r = fd >= 0 && osb_write_all(fd, key, len) == 0 && fsync(fd) == 0 ? 0 : -1;
    explicit_bzero(key, sizeof key);
    if (fd >= 0 && close(fd) < 0)
        r = -1;
    if (r == 0 && link(tmp, path) < 0 && errno != EEXIST) /* EEXIST: another made one */
        r = -1;
    int e = errno;
    unlink(tmp);
    errno = e;
    return r < 0 ? osb_err_sys(err, "create %s", path) : 0;
}

static int read_key(const char *path, unsigned char *key, size_t len, struct osb_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return osb_err_sys(err, "open %s", path);
    struct stat sb;
    size_t n = 0;
    int r = 0;
    if (fstat(fd, &sb) < 0)
        r = osb_err_sys(err, "stat %s", path);
    else if (!S_ISREG(sb.st_mode) || (sb.st_mode & 077) || sb.st_uid != geteuid() ||
             (size_t)sb.st_size != len)
        r = osb_err_set(err, OSB_E_INVALID,
                        "%s must be a file of %zu bytes, owned by the server, mode 0600", path,
                        len);
    else if (osb_read_all(fd, key, len, &n) < 0 || n != len)
        r = osb_err_sys(err, "read %s", path);
    close(fd);
    return r;
}

int osb_keyfile_load(const char *path, unsigned char *key, size_t len, struct osb_err *err)
{
    if (len == 0 || len > 64 || strlen(path) > 4000)
        return osb_err_set(err, OSB_E_INVALID, "key file %s: bad length or name", path);
    if (access(path, F_OK) < 0 && errno == ENOENT && make_key(path, len, err) < 0)
        return -1;
    return read_key(path, key, len, err);
}
