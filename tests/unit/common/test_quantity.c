/* src/common/quantity: Kubernetes quantities for bytes and millicpu. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "common/quantity.h"
#include "tap.h"

static void bytes_is(const char *s, int64_t want)
{
    int64_t v = -1;
    char what[128];
    snprintf(what, sizeof what, "bytes \"%s\"", s);
    OK(osb_quantity_bytes(s, &v) == 0, what);
    IS_INT(v, want, what);
}

static void cpu_is(const char *s, int64_t want)
{
    int64_t v = -1;
    char what[128];
    snprintf(what, sizeof what, "millicpu \"%s\"", s);
    OK(osb_quantity_millicpu(s, &v) == 0, what);
    IS_INT(v, want, what);
}

static void bytes_bad(const char *s, int want_errno)
{
    int64_t v = 12345;
    char what[128];
    snprintf(what, sizeof what, "bytes \"%s\" rejected", s ? s : "(null)");
    errno = 0;
    OK(osb_quantity_bytes(s, &v) < 0, what);
    IS_INT(errno, want_errno, what);
    IS_INT(v, 12345, "output untouched on failure");
}

static void cpu_bad(const char *s, int want_errno)
{
    int64_t v = 12345;
    char what[128];
    snprintf(what, sizeof what, "millicpu \"%s\" rejected", s);
    errno = 0;
    OK(osb_quantity_millicpu(s, &v) < 0, what);
    IS_INT(errno, want_errno, what);
}

static void test_bytes(void)
{
    bytes_is("0", 0);
    bytes_is("1", 1);
    bytes_is("1000", 1000);
    bytes_is("+5", 5);
    bytes_is("1Ki", 1024);
    bytes_is("512Mi", 512LL << 20);
    bytes_is("1Gi", 1LL << 30);
    bytes_is("2Ti", 2LL << 40);
    bytes_is("1Pi", 1LL << 50);
    bytes_is("7Ei", 7LL << 60);
    bytes_is("1k", 1000);
    bytes_is("1M", 1000000);
    bytes_is("1G", 1000000000);
    bytes_is("3T", 3000000000000LL);
    bytes_is("1P", 1000000000000000LL);
    bytes_is("9E", 9000000000000000000LL);
    bytes_is("1.5Gi", 1610612736);
    bytes_is("0.5Ki", 512);
    bytes_is(".5Mi", 524288);
    bytes_is("1.", 1);
    bytes_is("1.25k", 1250);
    bytes_is("0001Ki", 1024);
    bytes_is("1.000000000000000000000000000000000000Gi", 1LL << 30);
    bytes_is("1e3", 1000);
    bytes_is("1E6", 1000000);
    bytes_is("5e+2", 500);
    bytes_is("12e-1", 2);
    bytes_is("1500m", 2);
    bytes_is("1000m", 1);
    bytes_is("1u", 1);
    bytes_is("1n", 1);
    bytes_is("0.1", 1);
    bytes_is("0m", 0);
    bytes_is("0.000Gi", 0);
    bytes_is("9223372036854775807", INT64_MAX);
    bytes_is("0.0000000000000000000000000000000000000000001", 1);
}

static void test_bytes_bad(void)
{
    bytes_bad(NULL, EINVAL);
    bytes_bad("", EINVAL);
    bytes_bad("lots", EINVAL);
    bytes_bad("-1", EINVAL);
    bytes_bad("-1Gi", EINVAL);
    bytes_bad("1 Gi", EINVAL);
    bytes_bad(" 1", EINVAL);
    bytes_bad("1Gi ", EINVAL);
    bytes_bad("1K", EINVAL);
    bytes_bad("1ki", EINVAL);
    bytes_bad("1gi", EINVAL);
    bytes_bad("1GiB", EINVAL);
    bytes_bad("1GB", EINVAL);
    bytes_bad("1e", EINVAL);
    bytes_bad("1e+", EINVAL);
    bytes_bad("1e3.5", EINVAL);
    bytes_bad("1.2.3", EINVAL);
    bytes_bad(".", EINVAL);
    bytes_bad("Gi", EINVAL);
    bytes_bad("0x10", EINVAL);
    bytes_bad("1_000", EINVAL);
    bytes_bad("++1", EINVAL);
    bytes_bad("8Ei", ERANGE);
    bytes_bad("9223372036854775808", ERANGE);
    bytes_bad("10E", ERANGE);
    bytes_bad("1e100", ERANGE);
    bytes_bad("1e99999999999", ERANGE);
    bytes_bad("1234567890123456789012345678901", ERANGE);
    bytes_bad("99999999999999999999Ei", ERANGE);
}

static void test_cpu(void)
{
    cpu_is("500m", 500);
    cpu_is("1", 1000);
    cpu_is("2.5", 2500);
    cpu_is("0.1", 100);
    cpu_is("100m", 100);
    cpu_is("0", 0);
    cpu_is("0.0001", 1);
    cpu_is("1.0005", 1001);
    cpu_is("250000u", 250);
    cpu_is("1k", 1000000);
    cpu_is("64", 64000);
    cpu_is("1e-3", 1);
    cpu_is(".5", 500);
    cpu_bad("lots", EINVAL);
    cpu_bad("", EINVAL);
    cpu_bad("-1", EINVAL);
    cpu_bad("1 m", EINVAL);
    cpu_bad("1mm", EINVAL);
    cpu_bad("1cores", EINVAL);
    cpu_bad("9223372036854776", ERANGE);
    cpu_bad("10E", ERANGE);
}

int main(void)
{
    test_bytes();
    test_bytes_bad();
    test_cpu();
    return tap_done();
}
