/* osb file ...: files and directories in a sandbox. Transfers stream from
 * and to local descriptors; on a terminal a progress bar goes to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/xalloc.h"

static const struct cli_col info_cols[] = {
    {"PATH", "path"},
    {"TYPE", "type"},
    {"SIZE", "size"},
    {"MODE", "mode"},
    {"OWNER", "owner"},
    {"GROUP", "group"},
    {"MODIFIED", "modified_at"},
    {NULL, NULL},
};

/* --mode (octal) / --owner / --group into attrs; false after printing why. */
static bool attrs_of(const struct cli_args *a, const struct cli_opt *opts,
                     struct osbc_file_attrs *at)
{
    const char *m = cli_val(a, opts, "mode");
    at->mode = -1;
    at->owner = cli_val(a, opts, "owner");
    at->group = cli_val(a, opts, "group");
    if (!m)
        return true;
    char *end;
    long v = strtol(m, &end, 8);
    if (*end || !*m || v < 0 || v > 07777) {
        cli_usage("--mode %s: want octal permission bits like 0644", m);
        return false;
    }
    at->mode = (int)v;
    return true;
}

static const struct cli_opt attr_opts[] = {
    {"mode", 0, OPT_VALUE},
    {"owner", 0, OPT_VALUE},
    {"group", 0, OPT_VALUE},
    {"content", 'c', OPT_VALUE},
    {NULL, 0, 0},
};

static int file_cat(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"encoding", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 2, 2, "file cat ID PATH", &rc);
    struct osbc_error err;
    if (c && osbc_file_download(c, a.pos[0], a.pos[1], 1, NULL, NULL, &err) < 0)
        rc = cli_fail("file cat", &err);
    cli_args_free(&a);
    return rc;
}

static int file_write(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, attr_opts, &a, 2, 2,
                               "file write ID PATH [-c TEXT] [--mode 0644] [--owner U] [--group G] "
                               "(without -c: stdin)",
                               &rc);
    struct osbc_file_attrs at;
    if (c && !attrs_of(&a, attr_opts, &at))
        c = NULL, rc = CLI_EUSAGE;
    const char *content = cli_val(&a, attr_opts, "content");
    struct osbc_error err;
    int r = 0;
    if (c && content) {
        r = osbc_file_write(c, a.pos[0], a.pos[1], content, strlen(content), &at, &err);
    } else if (c) {
        if (isatty(0))
            fputs("Reading from stdin (Ctrl+D to finish):\n", stderr);
        r = osbc_file_upload(c, a.pos[0], a.pos[1], 0, &at, NULL, NULL, &err);
    }
    if (c && r < 0)
        rc = cli_fail("file write", &err);
    else if (c)
        cli_ok(cli, "Written: %s", a.pos[1]);
    cli_args_free(&a);
    return rc;
}

/* ---- progress ---- */

/* Transfers of at least this many bytes get a progress bar (on a terminal). */
#define PROGRESS_MIN (8LL << 20)

