/* src/server/apierr.c: the code table decides the status; a "#reason" row
 * keeps its own status under the same wire code; an osb_err becomes an
 * apierr with the table's status, or its own for a code not in the table. */
#include <string.h>

#include "server/apierr.h"
#include "tap.h"

static void test_table(void)
{
    IS_INT(osb_apierr_status("SANDBOX::NOT_FOUND"), 404, "NOT_FOUND is 404");
    IS_INT(osb_apierr_status("SANDBOX::NOT_RUNNING"), 409, "NOT_RUNNING is 409");
    IS_INT(osb_apierr_status("EGRESS::METHOD_NOT_ALLOWED"), 405, "egress 405");
    IS_INT(osb_apierr_status("SANDBOX::INVALID_EXPIRATION"), 400, "a bad expiry is 400");
    IS_INT(osb_apierr_status("SANDBOX::INVALID_EXPIRATION#manual"), 409,
           "an expiry on a manual-cleanup sandbox is 409");
    IS_INT(osb_apierr_status("SANDBOX::CAPACITY"), 429, "admission's CAPACITY is 429");
    IS_INT(osb_apierr_status("SANDBOX::IDEMPOTENCY_KEY_REUSED"), 409, "a reused key is 409");
    IS_INT(osb_apierr_status("NO::SUCH_CODE"), 0, "an unknown code has no status");
}

static void test_raise(void)
{
    struct osb_apierr e;
    IS_INT(osb_apierr(&e, "SNAPSHOT::NOT_FOUND", "Snapshot %s not found.", "x"), -1, "returns -1");
    IS_INT(e.status, 404, "status from the table");
    IS_STR(e.code, "SNAPSHOT::NOT_FOUND", "wire code");
    IS_STR(e.msg, "Snapshot x not found.", "message formatted");
    osb_apierr(&e, "SANDBOX::INVALID_EXPIRATION#manual", "no expiry");
    IS_INT(e.status, 409, "a #reason row keeps its status");
    IS_STR(e.code, "SANDBOX::INVALID_EXPIRATION", "and sends the code without the reason");
    osb_apierr(&e, "NO::SUCH_CODE", "oops");
    IS_INT(e.status, 500, "a code not in the table is a 500 (and logged)");
    IS_STR(e.code, "NO::SUCH_CODE", "keeping its code");
}

static void test_from_err(void)
{
    struct osb_err err = {0};
    struct osb_apierr e;
    osb_err_set(&err, OSB_E_INVALID, "field 'x' is bad");
    IS_INT(osb_apierr_from_err(&e, &err, "SANDBOX::START_FAILED"), -1, "returns -1");
    IS_INT(e.status, 500, "the table's status wins over the error's");
    IS_STR(e.msg, "field 'x' is bad", "the error's message");
    osb_err_set(&err, OSB_E_EXISTS, "busy");
    osb_apierr_from_err(&e, &err, "NO::SUCH_CODE");
    IS_INT(e.status, 409, "a code not in the table takes osb_err_http_status");
}

int main(void)
{
    test_table();
    test_raise();
    test_from_err();
    return tap_done();
}
