/* Event streams as execd sends them (protocol.md 0.3, 3.3), replayed
 * through the run reader: exit codes from execution_complete and from
 * CommandExecError, code exceptions, a session's timeout object, callback
 * order and stops, split anywhere. */
#include <stdlib.h>

#include "exec.h"
#include "tap.h"

struct log {
    struct osbcl_sb calls;
    const char *stop_on; /* a callback name that returns 1 */
};

static int note(struct log *l, const char *what, const char *text, size_t len)
{
    osbcl_sb_adds(&l->calls, what);
    osbcl_sb_adds(&l->calls, "(");
    osbcl_sb_add(&l->calls, text, len);
    osbcl_sb_adds(&l->calls, ")");
    return l->stop_on && !strcmp(l->stop_on, what);
}
static int c_init(void *ud, const char *id)
{
    return note(ud, "init", id, strlen(id));
}
static int c_out(void *ud, const char *t, size_t n)
{
    return note(ud, "out", t, n);
}
static int c_err(void *ud, const char *t, size_t n)
{
    return note(ud, "err", t, n);
}
static int c_res(void *ud, const char *j)
{
    return note(ud, "result", j, strlen(j));
}
static int c_ev(void *ud, const char *j)
{
    (void)j;
    return note(ud, "ev", "", 0);
}

/* Replays in, step bytes per feed; returns whether the run stopped early. */
static bool replay(const char *in, size_t step, struct log *l, struct osbc_exec_result *r)
{
    struct osbc_exec_cbs cbs = {.on_init = c_init,
                                .on_stdout = c_out,
                                .on_stderr = c_err,
                                .on_result = c_res,
                                .on_event = c_ev,
                                .ud = l};
    struct osbcl_run x;
    osbcl_run_init(&x, &cbs, r);
    size_t len = strlen(in);
    bool stop = false;
    for (size_t i = 0; i < len && !stop; i += step)
        stop = osbcl_run_feed(&x, in + i, len - i < step ? len - i : step);
    if (!stop)
        osbcl_run_end(&x);
    osbcl_run_free(&x);
    return stop || x.stopped;
}

#define TS ",\"timestamp\":1700000000000"

static void test_command(void)
{
    const char *ok = "{\"type\":\"init\",\"text\":\"3f2a\"" TS "}\n\n"
                     "{\"type\":\"stdout\",\"text\":\"hello\"" TS "}\n\n"
                     "{\"type\":\"ping\",\"text\":\"pong\"" TS "}\n\n"
                     "{\"type\":\"stderr\",\"text\":\"oops\"" TS "}\n\n"
                     "{\"type\":\"stdout\",\"text\":\"\\n\"" TS "}\n\n"
                     "{\"type\":\"execution_complete\",\"execution_time\":7" TS "}\n\n";
    for (size_t step = 1; step < 40; step += 6) {
        struct log l = {0};
        struct osbc_exec_result r = {0};
        OK(!replay(ok, step, &l, &r), "a run to its end");
        IS_STR(l.calls.p, "ev()init(3f2a)ev()out(hello)ev()ev()err(oops)ev()out(\n)ev()",
               "every event raw first, then its typed callback, in order");
        IS_INT(r.exit_code, 0, "execution_complete: exit 0");
        IS_INT(r.complete, 1, "complete");
        IS_INT(r.execution_time_ms, 7, "execution time");
        IS_STR(r.execution_id, "3f2a", "the id from init");
        OK(!r.error_name, "no error");
        osbc_exec_result_clear(&r);
        osbcl_sb_free(&l.calls);
    }

    const char *fail = "{\"type\":\"init\",\"text\":\"a1\"" TS "}\n\n"
                       "{\"type\":\"error\"" TS ",\"error\":{\"ename\":\"CommandExecError\","
                       "\"evalue\":\"3\",\"traceback\":[\"exit status 3\"]}}\n\n";
    struct log l = {0};
    struct osbc_exec_result r = {0};
    replay(fail, 5, &l, &r);
    IS_INT(r.exit_code, 3, "CommandExecError's evalue is the exit code");
    IS_STR(r.error_name, "CommandExecError", "ename");
    IS_STR(r.error_value, "3", "evalue");
    IS_STR(r.traceback, "exit status 3", "traceback");
    IS_INT(r.complete, 0, "no execution_complete");
    IS_INT(r.execution_time_ms, -1, "no execution time");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    const char *killed = "{\"type\":\"init\",\"text\":\"a1\"" TS "}\n\n"
                         "{\"type\":\"error\"" TS ",\"error\":{\"ename\":\"CommandExecError\","
                         "\"evalue\":\"-1\",\"traceback\":[\"signal: killed\"]}}\n\n";
    replay(killed, 1000, &l, &r);
    IS_INT(r.exit_code, -1, "killed (a timeout): -1");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    const char *spawn = "{\"type\":\"init\",\"text\":\"a1\"" TS "}\n\n"
                        "{\"type\":\"error\"" TS ",\"error\":{\"ename\":\"CommandExecError\","
                        "\"evalue\":\"fork/exec: no such file\",\"traceback\":[\"x\",\"y\"]}}";
    replay(spawn, 1000, &l, &r);
    IS_INT(r.exit_code, 1, "a spawn failure (evalue not a number): 1");
    IS_STR(r.traceback, "x\ny", "traceback lines joined; the last event without a blank line");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    const char *cut = "{\"type\":\"init\",\"text\":\"a1\"" TS "}\n\n"
                      "{\"type\":\"stdout\",\"text\":\"x\"" TS "}\n\n{\"type\":\"std";
    replay(cut, 1000, &l, &r);
    IS_INT(r.exit_code, -1, "a stream cut short: exit code unknown");
    IS_INT(r.complete, 0, "and not complete");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);
}

