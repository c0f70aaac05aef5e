/* osb: the command line on libopensandbox. One file per command group;
 * this header is what they share: the run's context, argument parsing,
 * output and error reporting. */
#ifndef OSB_CLI_H
#define OSB_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "osb/opensandbox.h"

/* Exit codes (documented in osb --help and osb.1). */
enum {
    CLI_OK = 0,
    CLI_EAPI = 1,     /* the server refused or failed */
    CLI_EUSAGE = 2,   /* bad command line or local input */
    CLI_ECONNECT = 3, /* cannot reach the server, or timed out */
    CLI_EINTR = 130,  /* interrupted */
};

struct cli {
    struct osbc_config cfg; /* resolved: flags > environment > file > defaults */
    osbc_client *c;         /* made on first use */
    const char *output;     /* -o: table, json, yaml, raw; NULL: the command's default */
    bool color, verbose;
    const char *config_path;
    json_t *file;          /* the config file's document ({} when there is none) */
    const char *def_image; /* [defaults] image */
    const char *def_timeout;
    int proxy_flag; /* --use-server-proxy 1, --no-use-server-proxy 0, unset -1 */
    bool no_color, resolved;
};

/* The connection, made on first use; NULL after printing why. */
osbc_client *cli_client(struct cli *cli);
/* Prints "osb: <what>: <message> (<code>, HTTP <status>)" and returns the exit code. */
int cli_fail(const char *what, const struct osbc_error *err);
/* Prints "osb: <message>" for a usage error and returns CLI_EUSAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- arguments (args.c) ---- */
enum { OPT_FLAG, OPT_VALUE, OPT_MULTI };
struct cli_opt {
    const char *name; /* long name without "--" */
    char short_name;  /* 0: none */
    int kind;
};
#define CLI_MAX_OPTS 24
struct cli_args {
    const char **pos; /* positional arguments */
    size_t n_pos;
    const char **rest; /* after "--" */
    size_t n_rest;
    bool dashdash;
    const char **vals[CLI_MAX_OPTS]; /* per option: its values (a flag: one "1") */
    size_t n_vals[CLI_MAX_OPTS];
};
/* Parses argv against opts (NULL-name terminated); the global options
 * (-o, --api-key, ...) are taken anywhere. stop_at_pos: after that many
 * positionals everything else is positional too (for "exec ID cmd..."; 0:
 * no stop). Returns 0 or CLI_EUSAGE after printing why. */
int cli_parse(struct cli *cli, int argc, char **argv, const struct cli_opt *opts,
              size_t stop_at_pos, struct cli_args *a);
void cli_args_free(struct cli_args *a);
/* The last value of option name, or NULL; whether a flag is set; all values. */
const char *cli_val(const struct cli_args *a, const struct cli_opt *opts, const char *name);
bool cli_flag(const struct cli_args *a, const struct cli_opt *opts, const char *name);
size_t cli_vals(const struct cli_args *a, const struct cli_opt *opts, const char *name,
                const char ***vals);
/* Handles one global option at argv[*i] (advancing *i past its value).
 * 1 taken, 0 not a global option, -1 usage error printed. */
int cli_global_opt(struct cli *cli, int argc, char **argv, int *i);

/* "30s", "5m", "1h30m", "90" (seconds) → seconds; -1 for "none" when
 * allow_none; -2 (after printing why) when malformed. */
long cli_duration(const char *s, bool allow_none, const char *what);
/* KEY=VALUE strings → kv pairs, all in one block for one free(); NULL after
 * printing why. */
struct osbc_kv *cli_kvs(const char **vals, size_t n, const char *what);
/* A whole file (or "-": stdin) into memory; NULL after printing why. */
char *cli_read_file(const char *path, size_t *len);
/* Joins argv with spaces, quoting each word for the shell when needed (one
 * word is taken as shell text as it is: osb exec ID 'ls | wc -l'). */
char *cli_join_command(const char **argv, size_t n);
/* A whole decimal number in [min, max]; false when s is anything else. */
bool cli_long(const char *s, long min, long max, long *out);

