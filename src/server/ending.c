#include "server/ending.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"

/* The program's name, printable and bounded: it goes into logs and JSON. */
static void program_of(json_t *spec, char *out, size_t n)
{
    json_t *ep = NULL;
    const char *p = NULL;
    if (osb_json_array(spec, "entrypoint", false, &ep, NULL) > 0)
        p = json_string_value(json_array_get(ep, 0));
    size_t k = 0;
    for (; p && *p && k + 1 < n && k < 200; p++)
        out[k++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
    out[k] = '\0';
}

static void entrypoint_end(json_t *spec, const struct osb_endreport *r, struct osb_ending *out)
{
    out->state = OSB_ST_FAILED;
    out->reason = "ENTRYPOINT_FAILED";
    switch (r->kind) {
    case OSB_END_EXITED:
        if (r->value == 0) {
            out->state = OSB_ST_TERMINATED;
            out->reason = "ENTRYPOINT_EXITED";
        }
        snprintf(out->message, sizeof out->message, "entrypoint exited with code %d", r->value);
        return;
    case OSB_END_SIGNALED: {
        const char *abbrev = sigabbrev_np(r->value);
        snprintf(out->message, sizeof out->message, "entrypoint was killed by signal %d%s%s%s",
                 r->value, abbrev ? " (SIG" : "", abbrev ? abbrev : "", abbrev ? ")" : "");
        return;
    }
    case OSB_END_EXEC_FAILED:
    default: {
        char prog[256];
        program_of(spec, prog, sizeof prog);
        snprintf(out->message, sizeof out->message, "entrypoint %s could not be executed: %s",
                 prog[0] ? prog : "(none)", strerror(r->value));
        return;
    }
    }
}

void osb_ending_describe(json_t *spec, const struct osb_rt_end *end, struct osb_ending *out)
{
    switch (end->how) {
    case OSB_RT_END_REPORTED: entrypoint_end(spec, &end->report, out); return;
    case OSB_RT_END_BAD_REPORT:
        out->state = OSB_ST_FAILED;
        out->reason = "SANDBOX_EXITED";
        snprintf(out->message, sizeof out->message,
                 "The sandbox's init process (execd) sent an unreadable report; the sandbox "
                 "was stopped.");
        return;
    case OSB_RT_END_LIMIT:
        out->state = OSB_ST_FAILED;
        out->reason = end->limit == OSB_RT_LIMIT_MEMORY ? "OOM_KILLED" : "PIDS_LIMIT";
        snprintf(out->message, sizeof out->message,
                 end->limit == OSB_RT_LIMIT_MEMORY
                     ? "The sandbox reached its memory limit (resourceLimits.memory) and the "
                       "host's OOM killer ended it."
                     : "The sandbox reached its pids limit (resourceLimits.pids) on the host and "
                       "ended.");
        return;
    case OSB_RT_END_PID1_EXITED:
    default:
        out->state = OSB_ST_FAILED;
        out->reason = "SANDBOX_EXITED";
        snprintf(out->message, sizeof out->message, "The sandbox's init process (execd) exited.");
        return;
    }
}
