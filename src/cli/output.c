/* Output formats: json (the server's document, indented; stable field
 * names for scripts), raw (compact JSON), yaml, and tables that fit the
 * terminal. Text goes to stdout; errors and progress go to stderr. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/buf.h"
#include "common/xalloc.h"

bool cli_stdout_tty(void)
{
    return isatty(1);
}

/* The width to fit tables to: the terminal's, else an exported COLUMNS;
 * 0 (no limit: whole cells for grep and cut) when stdout is not a terminal
 * and COLUMNS is not set. */
static int term_width(void)
{
    struct winsize ws;
    long n;
    if (cli_long(getenv("COLUMNS"), 21, 10000, &n) &&
        !(isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20))
        return (int)n;
    if (!isatty(1))
        return 0;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

/* ---- yaml ---- */

static bool yaml_plain(const char *s)
{
    if (!*s || isspace((unsigned char)*s) || isspace((unsigned char)s[strlen(s) - 1]))
        return false;
    static const char *const words[] = {"true", "false", "null", "yes", "no", "on", "off", "~"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcasecmp(s, words[i]))
            return false;
    if (strchr("-?:,[]{}#&*!|>'\"%@`", *s) || isdigit((unsigned char)*s) || *s == '.')
        return false;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (*p == ':' && (p[1] == ' ' || !p[1])) ||
            (*p == '#' && p[-1] == ' '))
            return false;
    return true;
}

static void yaml_scalar(json_t *v)
{
    if (json_is_string(v) && yaml_plain(json_string_value(v))) {
        fputs(json_string_value(v), stdout);
    } else { /* JSON scalars are valid YAML flow scalars */
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        fputs(s ? s : "null", stdout);
        free(s);
    }
}

static void yaml_emit(json_t *v, int indent, bool in_seq);

static void yaml_key_value(const char *k, json_t *v, int indent, bool first_inline)
{
    if (!first_inline)
        printf("%*s", indent, "");
    json_t *ks = json_string(k);
    yaml_scalar(ks);
    json_decref(ks);
    fputs(":", stdout);
    if ((json_is_object(v) && json_object_size(v)) || (json_is_array(v) && json_array_size(v))) {
        fputs("\n", stdout);
        yaml_emit(v, indent + (json_is_object(v) ? 2 : 0), false);
    } else {
        fputs(" ", stdout);
        yaml_emit(v, indent, false);
    }
}

static void yaml_emit(json_t *v, int indent, bool in_seq)
{
    if (json_is_object(v) && json_object_size(v)) {
        const char *k;
        json_t *x;
        bool first = true;
        json_object_foreach(v, k, x)
        {
            yaml_key_value(k, x, indent, in_seq && first);
            first = false;
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            printf("%*s- ", indent, "");
            yaml_emit(x, indent + 2, true);
        }
    } else {
        if (json_is_object(v))
            fputs("{}", stdout);
        else if (json_is_array(v))
            fputs("[]", stdout);
        else
            yaml_scalar(v);
        fputs("\n", stdout);
    }
}

/* ---- tables ---- */

static json_t *at_path(json_t *v, const char *path)
{
    char key[128];
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = json_object_get(v, key);
        path += n + (dot ? 1 : 0);
    }
    return v;
}

static char *cell(json_t *v)
{
    if (!v || json_is_null(v) || (json_is_object(v) && !json_object_size(v)))
        return osb_xstrdup("");
    if (json_is_string(v))
        return osb_xstrdup(json_string_value(v));
    if (json_is_object(v) && json_object_size(v) <= 8) { /* a small map (metadata): k=v,k=v */
        struct osb_buf b;
        osb_buf_init(&b, 1 << 20);
        const char *k;
        json_t *x;
        int bad = 0;
        json_object_foreach(v, k, x)
        {
            bad |= osb_buf_addf(&b, "%s%s=%s", b.len ? "," : "", k,
                                json_is_string(x) ? json_string_value(x) : "…");
        }
        if (!bad)
            return osb_buf_steal(&b, NULL);
        osb_buf_free(&b);
    }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    return s ? s : osb_xstrdup("");
}