/* ---- start.c ---- */
/* Parses argv (n_min..n_max positionals, else "usage: osb <usage>") and
 * makes the client: the client, or NULL with *rc the exit code to return. */
osbc_client *cli_start(struct cli *cli, int argc, char **argv, const struct cli_opt *opts,
                       struct cli_args *a, size_t n_min, size_t n_max, const char *usage, int *rc);
/* A command that applies one call to each NAME given: each failure is
 * reported ("<what> NAME: ..."), the others go on, the done ones are
 * printed as KEY/STATUS rows; exits with the first failure's code. */
struct cli_each {
    const char *usage; /* "sandbox kill ID..." */
    const char *what;  /* "sandbox kill" */
    const char *key;   /* the rows' name column: "sandbox_id" */
    const char *status;
    int (*call)(osbc_client *c, const char *name, struct osbc_error *err);
};
int cli_each(struct cli *cli, int argc, char **argv, const struct cli_each *e);

/* ---- output (output.c) ---- */
/* A column of a table: header and a dotted path into each item. */
struct cli_col {
    const char *header;
    const char *path;
};
/* Prints a server document in the chosen format (fmt_default when no -o).
 * table: items_key names the array of rows (NULL: doc is the array; "" :
 * doc is one object shown as KEY VALUE rows); cols the columns. */
int cli_print(struct cli *cli, const char *json_text, const char *fmt_default,
              const char *items_key, const struct cli_col *cols);
/* The same for a document built here (not freed). */
int cli_print_json(struct cli *cli, json_t *doc, const char *fmt_default, const char *items_key,
                   const struct cli_col *cols);
/* A command's success without a document: the message on stderr, or, with
 * -o json|yaml|raw, {"status":"ok","message":...} on stdout (upstream's). */
void cli_ok(struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What a command did to several things, as upstream prints it: rows of
 * {key: name, "status": status} (a table, or the list for -o json). */
void cli_status_rows(struct cli *cli, const char *key, const char *const *names, size_t n,
                     const char *status);
/* Whether -o names a known format; prints why not. */
bool cli_output_ok(const char *fmt);
bool cli_stdout_tty(void);

/* ---- config (config.c) ---- */
/* Loads the config file (cli->config_path or ~/.opensandbox/config.toml)
 * and fills cli->cfg and the defaults from it, the environment and the
 * flags already set. Returns 0 or an exit code after printing why. */
int cli_config_resolve(struct cli *cli);
int cli_cmd_config(struct cli *cli, int argc, char **argv);

/* ---- command groups: argv[0] is the subcommand ---- */
int cli_cmd_sandbox(struct cli *cli, int argc, char **argv);
int cli_cmd_command(struct cli *cli, int argc, char **argv);
int cli_cmd_exec(struct cli *cli, int argc, char **argv);
int cli_cmd_file(struct cli *cli, int argc, char **argv);
int cli_cmd_egress(struct cli *cli, int argc, char **argv);
int cli_cmd_desktop(struct cli *cli, int argc, char **argv);
int cli_cmd_vault(struct cli *cli, int argc, char **argv);
int cli_cmd_diagnostics(struct cli *cli, int argc, char **argv);
int cli_cmd_snapshot(struct cli *cli, int argc, char **argv);
int cli_cmd_pool(struct cli *cli, int argc, char **argv);
int cli_cmd_batch(struct cli *cli, int argc, char **argv);
int cli_cmd_image(struct cli *cli, int argc, char **argv);
int cli_cmd_code(struct cli *cli, int argc, char **argv);
int cli_cmd_shell(struct cli *cli, int argc, char **argv);
int cli_cmd_completion(struct cli *cli, int argc, char **argv);

/* A subcommand table entry. */
struct cli_sub {
    const char *name;
    int (*fn)(struct cli *cli, int argc, char **argv);
    const char *usage;
};
/* Runs argv[0] from subs, or prints the group's help. */
int cli_dispatch(struct cli *cli, const char *group, const struct cli_sub *subs, int argc,
                 char **argv);

#endif