static void test_code_and_session(void)
{
    const char *exc = "{\"type\":\"init\",\"text\":\"ctx\"" TS "}\n\n"
                      "{\"type\":\"stdout\",\"text\":\"43\\n\"" TS "}\n\n"
                      "{\"type\":\"result\"" TS ",\"results\":{\"text\":\"42\"}}\n\n"
                      "{\"type\":\"status\",\"text\":\"error\"" TS "}\n\n"
                      "{\"type\":\"error\"" TS ",\"error\":{\"ename\":\"ValueError\","
                      "\"evalue\":\"bad\",\"traceback\":[]}}\n\n"
                      "{\"type\":\"execution_complete\"" TS "}\n\n";
    struct log l = {0};
    struct osbc_exec_result r = {0};
    replay(exc, 3, &l, &r);
    IS_STR(l.calls.p, "ev()init(ctx)ev()out(43\n)ev()result({\"text\":\"42\"})ev()ev()ev()",
           "code: raw output chunks and the result's MIME map");
    IS_INT(r.exit_code, 1, "an exception: exit 1 even after execution_complete");
    IS_STR(r.error_name, "ValueError", "its name");
    IS_INT(r.complete, 1, "complete");
    IS_INT(r.execution_time_ms, 0, "an execution_time of 0 is left out by execd");
    OK(r.traceback && !*r.traceback, "an empty traceback");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    const char *tmo = "{\"type\":\"init\",\"text\":\"s-1\"" TS "}\n\n"
                      "{\"type\":\"stdout\",\"text\":\"a\"" TS "}\n\n"
                      "{\"code\":\"RUNTIME_ERROR\",\"message\":\"error running in session. "
                      "timeout after 500ms\"}\n\n";
    replay(tmo, 7, &l, &r);
    IS_INT(r.exit_code, -1, "a session's timeout: exit code unknown");
    IS_STR(r.error_name, "RUNTIME_ERROR", "the error object's code is kept");
    IS_STR(r.error_value, "error running in session. timeout after 500ms", "and its message");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    const char *junk = "{\"no\":\"type\"}\n\n{\"type\":\"init\",\"text\":\"i\"}\n\n"
                       "{\"type\":\"execution_complete\"}\n\n";
    replay(junk, 2, &l, &r);
    IS_INT(r.exit_code, 0, "an object without type or code is only seen raw");
    IS_STR(l.calls.p, "ev()ev()init(i)ev()", "on_event sees it");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);
}

static void test_stops(void)
{
    const char *in = "{\"type\":\"init\",\"text\":\"id9\"}\n\n"
                     "{\"type\":\"stdout\",\"text\":\"1\"}\n\n"
                     "{\"type\":\"stdout\",\"text\":\"2\"}\n\n"
                     "{\"type\":\"execution_complete\"}\n\n";
    struct log l = {.stop_on = "ev"};
    struct osbc_exec_result r = {0};
    OK(replay(in, 4, &l, &r), "on_event stops at the first event");
    IS_STR(r.execution_id, "id9", "the id is known for the interrupt even so");
    IS_STR(l.calls.p, "ev()", "no callback after the stop");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    l = (struct log){.stop_on = "out"};
    OK(replay(in, 1, &l, &r), "on_stdout stops");
    IS_STR(l.calls.p, "ev()init(id9)ev()out(1)", "at the first line");
    IS_INT(r.exit_code, -1, "the run did not end");
    osbc_exec_result_clear(&r);
    osbcl_sb_free(&l.calls);

    struct osbcl_run x;
    osbcl_run_init(&x, NULL, &r);
    OK(!osbcl_run_feed(&x, in, strlen(in)), "no callbacks at all");
    IS_INT(r.exit_code, 0, "still a result");
    osbcl_run_free(&x);
    osbc_exec_result_clear(&r);
}

int main(void)
{
    test_command();
    test_code_and_session();
    test_stops();
    return tap_done();
}