/* Display width of UTF-8 text (one column per character). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* The color of a state cell (as upstream's: green running, yellow on the
 * way, blue paused, red failed), or NULL. */
static const char *state_color(const char *header, const char *v)
{
    if (strcmp(header, "STATE") && strcmp(header, "STATUS"))
        return NULL;
    static const struct {
        const char *state, *sgr;
    } map[] = {
        {"running", "32"},  {"ready", "32"},    {"healthy", "32"},   {"pending", "33"},
        {"creating", "33"}, {"starting", "33"}, {"pausing", "33"},   {"resuming", "33"},
        {"stopping", "33"}, {"paused", "34"},   {"terminated", "2"}, {"deleted", "2"},
        {"failed", "31"},   {"error", "31"},    {"unhealthy", "31"}, {"created", "36"},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcasecmp(v, map[i].state))
            return map[i].sgr;
    return NULL;
}

/* One cell padded to w columns; sgr (may be NULL) colors its text. */
static void put_cell(const char *s, size_t w, bool last, const char *sgr)
{
    size_t n = width(s);
    if (sgr)
        printf("\033[%sm", sgr);
    if (n > w) { /* cut to w-1 characters and an ellipsis */
        size_t chars = 0;
        const char *p = s;
        while (*p && chars < w - 1) {
            p++;
            while ((*p & 0xc0) == 0x80)
                p++;
            chars++;
        }
        fwrite(s, 1, (size_t)(p - s), stdout);
        fputs("…", stdout);
        n = w;
    } else {
        fputs(s, stdout);
    }
    if (sgr)
        fputs("\033[0m", stdout);
    if (!last)
        printf("%*s", (int)(w - n + 2), "");
}

/* Narrows the columns to fit term: the first column (the id or name a user
 * copies) keeps its width when that is at most 60% of the room; the room
 * left is shared out evenly, a column that needs less than its share keeping
 * its own width (water filling). A column gets at least 4. */
static void fit(size_t *w, size_t ncol, int term)
{
    long total = 0, room = (long)term - 2 * (long)ncol;
    for (size_t c = 0; c < ncol; c++)
        total += (long)w[c] + 2;
    if (total <= term)
        return;
    bool *fixed = osb_xcalloc(ncol, sizeof *fixed);
    size_t nfree = ncol;
    if (ncol > 1 && (long)w[0] * 5 <= room * 3) {
        fixed[0] = true;
        room -= (long)w[0];
        nfree--;
    }
    for (bool changed = true; changed && nfree;) {
        changed = false;
        long share = room / (long)nfree;
        for (size_t c = 0; c < ncol; c++)
            if (!fixed[c] && (long)w[c] <= share) {
                fixed[c] = changed = true;
                room -= (long)w[c];
                nfree--;
            }
    }
    long share = nfree ? room / (long)nfree : 0, extra = nfree ? room % (long)nfree : 0;
    for (size_t c = 0; c < ncol; c++)
        if (!fixed[c]) {
            long v = share + (extra-- > 0 ? 1 : 0);
            w[c] = v < 4 ? 4 : (size_t)v;
        }
    free(fixed);
}

static void table(struct cli *cli, json_t *rows, const struct cli_col *cols)
{
    size_t ncol = 0, nrow = json_array_size(rows);
    while (cols[ncol].header)
        ncol++;
    char **cells = osb_xcalloc(nrow * ncol + 1, sizeof *cells);
    size_t *w = osb_xcalloc(ncol, sizeof *w);
    for (size_t c = 0; c < ncol; c++)
        w[c] = width(cols[c].header);
    for (size_t r = 0; r < nrow; r++)
        for (size_t c = 0; c < ncol; c++) {
            char *s = cell(at_path(json_array_get(rows, r), cols[c].path));
            for (char *p = s; *p; p++)
                if (*p == '\n' || *p == '\t')
                    *p = ' ';
            cells[r * ncol + c] = s;
            if (width(s) > w[c])
                w[c] = width(s);
        }
    int tw = term_width();
    if (tw)
        fit(w, ncol, tw);
    if (cli->color)
        fputs("\033[1m", stdout);
    for (size_t c = 0; c < ncol; c++)
        put_cell(cols[c].header, w[c], c + 1 == ncol, NULL);
    fputs(cli->color ? "\033[0m\n" : "\n", stdout);
    for (size_t r = 0; r < nrow; r++) {
        for (size_t c = 0; c < ncol; c++) {
            const char *v = cells[r * ncol + c];
            put_cell(v, w[c], c + 1 == ncol, cli->color ? state_color(cols[c].header, v) : NULL);
        }
        fputs("\n", stdout);
    }
    for (size_t i = 0; i < nrow * ncol; i++)
        free(cells[i]);
    free(cells);
    free(w);
}

