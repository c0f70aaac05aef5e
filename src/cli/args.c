/* Argument parsing for every subcommand: options in any order, "--opt v"
 * and "--opt=v", short flags, "--" ending options, the global options taken
 * anywhere; and the small value syntaxes (durations, KEY=VALUE). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/xalloc.h"

int cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("osb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return CLI_EUSAGE;
}

/* The value of an option: "--name=v" or the next argument. */
static const char *opt_value(int argc, char **argv, int *i, const char *eq, const char *name)
{
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        cli_usage("option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static bool named(const char *arg, const char *lng, char shrt, const char **eq)
{
    *eq = NULL;
    if (shrt && arg[0] == '-' && arg[1] == shrt && !arg[2])
        return true;
    if (strncmp(arg, "--", 2) != 0)
        return false;
    size_t n = strlen(lng);
    if (strncmp(arg + 2, lng, n) != 0)
        return false;
    if (arg[2 + n] == '=') {
        *eq = arg + 2 + n;
        return true;
    }
    return arg[2 + n] == 0;
}

bool cli_output_ok(const char *fmt)
{
    static const char *const ok[] = {"table", "json", "yaml", "raw"};
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(fmt, ok[i]))
            return true;
    cli_usage("-o %s: want table, json, yaml or raw", fmt);
    return false;
}

int cli_global_opt(struct cli *cli, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *eq, *v;
    if (named(a, "output", 'o', &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "-o")))
            return -1;
        if (!cli_output_ok(v))
            return -1;
        cli->output = v;
    } else if (named(a, "api-key", 0, &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "--api-key")))
            return -1;
        cli->cfg.api_key = v;
    } else if (named(a, "domain", 0, &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "--domain")))
            return -1;
        cli->cfg.domain = v;
    } else if (named(a, "protocol", 0, &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "--protocol")))
            return -1;
        if (strcmp(v, "http") && strcmp(v, "https"))
            return cli_usage("--protocol %s: want http or https", v), -1;
        cli->cfg.protocol = v;
    } else if (named(a, "request-timeout", 0, &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "--request-timeout")))
            return -1;
        long s = cli_duration(v, false, "--request-timeout");
        if (s < 0)
            return -1;
        if (!s)
            return cli_usage("--request-timeout must be at least 1 second"), -1;
        cli->cfg.request_timeout_ms = s * 1000;
    } else if (named(a, "use-server-proxy", 0, &eq) && !eq) {
        cli->proxy_flag = 1;
    } else if (named(a, "no-use-server-proxy", 0, &eq) && !eq) {
        cli->proxy_flag = 0;
    } else if (named(a, "config", 0, &eq)) {
        if (!(v = opt_value(argc, argv, i, eq, "--config")))
            return -1;
        cli->config_path = v;
    } else if (named(a, "verbose", 'v', &eq) && !eq) {
        cli->verbose = true;
    } else if (named(a, "no-color", 0, &eq) && !eq) {
        cli->no_color = true;
    } else {
        return 0;
    }
    return 1;
}

static int find_opt(const struct cli_opt *opts, const char *arg, const char **eq)
{
    for (int k = 0; opts && opts[k].name; k++)
        if (named(arg, opts[k].name, opts[k].short_name, eq))
            return k;
    return -1;
}

int cli_parse(struct cli *cli, int argc, char **argv, const struct cli_opt *opts,
              size_t stop_at_pos, struct cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->pos = osb_xcalloc((size_t)argc + 1, sizeof *a->pos);
    a->rest = osb_xcalloc((size_t)argc + 1, sizeof *a->rest);
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i], *eq;
        if (a->dashdash || (stop_at_pos && a->n_pos >= stop_at_pos)) {
            if (a->dashdash)
                a->rest[a->n_rest++] = arg;
            else
                a->pos[a->n_pos++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            a->dashdash = true;
            continue;
        }
        if (arg[0] != '-' || !arg[1]) {
            a->pos[a->n_pos++] = arg;
            continue;
        }
        int k = find_opt(opts, arg, &eq);
        if (k >= 0) {
            const char *v = "1";
            if (opts[k].kind == OPT_FLAG && eq)
                return cli_usage("option --%s takes no value", opts[k].name);
            if (opts[k].kind != OPT_FLAG && !(v = opt_value(argc, argv, &i, eq, arg)))
                return CLI_EUSAGE;
            if (opts[k].kind != OPT_MULTI)
                a->n_vals[k] = 0;
            a->vals[k] = osb_xrealloc(a->vals[k], (a->n_vals[k] + 1) * sizeof *a->vals[k]);
            a->vals[k][a->n_vals[k]++] = v;
            continue;
        }
        int g = cli_global_opt(cli, argc, argv, &i);
        if (g < 0)
            return CLI_EUSAGE;
        if (!g)
            return cli_usage("unknown option %s (see --help)", arg);
    }
    return 0;
}