struct progress {
    const char *name;
    double start, last; /* seconds, monotonic */
    bool shown;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "name [#####     ]  42% 12/30 MiB 85.3 MiB/s", redrawn in place at most
 * five times a second, and once at the end. */
static int show_progress(void *ud, long long done, long long total)
{
    struct progress *p = ud;
    double now = now_s();
    if (!p->start)
        p->start = now;
    if (!p->shown && (total >= 0 ? total : done) < PROGRESS_MIN)
        return 0;
    if (p->shown && now - p->last < 0.2 && done != total)
        return 0;
    p->last = now;
    p->shown = true;
    double rate = now > p->start ? (double)done / (now - p->start) / (1 << 20) : 0;
    if (total > 0) {
        int pct = (int)(done * 100 / total), bars = pct * 30 / 100;
        fprintf(stderr, "\r%s [%.*s%*s] %3d%% %lld/%lld MiB %.1f MiB/s\033[K", p->name, bars,
                "##############################", 30 - bars, "", pct, done >> 20, total >> 20,
                rate);
    } else {
        fprintf(stderr, "\r%s %lld MiB %.1f MiB/s\033[K", p->name, done >> 20, rate);
    }
    return 0;
}

static int transfer_done(struct progress *p, int rc)
{
    if (p->shown)
        fputs("\n", stderr);
    return rc;
}

static int file_upload(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, attr_opts, &a, 3, 3,
                               "file upload ID LOCAL_PATH REMOTE_PATH [--mode 0644]", &rc);
    struct osbc_file_attrs at;
    if (c && !attrs_of(&a, attr_opts, &at))
        c = NULL, rc = CLI_EUSAGE;
    int fd = c ? (strcmp(a.pos[1], "-") ? open(a.pos[1], O_RDONLY | O_CLOEXEC) : 0) : -1;
    if (c && fd < 0)
        c = NULL, rc = cli_usage("cannot open %s: %s", a.pos[1], strerror(errno));
    struct progress p = {.name = a.pos[1]};
    bool bar = isatty(2);
    if (c && at.mode < 0) { /* keep the local file's permissions */
        struct stat st;
        if (fd > 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
            at.mode = (int)(st.st_mode & 0777);
    }
    struct osbc_error err;
    if (c &&
        osbc_file_upload(c, a.pos[0], a.pos[2], fd, &at, bar ? show_progress : NULL, &p, &err) < 0)
        rc = transfer_done(&p, cli_fail("file upload", &err));
    else if (c)
        transfer_done(&p, 0), cli_ok(cli, "Uploaded: %s → %s", a.pos[1], a.pos[2]);
    if (fd > 0)
        close(fd);
    cli_args_free(&a);
    return rc;
}

static int file_download(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 3, 3, "file download ID REMOTE_PATH LOCAL_PATH", &rc);
    char *tmp = NULL;
    int fd = -1;
    if (c && !strcmp(a.pos[2], "-")) {
        fd = 1;
    } else if (c) { /* into a temporary file renamed at the end: no torn file */
        tmp = osb_xasprintf("%s.osb-part.%d", a.pos[2], (int)getpid());
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            c = NULL, rc = cli_usage("cannot create %s: %s", tmp, strerror(errno));
    }
    struct progress p = {.name = a.pos[1]};
    struct osbc_error err;
    if (c && osbc_file_download(c, a.pos[0], a.pos[1], fd,
                                isatty(2) && !isatty(fd) ? show_progress : NULL, &p, &err) < 0) {
        rc = transfer_done(&p, cli_fail("file download", &err));
    } else if (c && tmp && (fsync(fd) < 0 || rename(tmp, a.pos[2]) < 0)) {
        rc = cli_usage("cannot write %s: %s", a.pos[2], strerror(errno));
    } else if (c) {
        transfer_done(&p, 0);
        if (tmp)
            cli_ok(cli, "Downloaded: %s → %s", a.pos[1], a.pos[2]);
    }
    if (fd > 1)
        close(fd);
    if (tmp && rc)
        unlink(tmp);
    free(tmp);
    cli_args_free(&a);
    return rc;
}

static int file_rm(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, NULL, &a, 2, (size_t)-1, "file rm ID PATH...", &rc);
    struct osbc_error err;
    if (c && osbc_file_remove(c, a.pos[0], a.pos + 1, a.n_pos - 1, &err) < 0)
        rc = cli_fail("file rm", &err);
    else if (c)
        cli_status_rows(cli, "path", a.pos + 1, a.n_pos - 1, "deleted");
    cli_args_free(&a);
    return rc;
}

static int file_rmdir(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, (size_t)-1, "file rmdir ID PATH...", &rc);
    struct osbc_error err;
    if (c && osbc_dir_remove(c, a.pos[0], a.pos + 1, a.n_pos - 1, &err) < 0)
        rc = cli_fail("file rmdir", &err);
    else if (c)
        cli_status_rows(cli, "path", a.pos + 1, a.n_pos - 1, "removed");
    cli_args_free(&a);
    return rc;
}

static int file_mv(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 3, 3, "file mv ID SOURCE DESTINATION", &rc);
    struct osbc_error err;
    if (c && osbc_file_move(c, a.pos[0], a.pos[1], a.pos[2], &err) < 0)
        rc = cli_fail("file mv", &err);
    else if (c)
        cli_ok(cli, "Moved: %s → %s", a.pos[1], a.pos[2]);
    cli_args_free(&a);
    return rc;
}

static int file_mkdir(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, attr_opts, &a, 2, (size_t)-1,
                               "file mkdir ID PATH... [--mode 0755] [--owner U] [--group G]", &rc);
    struct osbc_file_attrs at;
    if (c && !attrs_of(&a, attr_opts, &at))
        c = NULL, rc = CLI_EUSAGE;
    struct osbc_error err;
    if (c && osbc_dir_create(c, a.pos[0], a.pos + 1, a.n_pos - 1, &at, &err) < 0)
        rc = cli_fail("file mkdir", &err);
    else if (c)
        cli_status_rows(cli, "path", a.pos + 1, a.n_pos - 1, "created");
    cli_args_free(&a);
    return rc;
}