/* One object as KEY VALUE rows, nested objects flattened with dots. */
static void flatten(json_t *v, const char *prefix, json_t *rows)
{
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x)
    {
        char *key = prefix ? osb_xasprintf("%s.%s", prefix, k) : osb_xstrdup(k);
        if (json_is_object(x) && json_object_size(x) && strcmp(k, "metadata") && strcmp(k, "env") &&
            strcmp(k, "headers") && strcmp(k, "resourceLimits"))
            flatten(x, key, rows);
        else
            json_array_append_new(rows, json_pack("{s:s,s:O}", "key", key, "value", x));
        free(key);
    }
}

int cli_print_json(struct cli *cli, json_t *doc, const char *fmt_default, const char *items_key,
                   const struct cli_col *cols)
{
    const char *fmt = cli->output ? cli->output : fmt_default;
    if (!strcmp(fmt, "json") || !strcmp(fmt, "raw")) {
        char *s =
            json_dumps(doc, JSON_ENCODE_ANY | (strcmp(fmt, "raw") ? JSON_INDENT(2) : JSON_COMPACT));
        printf("%s\n", s ? s : "null");
        free(s);
    } else if (!strcmp(fmt, "yaml")) {
        yaml_emit(doc, 0, false);
    } else if (items_key && !*items_key) {
        static const struct cli_col kv[] = {{"KEY", "key"}, {"VALUE", "value"}, {NULL, NULL}};
        json_t *rows = json_array();
        if (json_is_object(doc))
            flatten(doc, NULL, rows);
        table(cli, rows, kv);
        json_decref(rows);
    } else {
        json_t *rows = items_key ? json_object_get(doc, items_key) : doc;
        table(cli, json_is_array(rows) ? rows : json_array(), cols);
        json_t *pg = json_object_get(doc, "pagination");
        if (items_key && json_is_object(pg) && json_is_true(json_object_get(pg, "hasNextPage")))
            fprintf(stderr, "(page %lld of %lld; --page for more)\n",
                    json_integer_value(json_object_get(pg, "page")),
                    json_integer_value(json_object_get(pg, "totalPages")));
    }
    fflush(stdout);
    return CLI_OK;
}

int cli_print(struct cli *cli, const char *json_text, const char *fmt_default,
              const char *items_key, const struct cli_col *cols)
{
    json_error_t je;
    json_t *doc = json_loads(json_text ? json_text : "null", JSON_DECODE_ANY, &je);
    if (!doc) { /* not JSON: show it as it came */
        fputs(json_text ? json_text : "", stdout);
        return CLI_OK;
    }
    int rc = cli_print_json(cli, doc, fmt_default, items_key, cols);
    json_decref(doc);
    return rc;
}

void cli_ok(struct cli *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    if (cli->output && strcmp(cli->output, "table")) {
        json_t *d = json_pack("{s:s,s:s}", "status", "ok", "message", msg ? msg : "");
        cli_print_json(cli, d, "json", "", NULL);
        json_decref(d);
    } else {
        fprintf(stderr, "%s\n", msg ? msg : fmt);
    }
    free(msg);
}

void cli_status_rows(struct cli *cli, const char *key, const char *const *names, size_t n,
                     const char *status)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:s,s:s}", key, names[i], "status", status));
    char *hdr = osb_xstrdup(key);
    for (char *p = hdr; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    const struct cli_col cols[] = {{hdr, key}, {"STATUS", "status"}, {NULL, NULL}};
    cli_print_json(cli, rows, "table", NULL, cols);
    json_decref(rows);
    free(hdr);
}
