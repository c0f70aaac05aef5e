/* src/server/ending: the state, reason and message of a sandbox that
 * ended on its own. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "server/ending.h"
#include "tap.h"

static struct osb_ending describe(json_t *spec, int how, enum osb_end_kind kind, int value)
{
    struct osb_rt_end end = {.how = how, .report = {kind, value}};
    struct osb_ending out;
    osb_ending_describe(spec, &end, &out);
    return out;
}

int main(void)
{
    json_t *spec = json_pack("{s:[s,s]}", "entrypoint", "/no/such/program", "arg");
    struct osb_ending e = describe(spec, OSB_RT_END_REPORTED, OSB_END_EXITED, 0);
    OK(e.state == OSB_ST_TERMINATED, "exit 0 -> Terminated");
    IS_STR(e.reason, "ENTRYPOINT_EXITED", "exit 0 reason");
    IS_STR(e.message, "entrypoint exited with code 0", "exit 0 message");

    e = describe(spec, OSB_RT_END_REPORTED, OSB_END_EXITED, 3);
    OK(e.state == OSB_ST_FAILED, "exit 3 -> Failed");
    IS_STR(e.reason, "ENTRYPOINT_FAILED", "exit 3 reason");
    IS_STR(e.message, "entrypoint exited with code 3", "exit 3 message");

    e = describe(spec, OSB_RT_END_REPORTED, OSB_END_SIGNALED, SIGKILL);
    OK(e.state == OSB_ST_FAILED, "signal -> Failed");
    IS_STR(e.message, "entrypoint was killed by signal 9 (SIGKILL)", "signal message");
    e = describe(spec, OSB_RT_END_REPORTED, OSB_END_SIGNALED, 40);
    OK(strncmp(e.message, "entrypoint was killed by signal 40", 34) == 0, "real-time signal");

    e = describe(spec, OSB_RT_END_REPORTED, OSB_END_EXEC_FAILED, ENOENT);
    OK(e.state == OSB_ST_FAILED, "exec failure -> Failed");
    IS_STR(e.reason, "ENTRYPOINT_FAILED", "exec failure reason");
    IS_STR(e.message,
           "entrypoint /no/such/program could not be executed: No such file or directory",
           "exec failure names the program and the errno");

    json_t *ctl = json_pack("{s:[s]}", "entrypoint", "a\nb\x1b");
    e = describe(ctl, OSB_RT_END_REPORTED, OSB_END_EXEC_FAILED, EACCES);
    IS_STR(e.message, "entrypoint a?b? could not be executed: Permission denied",
           "control bytes of the program name are replaced");
    e = describe(NULL, OSB_RT_END_REPORTED, OSB_END_EXEC_FAILED, EACCES);
    IS_STR(e.message, "entrypoint (none) could not be executed: Permission denied", "no spec");

    e = describe(spec, OSB_RT_END_PID1_EXITED, 0, 0);
    OK(e.state == OSB_ST_FAILED, "execd exit -> Failed");
    IS_STR(e.reason, "SANDBOX_EXITED", "execd exit reason");
    e = describe(spec, OSB_RT_END_BAD_REPORT, 0, 0);
    IS_STR(e.reason, "SANDBOX_EXITED", "bad report reason");

    struct osb_rt_end lim = {.how = OSB_RT_END_LIMIT, .limit = OSB_RT_LIMIT_MEMORY};
    osb_ending_describe(spec, &lim, &e);
    OK(e.state == OSB_ST_FAILED, "memory limit -> Failed");
    IS_STR(e.reason, "OOM_KILLED", "memory limit reason");
    OK(strstr(e.message, "memory limit (resourceLimits.memory)") != NULL,
       "the message names the memory limit");
    lim.limit = OSB_RT_LIMIT_PIDS;
    osb_ending_describe(spec, &lim, &e);
    IS_STR(e.reason, "PIDS_LIMIT", "pids limit reason");
    OK(strstr(e.message, "pids limit (resourceLimits.pids)") != NULL,
       "the message names the pids limit");
    json_decref(spec);
    json_decref(ctl);
    return tap_done();
}
