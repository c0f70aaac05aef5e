/* ~/.opensandbox/config.toml, upstream's file and keys: [connection]
 * api_key, domain, protocol, request_timeout, use_server_proxy; [output]
 * color; [defaults] image, timeout. Precedence: flags > OPEN_SANDBOX_*
 * environment > this file > defaults. `config set` edits the text in place
 * (comments and order survive) and writes it atomically, mode 0600. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/toml.h"
#include "common/xalloc.h"

static const char template_text[] =
    "# OpenSandbox CLI configuration\n"
    "# Priority: CLI flags > environment variables > this file > SDK defaults\n"
    "\n"
    "[connection]\n"
    "# api_key = \"your-api-key\"\n"
    "# domain = \"localhost:8080\"\n"
    "# protocol = \"http\"\n"
    "# request_timeout = 30\n"
    "# use_server_proxy = false\n"
    "\n"
    "[output]\n"
    "# color = true\n"
    "\n"
    "[defaults]\n"
    "# image = \"python:3.11\"\n"
    "# timeout = \"10m\"  # or \"none\" for manual cleanup mode\n";

/* key, TOML type: 's' string, 'i' integer, 'b' boolean */
static const struct {
    const char *key;
    char type;
} known[] = {
    {"connection.api_key", 's'},
    {"connection.domain", 's'},
    {"connection.protocol", 's'},
    {"connection.request_timeout", 'i'},
    {"connection.use_server_proxy", 'b'},
    {"output.color", 'b'},
    {"defaults.image", 's'},
    {"defaults.timeout", 's'},
};

static char *config_path(struct cli *cli)
{
    if (cli->config_path)
        return osb_xstrdup(cli->config_path);
    const char *home = getenv("HOME");
    return osb_xasprintf("%s/.opensandbox/config.toml", home && *home ? home : ".");
}

static const char *str_at(json_t *doc, const char *table, const char *key)
{
    return json_string_value(json_object_get(json_object_get(doc, table), key));
}

static int load_file(struct cli *cli)
{
    char *path = config_path(cli);
    cli->file = json_object();
    if (access(path, F_OK) != 0) {
        int rc = cli->config_path ? cli_usage("config file %s: %s", path, strerror(errno)) : 0;
        free(path);
        return rc;
    }
    size_t len;
    char *text = cli_read_file(path, &len);
    if (!text) {
        free(path);
        return CLI_EUSAGE;
    }
    struct osb_err err = {0};
    json_t *doc;
    int rc = 0;
    if (osb_toml_parse(text, len, &doc, NULL, &err) < 0) {
        rc = cli_usage("config file %s: %s", path, err.msg);
    } else {
        json_decref(cli->file);
        cli->file = doc;
    }
    free(text);
    free(path);
    return rc;
}

static bool env_bool(const char *v, bool *out)
{
    if (!v)
        return false;
    if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on"))
        return *out = true, true;
    if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off"))
        return *out = false, true;
    return false;
}

int cli_config_resolve(struct cli *cli)
{
    if (cli->resolved)
        return 0;
    cli->resolved = true;
    int rc = load_file(cli);
    if (rc)
        return rc;
    json_t *f = cli->file;
    struct osbc_config env;
    osbc_config_from_env(&env);
    struct osbc_config *c = &cli->cfg;
    if (!c->api_key)
        c->api_key = env.api_key ? env.api_key : str_at(f, "connection", "api_key");
    if (!c->domain)
        c->domain = env.domain ? env.domain : str_at(f, "connection", "domain");
    if (!c->protocol)
        c->protocol = env.protocol ? env.protocol : str_at(f, "connection", "protocol");
    if (!c->request_timeout_ms) {
        json_t *t = json_object_get(json_object_get(f, "connection"), "request_timeout");
        c->request_timeout_ms = env.request_timeout_ms ? env.request_timeout_ms
                                : json_is_integer(t) && json_integer_value(t) > 0
                                    ? (long)json_integer_value(t) * 1000
                                    : 30000;
    }
    bool b;
    if (cli->proxy_flag >= 0)
        c->use_server_proxy = cli->proxy_flag;
    else if (env_bool(getenv("OPEN_SANDBOX_USE_SERVER_PROXY"), &b))
        c->use_server_proxy = b;
    else
        c->use_server_proxy =
            json_is_true(json_object_get(json_object_get(f, "connection"), "use_server_proxy"));
    json_t *color = json_object_get(json_object_get(f, "output"), "color");
    cli->color = !cli->no_color && !getenv("NO_COLOR") && cli_stdout_tty() && !json_is_false(color);
    cli->def_image = str_at(f, "defaults", "image");
    cli->def_timeout = str_at(f, "defaults", "timeout");
    return 0;
}

