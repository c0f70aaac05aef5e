/* osb command ... and osb exec: commands in a sandbox with live output and
 * the remote exit code as osb's own; background commands and their logs;
 * bash sessions that keep state between runs. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/xalloc.h"

static volatile sig_atomic_t interrupted;

/* The first Ctrl-C interrupts the remote command (at its next event, within
 * execd's 3 s keep-alive ping); a second one leaves at once. */
static void on_sigint(int sig)
{
    (void)sig;
    if (interrupted)
        _exit(CLI_EINTR);
    interrupted = 1;
}

/* One event's text and a newline, as the lines were in the output (an empty
 * line comes as "\n" and gets no second one). */
static void put_line(FILE *f, const char *text, size_t len)
{
    fwrite(text, 1, len, f);
    if (!len || text[len - 1] != '\n')
        fputc('\n', f);
    fflush(f);
}

static int out_line(void *ud, const char *text, size_t len)
{
    (void)ud;
    put_line(stdout, text, len);
    return interrupted;
}

static int err_line(void *ud, const char *text, size_t len)
{
    (void)ud;
    fflush(stdout);
    put_line(stderr, text, len);
    return interrupted;
}

/* Pings and every other event: a Ctrl-C is noticed within execd's 3 s ping. */
static int any_event(void *ud, const char *json)
{
    (void)ud;
    (void)json;
    return interrupted;
}

/* 128 + the number of a signal execd names as Go does ("signal: killed"),
 * as a shell reports a command a signal ended; 0 when unknown. */
static int signal_status(const char *traceback)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {
        {"hangup", 1},
        {"interrupt", 2},
        {"quit", 3},
        {"illegal instruction", 4},
        {"aborted", 6},
        {"bus error", 7},
        {"floating point exception", 8},
        {"killed", 9},
        {"user defined signal 1", 10},
        {"segmentation fault", 11},
        {"user defined signal 2", 12},
        {"broken pipe", 13},
        {"alarm clock", 14},
        {"terminated", 15},
    };
    if (!traceback || strncmp(traceback, "signal: ", 8) != 0)
        return 0;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (!strcmp(traceback + 8, sigs[i].name))
            return 128 + sigs[i].sig;
    return 0;
}

/* The command: the positionals after the first skip ones, then the words
 * after "--", joined for the shell. */
static char *command_of(const struct cli_args *a, size_t skip)
{
    size_t n = a->n_pos - skip + a->n_rest;
    const char **words = osb_xcalloc(n + 1, sizeof *words);
    memcpy(words, a->pos + skip, (a->n_pos - skip) * sizeof *words);
    memcpy(words + a->n_pos - skip, a->rest, a->n_rest * sizeof *words);
    char *cmd = cli_join_command(words, n);
    free(words);
    return cmd;
}

/* The exit code of a finished foreground run (printing an execution error):
 * the command's own; 128 + N for one a signal ended (the -t timeout too). */
static int run_result(const struct osbc_exec_result *r, long timeout_ms)
{
    if (r->error_name && strcmp(r->error_name, "CommandExecError") != 0) {
        fprintf(stderr, "osb: %s: %s\n", r->error_name, r->error_value ? r->error_value : "");
        return CLI_EAPI;
    }
    if (r->exit_code >= 0)
        return r->exit_code > 255 ? 255 : r->exit_code;
    int sig = signal_status(r->traceback);
    if (r->error_name && sig) {
        fprintf(stderr, "osb: the command ended by %s%s\n", r->traceback,
                timeout_ms ? " (or its --timeout passed)" : "");
        return sig;
    }
    if (r->error_name) {
        fprintf(stderr, "osb: the command failed: %s\n",
                r->traceback && *r->traceback ? r->traceback : r->error_value);
        return CLI_EAPI;
    }
    fprintf(stderr, "osb: the command's end was not reported (connection lost?)\n");
    return CLI_ECONNECT;
}

static const struct cli_opt run_opts[] = {
    {"background", 'd', OPT_FLAG},
    {"workdir", 'w', OPT_VALUE},
    {"timeout", 't', OPT_VALUE},
    {"env", 'e', OPT_MULTI},
    {NULL, 0, 0},
};

