/* POST /code with language `command`: a foreground shell command streamed
 * like POST /command (line events, CommandExecError on a non-zero exit).
 * The /command module exposes no entry point for this, so the run is done
 * here with the same building blocks (spawn, cmd_out, cmd_util). */
#include "execd/code.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "execd/cmd_out.h"
#include "execd/cmd_util.h"
#include "execd/command.h"
#include "execd/events.h"
#include "execd/execd.h"
#include "execd/spawn.h"

struct cmd_run {
    pid_t pid;
    int wstatus;
    bool exited;
    int64_t t0;
    struct osb_sse *sse; /* NULL once the client is gone */
    struct osb_cmd_out *out;
};

static void cmd_free(struct cmd_run *r)
{
    osb_cmd_out_free(r->out);
    if (r->sse)
        osb_sse_close(r->sse);
    free(r);
}

static void on_output_done(void *ud)
{
    struct cmd_run *r = ud;
    int code = osb_cmd_exit_code(r->wstatus);
    if (code == 0) {
        struct osb_execd_event ev = {.type = "execution_complete",
                                     .execution_time = osb_mono_ms() - r->t0};
        osb_sse_send(r->sse, &ev);
    } else {
        char evalue[16], text[96];
        snprintf(evalue, sizeof evalue, "%d", code);
        osb_cmd_exit_text(r->wstatus, text, sizeof text);
        json_t *tb = json_pack("[s]", text);
        struct osb_execd_event ev = {
            .type = "error", .ename = "CommandExecError", .evalue = evalue, .traceback = tb};
        osb_sse_send(r->sse, &ev);
        json_decref(tb);
    }
    cmd_free(r);
}

static void on_exit_cb(pid_t pid, int wstatus, void *ud)
{
    (void)pid;
    struct cmd_run *r = ud;
    r->exited = true;
    r->wstatus = wstatus;
    if (!r->sse) {
        cmd_free(r);
        return;
    }
    osb_cmd_out_finish(r->out, OSB_CMD_EOF_WAIT_MS, on_output_done, r);
}

static void on_gone(void *ud)
{
    struct cmd_run *r = ud;
    r->sse = NULL;
    osb_cmd_out_set_sse(r->out, NULL);
    /* Nobody waits for the result: stop the whole group, as /command does. */
    kill(-r->pid, SIGKILL);
    if (r->exited)
        cmd_free(r);
}

static pid_t spawn_shell(struct osb_execd *x, const char *code, int out_w, int err_w,
                         struct osb_err *err)
{
    char **env = osb_execd_env_build(x, NULL);
    const char *argv[] = {osb_cmd_shell(), "-c", code, NULL};
    struct osb_spawn sp = {.argv = argv,
                           .envp = (const char *const *)env,
                           .stdin_fd = -1,
                           .stdout_fd = out_w,
                           .stderr_fd = err_w,
                           .ctty_fd = -1};
    pid_t pid = osb_execd_spawn(x, &sp, err);
    osb_execd_env_free(env);
    return pid;
}

void osb_code_command_run(struct osb_execd *x, struct osb_http_req *req, const char *code,
                          size_t len)
{
    (void)len; /* a shell command line ends at its first NUL anyway */
    struct osb_err err = {0};
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        osb_err_sys(&err, "pipe");
        osb_http_respond_error(req, 500, "RUNTIME_ERROR", "%s", err.msg);
        for (int i = 0; i < 2; i++) {
            if (outp[i] >= 0)
                close(outp[i]);
            if (errp[i] >= 0)
                close(errp[i]);
        }
        return;
    }
    pid_t pid = spawn_shell(x, code, outp[1], errp[1], &err);
    close(outp[1]);
    close(errp[1]);
    struct cmd_run *r = osb_xcalloc(1, sizeof *r);
    r->out = osb_cmd_out_new(x->loop);
    /* A pipe the pump cannot watch is closed: its output is lost, the
     * run still ends with its exit status. */
    struct osb_err oerr = {0};
    if (osb_cmd_out_add(r->out, outp[0], "stdout", &oerr) < 0)
        osb_warn("code command: %s", oerr.msg);
    if (osb_cmd_out_add(r->out, errp[0], "stderr", &oerr) < 0)
        osb_warn("code command: %s", oerr.msg);
    char id[33];
    osb_random_hex(id, 16);
    r->sse = osb_sse_open(x->loop, req, on_gone, r);
    struct osb_execd_event init = {.type = "init", .text = id};
    osb_sse_send(r->sse, &init);
    if (pid < 0) {
        json_t *tb = json_pack("[s]", err.msg);
        struct osb_execd_event ev = {
            .type = "error", .ename = "CommandExecError", .evalue = err.msg, .traceback = tb};
        osb_sse_send(r->sse, &ev);
        json_decref(tb);
        cmd_free(r);
        return;
    }
    r->pid = pid;
    r->t0 = osb_mono_ms();
    osb_cmd_out_set_sse(r->out, r->sse);
    osb_execd_watch_child(x, pid, on_exit_cb, r);
}