osbc_client *cli_client(struct cli *cli)
{
    if (cli->c)
        return cli->c;
    if (cli_config_resolve(cli))
        return NULL;
    struct osbc_error err;
    cli->cfg.user_agent = "osb";
    if (cli->verbose) {
        char *path = config_path(cli);
        fprintf(stderr,
                "osb: server %s://%s, API key %s, request timeout %lds, server proxy %s, "
                "config %s%s\n",
                cli->cfg.protocol ? cli->cfg.protocol : "http",
                cli->cfg.domain ? cli->cfg.domain : "localhost:8080",
                cli->cfg.api_key ? "set" : "none", cli->cfg.request_timeout_ms / 1000,
                cli->cfg.use_server_proxy ? "on" : "off", path,
                access(path, F_OK) ? " (none)" : "");
        free(path);
    }
    if (osbc_client_new(&cli->cfg, &cli->c, &err)) {
        cli_fail("connection settings", &err);
        return NULL;
    }
    return cli->c;
}

/* ---- config init | show | set ---- */

static int write_atomic(const char *path, const char *text)
{
    char *dir = osb_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        mkdir(dir, 0700);
    }
    free(dir);
    char *tmp = osb_xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text);
    bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        return cli_usage("cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}

static int config_init(struct cli *cli, int argc, char **argv)
{
    static const struct cli_opt opts[] = {{"force", 0, OPT_FLAG}, {NULL, 0, 0}};
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, opts, 0, &a);
    char *path = config_path(cli);
    if (!rc && a.n_pos)
        rc = cli_usage("config init takes no arguments");
    if (!rc && !access(path, F_OK) && !cli_flag(&a, opts, "force"))
        rc = cli_usage("config file %s already exists (--force overwrites it)", path);
    if (!rc && !(rc = write_atomic(path, template_text)))
        cli_ok(cli, "Config file created: %s", path);
    free(path);
    cli_args_free(&a);
    return rc;
}

static char *mask(const char *v)
{
    size_t n = strlen(v);
    char *m = osb_xstrdup(v);
    for (size_t i = n <= 4 ? 0 : 2; i < (n <= 4 ? n : n - 2); i++)
        m[i] = '*';
    return m;
}

static int config_show(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    cli_args_free(&a);
    if (rc || (rc = cli_config_resolve(cli)))
        return rc;
    char *path = config_path(cli);
    char *key = cli->cfg.api_key ? mask(cli->cfg.api_key) : NULL;
    json_t *doc = json_pack("{s:s?,s:s,s:s,s:I,s:b,s:b,s:s?,s:s?,s:s,s:b}", "api_key", key,
                            "domain", cli->cfg.domain ? cli->cfg.domain : "localhost:8080",
                            "protocol", cli->cfg.protocol ? cli->cfg.protocol : "http",
                            "request_timeout", (json_int_t)(cli->cfg.request_timeout_ms / 1000),
                            "use_server_proxy", cli->cfg.use_server_proxy, "color", cli->color,
                            "default_image", cli->def_image, "default_timeout", cli->def_timeout,
                            "config_path", path, "config_file_exists", access(path, F_OK) == 0);
    rc = cli_print_json(cli, doc, "table", "", NULL);
    json_decref(doc);
    free(key);
    free(path);
    return rc;
}

/* The TOML text of value for a key of type t; NULL after printing why. */
static char *toml_value(const char *key, char t, const char *value)
{
    if (t == 'b') {
        bool b;
        if (!env_bool(value, &b))
            return cli_usage("%s: want true or false", key), NULL;
        return osb_xstrdup(b ? "true" : "false");
    }
    if (!strcmp(key, "connection.protocol") && strcmp(value, "http") && strcmp(value, "https"))
        return cli_usage("%s: want http or https", key), NULL;
    if (!strcmp(key, "defaults.timeout") && cli_duration(value, true, key) == -2)
        return NULL;
    if (t == 'i') {
        long v;
        if (!cli_long(value, 1, 86400 * 365, &v))
            return cli_usage("%s: want a positive number of seconds", key), NULL;
        return osb_xasprintf("%ld", v);
    }
    json_t *s = json_string(value); /* a JSON string is a valid TOML basic string */
    char *out = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (!out)
        cli_usage("%s: the value is not UTF-8", key);
    return out;
}