static int file_chmod(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, attr_opts, &a, 2, 2,
                               "file chmod ID PATH --mode 0755 [--owner U] [--group G]", &rc);
    struct osbc_file_attrs at;
    if (c && !attrs_of(&a, attr_opts, &at))
        c = NULL, rc = CLI_EUSAGE;
    if (c && at.mode < 0)
        c = NULL, rc = cli_usage("file chmod: --mode is required");
    struct osbc_error err;
    if (c && osbc_file_chmod(c, a.pos[0], a.pos[1], &at, &err) < 0)
        rc = cli_fail("file chmod", &err);
    else if (c)
        cli_ok(cli, "Permissions set: %s", a.pos[1]);
    cli_args_free(&a);
    return rc;
}

static int file_search(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"pattern", 'p', OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 2, 2, "file search ID PATH -p GLOB", &rc);
    if (c && !cli_val(&a, opts, "pattern"))
        c = NULL, rc = cli_usage("file search: --pattern GLOB is required");
    char *json;
    struct osbc_error err;
    if (c && osbc_file_search(c, a.pos[0], a.pos[1], cli_val(&a, opts, "pattern"), &json, &err) < 0)
        rc = cli_fail("file search", &err);
    else if (c)
        rc = cli_print(cli, json, "table", NULL, info_cols), osbc_free(json);
    cli_args_free(&a);
    return rc;
}

static int file_info(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc;
    osbc_client *c =
        cli_start(cli, argc, argv, NULL, &a, 2, (size_t)-1, "file info ID PATH...", &rc);
    char *json;
    struct osbc_error err;
    if (c && osbc_file_info(c, a.pos[0], a.pos + 1, a.n_pos - 1, &json, &err) < 0) {
        rc = cli_fail("file info", &err);
    } else if (c) {
        json_t *d = json_loads(json, 0, NULL), *rows = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(d, k, v) json_array_append(rows, v);
        if (!cli->output || !strcmp(cli->output, "table"))
            rc = cli_print_json(cli, rows, "table", NULL, info_cols);
        else
            rc = cli_print(cli, json, "table", NULL, info_cols);
        json_decref(rows);
        json_decref(d);
        osbc_free(json);
    }
    cli_args_free(&a);
    return rc;
}

static int file_replace(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        {"old", 0, OPT_VALUE}, {"new", 0, OPT_VALUE}, {NULL, 0, 0}};
    struct cli_args a;
    int rc;
    osbc_client *c = cli_start(cli, argc, argv, opts, &a, 2, 2,
                               "file replace ID PATH --old TEXT --new TEXT", &rc);
    const char *o = cli_val(&a, opts, "old"), *n = cli_val(&a, opts, "new");
    if (c && (!o || !*o || !n))
        c = NULL, rc = cli_usage("file replace: --old (not empty) and --new are required");
    long count;
    struct osbc_error err;
    if (c && osbc_file_replace(c, a.pos[0], a.pos[1], o, n, &count, &err) < 0) {
        rc = cli_fail("file replace", &err);
    } else if (c) {
        json_t *d = json_pack("{s:s,s:I}", "path", a.pos[1], "replaced", (json_int_t)count);
        rc = cli_print_json(cli, d, "table", "", NULL);
        json_decref(d);
    }
    cli_args_free(&a);
    return rc;
}

int cli_cmd_file(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"cat", file_cat, "cat ID PATH"},
        {"write", file_write, "write ID PATH [-c TEXT] [--mode 0644] [--owner U] [--group G]"},
        {"upload", file_upload, "upload ID LOCAL_PATH REMOTE_PATH [--mode 0644]"},
        {"download", file_download, "download ID REMOTE_PATH LOCAL_PATH (- for stdout)"},
        {"rm", file_rm, "rm ID PATH..."},
        {"mv", file_mv, "mv ID SOURCE DESTINATION"},
        {"mkdir", file_mkdir, "mkdir ID PATH... [--mode 0755]"},
        {"rmdir", file_rmdir, "rmdir ID PATH..."},
        {"search", file_search, "search ID PATH -p GLOB"},
        {"info", file_info, "info ID PATH..."},
        {"chmod", file_chmod, "chmod ID PATH --mode 0755 [--owner U] [--group G]"},
        {"replace", file_replace, "replace ID PATH --old TEXT --new TEXT"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "file", subs, argc, argv);
}
