#include "common/ctl.h"

long osb_ctl_find(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return (long)i;
    }
    return -1;
}

int osb_ctl_check(const char *what, const char *s, size_t n, struct osb_err *err)
{
    long at = osb_ctl_find(s, n);
    if (at < 0)
        return 0;
    return osb_err_set(err, OSB_E_INVALID, "%s contains control byte 0x%02x", what,
                       (unsigned char)s[at]);
}
