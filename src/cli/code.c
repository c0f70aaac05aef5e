/* osb code run: code in the sandbox's persistent context for a language
 * (execd keeps one per language, so variables live on between runs), or in
 * a context made with osb code context create. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static volatile sig_atomic_t interrupted;

/* The first Ctrl-C interrupts the code; a second one leaves at once. */
static void on_sigint(int sig)
{
    (void)sig;
    if (interrupted)
        _exit(CLI_EINTR);
    interrupted = 1;
}

static int out(void *ud, const char *text, size_t len)
{
    (void)ud;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return interrupted;
}

static int err_out(void *ud, const char *text, size_t len)
{
    (void)ud;
    fflush(stdout);
    fwrite(text, 1, len, stderr);
    return interrupted;
}

/* A result's plain text (an expression's value, as a notebook shows it). */
static int result(void *ud, const char *json)
{
    (void)ud;
    json_t *r = json_loads(json, 0, NULL);
    const char *t = json_string_value(json_object_get(r, "text"));
    if (t)
        printf("%s%s", t, *t && t[strlen(t) - 1] == '\n' ? "" : "\n");
    fflush(stdout);
    json_decref(r);
    return interrupted;
}

static int any(void *ud, const char *json)
{
    (void)ud;
    (void)json;
    return interrupted;
}

static int code_run(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"language", 'l', OPT_VALUE},
                                          {"file", 'f', OPT_VALUE},
                                          {"context", 0, OPT_VALUE},
                                          {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    const char *lang = cli_val(&a, opts, "language"), *file = cli_val(&a, opts, "file");
    const char *ctx = cli_val(&a, opts, "context");
    if (!rc && (a.n_pos < 1 || a.n_pos > 2 || (!lang && !ctx) || (file && a.n_pos == 2)))
        rc = cli_usage("usage: osb code run ID (--language L | --context ID) [CODE | -f FILE] "
                       "(neither: stdin)");
    char *code = NULL;
    if (!rc && a.n_pos == 1) {
        if (!file && isatty(0))
            fputs("Reading code from stdin (Ctrl+D to finish):\n", stderr);
        if (!(code = cli_read_file(file ? file : "-", NULL)))
            rc = CLI_EUSAGE;
    }
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    if (c) {
        struct osbc_exec_cbs cbs = {
            .on_stdout = out, .on_stderr = err_out, .on_result = result, .on_event = any};
        struct osbc_exec_result r = {0};
        struct osbc_error err;
        signal(SIGINT, on_sigint);
        if (osbc_code_run(c, a.pos[0], ctx, lang, code ? code : a.pos[1], &cbs, &r, &err) < 0) {
            rc = interrupted ? CLI_EINTR : cli_fail("code run", &err);
        } else if (r.error_name) {
            fflush(stdout);
            /* a traceback ends with "Name: value" itself */
            if (r.traceback && *r.traceback)
                fprintf(stderr, "%s%s", r.traceback,
                        r.traceback[strlen(r.traceback) - 1] == '\n' ? "" : "\n");
            else
                fprintf(stderr, "%s: %s\n", r.error_name, r.error_value ? r.error_value : "");
            rc = CLI_EAPI;
        }
        osbc_exec_result_clear(&r);
    }
    free(code);
    cli_args_free(&a);
    return rc;
}

static int ctx_create(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"language", 'l', OPT_VALUE}, {"workdir", 'w', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && (a.n_pos != 1 || !cli_val(&a, opts, "language")))
        rc = cli_usage("usage: osb code context create ID --language L [-w DIR]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *id;
    struct osbc_error err;
    if (c && osbc_code_context_create(c, a.pos[0], cli_val(&a, opts, "language"),
                                      cli_val(&a, opts, "workdir"), &id, &err) < 0) {
        rc = cli_fail("code context create", &err);
    } else if (c) {
        json_t *d = json_pack("{s:s,s:s}", "id", id, "language", cli_val(&a, opts, "language"));
        rc = cli_print_json(cli, d, "table", "", NULL);
        json_decref(d);
        osbc_free(id);
    }
    cli_args_free(&a);
    return rc;
}

static int ctx_list(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"language", 'l', OPT_VALUE}, {NULL, 0, 0}};
    static const struct cli_col cols[] = {{"ID", "id"}, {"LANGUAGE", "language"}, {NULL, NULL}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    if (!rc && a.n_pos != 1)
        rc = cli_usage("usage: osb code context list ID [--language L]");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    char *json;
    struct osbc_error err;
    if (c && osbc_code_context_list(c, a.pos[0], cli_val(&a, opts, "language"), &json, &err) < 0)
        rc = cli_fail("code context list", &err);
    else if (c)
        rc = cli_print(cli, json, "table", NULL, cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int ctx_delete(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos != 2)
        rc = cli_usage("usage: osb code context delete ID CONTEXT_ID");
    osbc_client *c = rc ? NULL : cli_client(cli);
    if (!rc && !c)
        rc = CLI_EUSAGE;
    struct osbc_error err;
    if (c && osbc_code_context_delete(c, a.pos[0], a.pos[1], &err) < 0)
        rc = cli_fail("code context delete", &err);
    cli_args_free(&a);
    return rc;
}

static int code_context(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"create", ctx_create, "create ID --language L [-w DIR]"},
        {"list", ctx_list, "list ID [--language L]"},
        {"delete", ctx_delete, "delete ID CONTEXT_ID"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "code context", subs, argc, argv);
}

int cli_cmd_code(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"run", code_run, "run ID (--language L | --context ID) [CODE | -f FILE]"},
        {"context", code_context, "context create|list|delete ..."},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "code", subs, argc, argv);
}