/* command run / exec: ID then the command (words after ID, or after --). */
static int run(struct cli *cli, int argc, char **argv, const char *usage, size_t stop_at)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, run_opts, stop_at, &a);
    size_t nw = a.n_pos ? a.n_pos - 1 + a.n_rest : 0;
    if (!rc && (!a.n_pos || !nw))
        rc = cli_usage("usage: osb %s", usage);
    struct osbc_run_opts o = {.cwd = cli_val(&a, run_opts, "workdir"),
                              .background = cli_flag(&a, run_opts, "background")};
    const char *t = cli_val(&a, run_opts, "timeout");
    long s = 0;
    if (!rc && t && (s = cli_duration(t, false, "--timeout")) < 0)
        rc = CLI_EUSAGE;
    o.timeout_ms = s * 1000;
    const char **ev;
    size_t ne = cli_vals(&a, run_opts, "env", &ev);
    struct osbc_kv *env = NULL;
    if (!rc && ne && !(env = cli_kvs(ev, ne, "--env")))
        rc = CLI_EUSAGE;
    o.env = env;
    o.n_env = ne;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        char *cmd = command_of(&a, 1);
        struct osbc_exec_cbs cbs = {
            .on_stdout = out_line, .on_stderr = err_line, .on_event = any_event};
        struct osbc_exec_result r = {0};
        struct osbc_error err;
        signal(SIGINT, on_sigint);
        if (osbc_command_run(c, a.pos[0], cmd, &o, &cbs, &r, &err) < 0) {
            rc = interrupted ? CLI_EINTR : cli_fail("command run", &err);
        } else if (o.background) {
            json_t *d = json_pack("{s:s?,s:s,s:s}", "execution_id", r.execution_id, "sandbox_id",
                                  a.pos[0], "mode", "background");
            rc = cli_print_json(cli, d, "table", "", NULL);
            json_decref(d);
        } else {
            rc = run_result(&r, o.timeout_ms);
        }
        osbc_exec_result_clear(&r);
        free(cmd);
    }
    free(env);
    cli_args_free(&a);
    return rc;
}

static int command_run(struct cli *cli, int argc, char **argv)
{
    return run(cli, argc, argv, "command run ID [-d] [-w DIR] [-t DUR] [-e K=V]... -- CMD...", 0);
}

int cli_cmd_exec(struct cli *cli, int argc, char **argv)
{
    if (argc && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        puts("usage: osb exec ID [-w DIR] [-t DUR] [-e K=V]... [--] CMD...\n"
             "Runs CMD in the sandbox with live output; osb exits with its exit code.\n"
             "Several words are quoted for the shell; one word is shell text as is\n"
             "(osb exec ID 'ls | wc -l').");
        return CLI_OK;
    }
    /* options end at the command's first word: osb exec ID ls -la */
    return run(cli, argc, argv, "exec ID [-w DIR] [-t DUR] [-e K=V]... [--] CMD...", 2);
}

static int command_status(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, 2, "command status ID EXECUTION_ID", &rc);
    char *json;
    struct osbc_error err;
    if (c && osbc_command_status(c, a.pos[0], a.pos[1], &json, &err) < 0)
        rc = cli_fail("command status", &err);
    else if (c)
        rc = cli_print(cli, json, "table", "", NULL), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int command_logs(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"cursor", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 2, 2,
                               "command logs ID EXECUTION_ID [--cursor N]", &rc);
    const char *cs = cli_val(&a, opts, "cursor");
    char *end = NULL;
    long long cursor = cs ? strtoll(cs, &end, 10) : 0;
    if (c && cs && (*end || cursor < 0))
        c = NULL, rc = cli_usage("--cursor: a byte offset >= 0");
    char *text;
    size_t len;
    long long next;
    struct osbc_error err;
    if (c && osbc_command_logs(c, a.pos[0], a.pos[1], cursor, &text, &len, &next, &err) < 0) {
        rc = cli_fail("command logs", &err);
    } else if (c && cli->output && strcmp(cli->output, "table") && strcmp(cli->output, "raw")) {
        json_t *d = json_pack("{s:s%,s:I}", "content", text, len, "cursor", (json_int_t)next);
        rc = cli_print_json(cli, d ? d : json_null(), "json", NULL, NULL);
        json_decref(d);
        osbc_free(text);
    } else if (c) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
        fprintf(stderr, "(next cursor: %lld)\n", next);
        osbc_free(text);
    }
    cli_args_free(&a);
    return rc;
}