void cli_args_free(struct cli_args *a)
{
    free(a->pos);
    free(a->rest);
    for (int k = 0; k < CLI_MAX_OPTS; k++)
        free(a->vals[k]);
    memset(a, 0, sizeof *a);
}

static int opt_index(const struct cli_opt *opts, const char *name)
{
    for (int k = 0; opts && opts[k].name; k++)
        if (!strcmp(opts[k].name, name))
            return k;
    return -1;
}

const char *cli_val(const struct cli_args *a, const struct cli_opt *opts, const char *name)
{
    int k = opt_index(opts, name);
    return k >= 0 && a->n_vals[k] ? a->vals[k][a->n_vals[k] - 1] : NULL;
}

bool cli_flag(const struct cli_args *a, const struct cli_opt *opts, const char *name)
{
    return cli_val(a, opts, name) != NULL;
}

size_t cli_vals(const struct cli_args *a, const struct cli_opt *opts, const char *name,
                const char ***vals)
{
    int k = opt_index(opts, name);
    *vals = k >= 0 ? a->vals[k] : NULL;
    return k >= 0 ? a->n_vals[k] : 0;
}

long cli_duration(const char *s, bool allow_none, const char *what)
{
    if (allow_none && !strcasecmp(s, "none"))
        return -1;
    const char *p = s;
    long total = 0;
    bool any = false, unitless = true;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            break;
        errno = 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (errno || v > 100L * 365 * 86400)
            break;
        long mul = 1;
        if (*end == 'd' || *end == 'h' || *end == 'm' || *end == 's') {
            mul = *end == 'd' ? 86400 : *end == 'h' ? 3600 : *end == 'm' ? 60 : 1;
            end++;
            unitless = false;
        } else if (*end || any) {
            break;
        }
        total += v * mul;
        any = true;
        p = end;
    }
    if (!any || *p || (unitless && strchr(s, ' ')))
        return cli_usage("%s \"%s\": want a duration like 90, 30s, 5m, 1h30m%s", what, s,
                         allow_none ? " or none" : ""),
               -2;
    return total;
}

struct osbc_kv *cli_kvs(const char **vals, size_t n, const char *what)
{
    /* one block: the pairs, then a copy of each string cut at its '=' */
    size_t size = (n + 1) * sizeof(struct osbc_kv);
    for (size_t i = 0; i < n; i++)
        size += strlen(vals[i]) + 1;
    struct osbc_kv *kv = osb_xcalloc(1, size);
    char *text = (char *)(kv + n + 1);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(vals[i]);
        char *eq = strchr(vals[i], '=');
        if (!eq || eq == vals[i]) {
            cli_usage("%s \"%s\": want KEY=VALUE", what, vals[i]);
            free(kv);
            return NULL;
        }
        memcpy(text, vals[i], len + 1);
        text[eq - vals[i]] = 0;
        kv[i].key = text;
        kv[i].value = text + (eq - vals[i]) + 1;
        text += len + 1;
    }
    return kv;
}

char *cli_read_file(const char *path, size_t *len)
{
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
    if (fd < 0) {
        cli_usage("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = osb_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap)
            buf = osb_xrealloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            cli_usage("cannot read %s: %s", path, strerror(errno));
            free(buf);
            if (fd)
                close(fd);
            return NULL;
        }
        if (!r)
            break;
        n += (size_t)r;
    }
    if (fd)
        close(fd);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* Appends n bytes at *o (the caller sized the buffer). */
static void put(char **o, const char *s, size_t n)
{
    memcpy(*o, s, n);
    *o += n;
}

char *cli_join_command(const char **argv, size_t n)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += strlen(argv[i]) * 4 + 3;
    char *out = osb_xmalloc(cap), *o = out;
    for (size_t i = 0; i < n; i++) {
        const char *w = argv[i];
        bool plain = *w != 0;
        for (const char *p = w; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("-_./=:,+@%", *p))
                plain = false;
        if (i)
            put(&o, " ", 1);
        if (plain || n == 1) { /* one word: the user's own shell text, as is */
            put(&o, w, strlen(w));
            continue;
        }
        put(&o, "'", 1);
        for (const char *p = w; *p; p++)
            put(&o, *p == '\'' ? "'\\''" : p, *p == '\'' ? 4 : 1);
        put(&o, "'", 1);
    }
    *o = 0;
    return out;
}

bool cli_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}