/* The start of the line "[section]" in text, or NULL. */
static const char *find_section(const char *text, const char *section)
{
    char *hdr = osb_xasprintf("[%s]", section);
    size_t n = strlen(hdr);
    const char *p = text, *found = NULL;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!strncmp(p, hdr, n)) {
            found = p;
            break;
        }
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    free(hdr);
    return found;
}

/* Replaces "field = ..." inside [section] (else its commented "# field =
 * ..." line, as in the template), else adds the line at the section's top,
 * else adds the section. */
static char *set_in_text(const char *text, const char *section, const char *field, const char *val)
{
    const char *sec = find_section(text, section);
    if (!sec) {
        size_t len = strlen(text);
        return osb_xasprintf("%s%s\n[%s]\n%s = %s\n", text,
                             len && text[len - 1] != '\n' ? "\n" : "", section, field, val);
    }
    const char *body = strchr(sec, '\n') ? strchr(sec, '\n') + 1 : sec + strlen(sec);
    const char *hit = NULL, *hit_end = NULL, *line = body;
    bool hit_commented = false;
    size_t n = strlen(field);
    while (*line && *line != '[') {
        const char *eol = strchr(line, '\n');
        const char *next = eol ? eol + 1 : line + strlen(line);
        const char *k = line;
        while (*k == ' ' || *k == '\t')
            k++;
        bool commented = *k == '#';
        while (*k == '#' || *k == ' ')
            k++;
        if (!strncmp(k, field, n) && (k[n] == ' ' || k[n] == '=') && (!hit || hit_commented)) {
            hit = line;
            hit_end = eol ? eol : next;
            hit_commented = commented;
        }
        line = next;
    }
    if (hit)
        return osb_xasprintf("%.*s%s = %s%s", (int)(hit - text), text, field, val, hit_end);
    return osb_xasprintf("%.*s%s = %s\n%s", (int)(body - text), text, field, val, body);
}

static int config_set(struct cli *cli, int argc, char **argv)
{
    struct cli_args a;
    int rc = cli_parse(cli, argc, argv, NULL, 0, &a);
    if (!rc && a.n_pos != 2)
        rc = cli_usage("usage: osb config set KEY VALUE (KEY: connection.domain, ...)");
    char t = 0;
    for (size_t i = 0; !rc && i < sizeof known / sizeof *known; i++)
        if (!strcmp(known[i].key, a.pos[0]))
            t = known[i].type;
    if (!rc && !t) {
        rc = cli_usage("unknown key %s; keys: connection.api_key, connection.domain, "
                       "connection.protocol, connection.request_timeout, "
                       "connection.use_server_proxy, output.color, defaults.image, "
                       "defaults.timeout",
                       a.pos[0]);
    }
    char *path = config_path(cli), *val = NULL, *text = NULL;
    if (!rc && access(path, F_OK) != 0)
        rc = cli_usage("config file %s does not exist; run osb config init first", path);
    if (!rc && !(val = toml_value(a.pos[0], t, a.pos[1])))
        rc = CLI_EUSAGE;
    if (!rc && !(text = cli_read_file(path, NULL)))
        rc = CLI_EUSAGE;
    if (!rc) {
        char *sec = osb_xstrdup(a.pos[0]);
        char *dot = strchr(sec, '.');
        *dot = 0;
        char *updated = set_in_text(text, sec, dot + 1, val);
        json_t *doc;
        struct osb_err err = {0};
        if (osb_toml_parse(updated, strlen(updated), &doc, NULL, &err) < 0)
            rc =
                cli_usage("the edited config would not parse (%s); edit %s by hand", err.msg, path);
        else
            json_decref(doc), rc = write_atomic(path, updated);
        char *shown = strcmp(a.pos[0], "connection.api_key") ? NULL : mask(a.pos[1]);
        if (!rc)
            cli_ok(cli, "Set %s = %s", a.pos[0], shown ? shown : a.pos[1]);
        free(shown);
        free(updated);
        free(sec);
    }
    free(text);
    free(val);
    free(path);
    cli_args_free(&a);
    return rc;
}

int cli_cmd_config(struct cli *cli, int argc, char **argv)
{
    static const struct cli_sub subs[] = {
        {"init", config_init, "init [--force]      write a commented config file"},
        {"show", config_show, "show                the resolved settings (API key masked)"},
        {"set", config_set, "set KEY VALUE       set one key in the config file"},
        {NULL, NULL, NULL},
    };
    return cli_dispatch(cli, "config", subs, argc, argv);
}