static int command_interrupt(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, 2, "command interrupt ID EXECUTION_ID", &rc);
    struct osbc_error err;
    if (c && osbc_command_interrupt(c, a.pos[0], a.pos[1], &err) < 0)
        rc = cli_fail("command interrupt", &err);
    else if (c)
        cli_ok(cli, "Interrupted: %s", a.pos[1]);
    cli_args_free(&a);
    return rc;
}

static int session_create(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"workdir", 'w', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb command session create ID [-w DIR]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *sid;
    struct osbc_error err;
    if (c && osbc_session_create(c, a.pos[0], cli_val(&a, opts, "workdir"), &sid, &err) < 0) {
        rc = cli_fail("session create", &err);
    } else if (c) {
        json_t *d = json_pack("{s:s,s:s}", "session_id", sid, "sandbox_id", a.pos[0]);
        rc = cli_print_json(cli, d, "table", "", NULL);
        json_decref(d);
        osbc_free(sid);
    }
    cli_args_free(&a);
    return rc;
}

static int session_run(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"workdir", 'w', OPT_VALUE}, {"timeout", 't', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    size_t nw = a.n_pos >= 2 ? a.n_pos - 2 + a.n_rest : 0;
    if (!rc && !nw)
        rc = cli_usage("usage: osb command session run ID SESSION_ID [-w DIR] [-t DUR] -- CMD...");
    struct osbc_run_opts o = {.cwd = cli_val(&a, opts, "workdir")};
    const char *t = cli_val(&a, opts, "timeout");
    long s = 0;
    if (!rc && t && (s = cli_duration(t, false, "--timeout")) < 0)
        rc = CLI_EUSAGE;
    o.timeout_ms = s * 1000;
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        char *cmd = command_of(&a, 2);
        struct osbc_exec_cbs cbs = {
            .on_stdout = out_line, .on_stderr = err_line, .on_event = any_event};
        struct osbc_exec_result r = {0};
        struct osbc_error err;
        signal(SIGINT, on_sigint);
        if (osbc_session_run(c, a.pos[0], a.pos[1], cmd, &o, &cbs, &r, &err) < 0)
            rc = interrupted ? CLI_EINTR : cli_fail("session run", &err);
        else
            rc = run_result(&r, o.timeout_ms);
        osbc_exec_result_clear(&r);
        free(cmd);
    }
    cli_args_free(&a);
    return rc;
}

static int session_delete(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, 2, "command session delete ID SESSION_ID", &rc);
    struct osbc_error err;
    if (c && osbc_session_delete(c, a.pos[0], a.pos[1], &err) < 0)
        rc = cli_fail("session delete", &err);
    else if (c)
        cli_ok(cli, "Deleted session: %s", a.pos[1]);
    cli_args_free(&a);
    return rc;
}

static int command_session(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"create", session_create, "create ID [-w DIR]"},
        {"run", session_run, "run ID SESSION_ID [-w DIR] [-t DUR] -- CMD..."},
        {"delete", session_delete, "delete ID SESSION_ID"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "command session", subs, argc, argv);
}

int cli_cmd_command(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"run", command_run, "run ID [-d] [-w DIR] [-t DUR] [-e K=V]... -- CMD..."},
        {"status", command_status, "status ID EXECUTION_ID"},
        {"logs", command_logs, "logs ID EXECUTION_ID [--cursor N]"},
        {"interrupt", command_interrupt, "interrupt ID EXECUTION_ID"},
        {"session", command_session, "session create|run|delete ..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "command", subs, argc, argv);
}
