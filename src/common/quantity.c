/* Kubernetes quantities (see quantity.h). The number is kept exact as an
 * integer mantissa times a power of ten and a power of two, so "1.5Gi" is
 * 15 * 10^-1 * 2^30 with no floating point rounding. */
#include "common/quantity.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Significant digits kept: 10^30 fits in 128 bits with room for 2^60. */
#define MAX_DIGITS 30
#define MAX_EXP10 60

typedef unsigned __int128 u128;

struct qty {
    u128 mant;
    int exp10; /* value = mant * 10^exp10 * 2^pow2 */
    int pow2;
};

static int fail(int e)
{
    errno = e;
    return -1;
}

/* digits [ '.' digits ]: at least one digit. Leading zeros of the whole
 * part and trailing zeros of the fraction do not count toward the cap. */
static int number(const char **sp, struct qty *q)
{
    const char *s = *sp;
    int ndig = 0, pending_zeros = 0, seen = 0;
    bool frac = false;
    for (;; s++) {
        if (*s == '.' && !frac) {
            frac = true;
            continue;
        }
        if (*s < '0' || *s > '9')
            break;
        seen++;
        if (*s == '0' && (frac || q->mant == 0)) {
            if (frac)
                pending_zeros++; /* only kept if a non-zero digit follows */
            continue;
        }
        if (q->mant == 0) { /* zeros before the first significant digit */
            q->exp10 -= pending_zeros;
            pending_zeros = 0;
        }
        for (; pending_zeros > 0; pending_zeros--, ndig++, q->exp10--)
            q->mant *= 10;
        if (++ndig > MAX_DIGITS)
            return fail(ERANGE);
        q->mant = q->mant * 10 + (u128)(*s - '0');
        if (frac)
            q->exp10--;
    }
    if (!seen)
        return fail(EINVAL);
    *sp = s;
    return 0;
}

static int exponent(const char *s, struct qty *q)
{
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return fail(EINVAL);
    int e = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return fail(EINVAL);
        if (e > 1000)
            return fail(ERANGE);
        e = e * 10 + (*s - '0');
    }
    q->exp10 += neg ? -e : e;
    return 0;
}

static int suffix(const char *s, struct qty *q)
{
    static const char bin[] = "KMGTPE", dec[] = "kMGTPE";
    if (!*s)
        return 0;
    if ((*s == 'e' || *s == 'E') && s[1] && s[1] != 'i')
        return exponent(s + 1, q);
    const char *b = strchr(bin, *s);
    if (b && *s && s[1] == 'i' && !s[2]) {
        q->pow2 += 10 * (int)(b - bin + 1);
        return 0;
    }
    if (s[1])
        return fail(EINVAL);
    static const struct {
        char c;
        int e;
    } small[] = {{'n', -9}, {'u', -6}, {'m', -3}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
        if (*s == small[i].c) {
            q->exp10 += small[i].e;
            return 0;
        }
    const char *d = strchr(dec, *s);
    if (!d || !*s)
        return fail(EINVAL);
    q->exp10 += 3 * (int)(d - dec + 1);
    return 0;
}

/* mant * 10^exp10 * 2^pow2, rounded up, into an int64_t. */
static int evaluate(struct qty *q, int64_t *out)
{
    const u128 cap = (u128)1 << 126;
    u128 v = q->mant;
    if (v == 0) {
        *out = 0;
        return 0;
    }
    if (q->exp10 > MAX_EXP10)
        return fail(ERANGE);
    for (; q->pow2 > 0; q->pow2--)
        if ((v <<= 1) > cap)
            return fail(ERANGE);
    for (; q->exp10 > 0; q->exp10--)
        if ((v *= 10) > cap)
            return fail(ERANGE);
    if (q->exp10 < -38) {
        v = 1; /* a positive amount far below one unit rounds up to one */
    } else {
        u128 d = 1;
        for (; q->exp10 < 0; q->exp10++)
            d *= 10;
        v = v / d + (v % d != 0);
    }
    if (v > (u128)INT64_MAX)
        return fail(ERANGE);
    *out = (int64_t)v;
    return 0;
}

static int parse(const char *s, int extra_exp10, int64_t *out)
{
    struct qty q = {0, extra_exp10, 0};
    if (!s || !*s)
        return fail(EINVAL);
    if (*s == '+')
        s++;
    if (number(&s, &q) < 0 || suffix(s, &q) < 0)
        return -1;
    return evaluate(&q, out);
}

int osb_quantity_bytes(const char *s, int64_t *out)
{
    return parse(s, 0, out);
}

int osb_quantity_millicpu(const char *s, int64_t *out)
{
    return parse(s, 3, out);
}
