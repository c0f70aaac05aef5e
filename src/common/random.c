#include "common/random.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/cleanup.h"

void osb_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            /* getrandom missing (old kernel, seccomp): /dev/urandom. */
            _cleanup_close_ int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            if (fd < 0 || OSB_RETRY(read(fd, p, n)) != (ssize_t)n)
                abort();
            return;
        }
        p += r;
        n -= (size_t)r;
    }
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void osb_random_hex(char *out, size_t nbytes)
{
    unsigned char b[64];
    if (nbytes > sizeof b)
        nbytes = sizeof b;
    osb_random_bytes(b, nbytes);
    to_hex(b, nbytes, out);
}

void osb_random_uuid4(char out[37])
{
    unsigned char b[16];
    osb_random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    char h[33];
    to_hex(b, sizeof b, h);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

bool osb_secret_eq(const char *got, const char *want)
{
    size_t lg = strlen(got), lw = strlen(want), n = lg > lw ? lg : lw;
    unsigned char diff = lg != lw;
    for (size_t i = 0; i < n; i++) {
        unsigned char a = i < lg ? (unsigned char)got[i] : 0;
        unsigned char b = i < lw ? (unsigned char)want[i] : 0;
        diff |= a ^ b;
    }
    return diff == 0;
}
