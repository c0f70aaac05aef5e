/* src/server/config: resolution, defaults, every key, environment
 * overrides, error messages naming file:line and key, the example file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "server/config.h"
#include "tap.h"

static char tmp[PATH_MAX];

static char *tpath(const char *name)
{
    return osb_xasprintf("%s/%s", tmp, name);
}

/* A temp path in a static buffer (for one-off uses). */
static const char *tp(const char *name)
{
    static char buf[4][PATH_MAX + 64];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmp, name);
    return buf[i];
}

static char *write_tmp(const char *name, const char *text)
{
    char *p = tpath(name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

static char *exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    *strrchr(buf, '/') = 0;
    return osb_xstrdup(buf);
}

static void clean_env(void)
{
    unsetenv("SANDBOX_CONFIG_PATH");
    unsetenv("OPENSANDBOX_SERVER_API_KEY");
    unsetenv("OPENSANDBOX_INSECURE_SERVER");
    setenv("HOME", tmp, 1);
}

/* Load text from a file and expect this exact error ("FILE" in want is
 * replaced by the file's path). */
static void load_fails(const char *text, const char *want, const char *what)
{
    char *p = write_tmp("bad.toml", text);
    struct osb_config c;
    memset(&c, 0x5a, sizeof c);
    struct osb_err e = {0};
    OK(osb_config_load(p, &c, &e) < 0, what);
    char full[1024];
    const char *at = strstr(want, "FILE");
    if (at)
        snprintf(full, sizeof full, "%.*s%s%s", (int)(at - want), want, p, at + 4);
    else
        snprintf(full, sizeof full, "%s", want);
    IS_STR(e.msg, full, what);
    unsigned char *b = (unsigned char *)&c;
    OK(b[0] == 0x5a && b[sizeof c - 1] == 0x5a, "output untouched on failure");
    free(p);
}

static struct osb_config load_ok(const char *text, const char *what)
{
    char *p = write_tmp("ok.toml", text);
    struct osb_config c = {0};
    struct osb_err e = {0};
    int rc = osb_config_load(p, &c, &e);
    if (rc < 0)
        printf("# %s: %s\n", what, e.msg);
    OK(rc == 0, what);
    free(p);
    return c;
}

static void test_defaults(void)
{
    clean_env();
    struct osb_config c;
    struct osb_err e = {0};
    OK(osb_config_load(NULL, &c, &e) == 0, "missing ~/.sandbox.toml: built-in defaults");
    OK(c.path == NULL, "no file read");
    IS_STR(c.server.host, "127.0.0.1", "default host");
    IS_INT(c.server.port, 8080, "default port");
    OK(c.server.api_key == NULL, "no api key by default");
    OK(c.server.eip == NULL, "no eip by default");
    IS_INT(c.server.max_sandbox_timeout_seconds, 0, "no timeout cap by default");
    IS_INT(c.server.min_sandbox_timeout_seconds, 60, "min timeout 60 by default");
    IS_STR(c.server.log_level, "info", "default log level");
    IS_INT(c.server.max_sandboxes, 0, "no sandbox cap by default");
    IS_INT(c.server.max_concurrent_creates, sysconf(_SC_NPROCESSORS_ONLN),
           "max_concurrent_creates: online CPUs by default");
    IS_INT(c.server.admission_wait_seconds, 30, "admission wait 30 s by default");
    IS_STR(c.runtime.type, "native", "default runtime");
    char *dir = exe_dir();
    char *want = osb_xasprintf("%s/execd", dir);
    IS_STR(c.runtime.execd_path, want, "execd next to the binary");
    free(want);
    want = osb_xasprintf("%s/osb-sandbox-init", dir);
    IS_STR(c.runtime.init_path, want, "init next to the binary");
    free(want);
    free(dir);
    want = osb_xasprintf("%s/.opensandbox", tmp);
    IS_STR(c.native.state_dir, want, "state dir under HOME");
    free(want);
    IS_INT(c.native.default_disk_bytes, 1LL << 30, "default disk 1 GiB");
    IS_INT(c.native.default_pids_max, 4096, "default pids 4096");
    IS_INT(c.native.log_max_bytes, 1 << 20, "default log 1 MiB");
    OK(c.native.user_namespaces, "user namespaces on by default");
    OK(!c.native.user_namespaces_set, "and not explicitly (a failed probe turns them off)");
    IS_STR(c.native.userns_range, "100000:6553600", "default userns_range");
    OK(!c.insecure, "secure by default");
    osb_config_free(&c);
    osb_config_free(&c); /* a freed config can be freed again */
    osb_config_free(NULL);

    unsetenv("HOME");
    c = load_ok("", "no HOME: defaults"); /* explicit file: never the real ~/.sandbox.toml */
    struct passwd *pw = getpwuid(getuid());
    want = osb_xasprintf("%s/.opensandbox", pw ? pw->pw_dir : "/");
    IS_STR(c.native.state_dir, want, "no HOME: home from the password database");
    free(want);
    osb_config_free(&c);
    setenv("HOME", tmp, 1);
}

static void test_resolution(void)
{
    clean_env();
    char *home_cfg = write_tmp(".sandbox.toml", "[server]\nport = 1111\n");
    char *env_cfg = write_tmp("env.toml", "[server]\nport = 2222\n");
    char *arg_cfg = write_tmp("arg.toml", "[server]\nport = 3333\n");
    struct osb_config c;
    struct osb_err e = {0};
    OK(osb_config_load(NULL, &c, &e) == 0, "~/.sandbox.toml is read");
    IS_INT(c.server.port, 1111, "port from ~/.sandbox.toml");
    IS_STR(c.path, home_cfg, "path of the file read");
    osb_config_free(&c);

    setenv("SANDBOX_CONFIG_PATH", env_cfg, 1);
    OK(osb_config_load(NULL, &c, &e) == 0, "SANDBOX_CONFIG_PATH is read");
    IS_INT(c.server.port, 2222, "SANDBOX_CONFIG_PATH wins over ~/.sandbox.toml");
    osb_config_free(&c);
    OK(osb_config_load(arg_cfg, &c, &e) == 0, "--config is read");
    IS_INT(c.server.port, 3333, "--config wins over SANDBOX_CONFIG_PATH");
    osb_config_free(&c);

    setenv("SANDBOX_CONFIG_PATH", "~/env.toml", 1);
    OK(osb_config_load(NULL, &c, &e) == 0, "~ in SANDBOX_CONFIG_PATH expands");
    IS_INT(c.server.port, 2222, "expanded env path");
    osb_config_free(&c);

    char *missing = tpath("missing.toml");
    setenv("SANDBOX_CONFIG_PATH", missing, 1);
    OK(osb_config_load(NULL, &c, &e) < 0, "missing SANDBOX_CONFIG_PATH file is an error");
    IS_INT(e.code, OSB_E_NOTFOUND, "not found");
    unsetenv("SANDBOX_CONFIG_PATH");
    OK(osb_config_load(missing, &c, &e) < 0, "missing --config file is an error");
    char *want = osb_xasprintf("config file %s does not exist", missing);
    IS_STR(e.msg, want, "missing file message");
    free(want);
    OK(osb_config_load(tmp, &c, &e) < 0, "a directory is not a config file");
    want = osb_xasprintf("config file %s: not a regular file", tmp);
    IS_STR(e.msg, want, "directory message");
    free(want);

    char cwd[PATH_MAX];
    OK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    OK(chdir(tmp) == 0, "chdir to temp dir");
    OK(osb_config_load("arg.toml", &c, &e) == 0, "relative --config path");
    IS_STR(c.path, arg_cfg, "relative path made absolute");
    osb_config_free(&c);
    OK(chdir(cwd) == 0, "chdir back");

    unlink(home_cfg);
    free(home_cfg);
    free(env_cfg);
    free(arg_cfg);
    free(missing);
}

static void test_all_keys(void)
{
    clean_env();
    struct osb_config c = load_ok("[server]\n"
                                  "host = \"0.0.0.0\"\n"
                                  "port = 9090\n"
                                  "api_key = \"secret\"\n"
                                  "eip = \"sb.example.com:9090\"\n"
                                  "max_sandbox_timeout_seconds = 86400\n"
                                  "min_sandbox_timeout_seconds = 1\n"
                                  "log_level = \"DEBUG\"\n"
                                  "max_sandboxes = 100\n"
                                  "max_concurrent_creates = 0\n"
                                  "admission_wait_seconds = 0\n"
                                  "[runtime]\n"
                                  "type = \"native\"\n"
                                  "execd_path = \"/opt/osb/execd\"\n"
                                  "init_path = \"~/bin/init\"\n"
                                  "[native]\n"
                                  "state_dir = \"/var/lib/osb\"\n"
                                  "default_disk = \"512Mi\"\n"
                                  "default_pids_max = 100\n"
                                  "log_max_bytes = 65536\n",
                                  "every key");
    IS_STR(c.server.host, "0.0.0.0", "host");
    IS_INT(c.server.port, 9090, "port");
    IS_STR(c.server.api_key, "secret", "api_key");
    IS_STR(c.server.eip, "sb.example.com:9090", "eip");
    IS_INT(c.server.max_sandbox_timeout_seconds, 86400, "max timeout");
    IS_INT(c.server.min_sandbox_timeout_seconds, 1, "min timeout");
    IS_STR(c.server.log_level, "debug", "log level normalized to lower case");
    IS_INT(c.server.max_sandboxes, 100, "max_sandboxes");
    IS_INT(c.server.max_concurrent_creates, 0, "max_concurrent_creates 0 = no cap");
    IS_INT(c.server.admission_wait_seconds, 0, "admission_wait_seconds 0 = fail at once");
    IS_STR(c.runtime.execd_path, "/opt/osb/execd", "execd_path");
    char *want = osb_xasprintf("%s/bin/init", tmp);
    IS_STR(c.runtime.init_path, want, "init_path with ~ expanded");
    free(want);
    IS_STR(c.native.state_dir, "/var/lib/osb", "state_dir");
    IS_INT(c.native.default_disk_bytes, 512LL << 20, "default_disk from a quantity");
    IS_INT(c.native.default_pids_max, 100, "default_pids_max");
    IS_INT(c.native.log_max_bytes, 65536, "log_max_bytes from an integer");
    osb_config_free(&c);

    c = load_ok("[native]\ndefault_disk = 2147483648\nlog_max_bytes = \"1.5Mi\"\n"
                "state_dir = \"rel/state\"\n[server]\nlog_level = \"warning\"\napi_key = \"\"\n",
                "sizes and aliases");
    IS_INT(c.native.default_disk_bytes, 2147483648LL, "disk as an integer");
    IS_INT(c.native.log_max_bytes, 1572864, "log size with a fraction");
    IS_STR(c.server.log_level, "warn", "warning -> warn");
    IS_STR(c.server.api_key, "", "empty api key = none");
    char cwd[PATH_MAX];
    OK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    want = osb_xasprintf("%s/rel/state", cwd);
    IS_STR(c.native.state_dir, want, "relative state_dir made absolute");
    free(want);
    osb_config_free(&c);

    c = load_ok("", "an empty file");
    IS_INT(c.server.port, 8080, "empty file gives defaults");
    osb_config_free(&c);
}

/* An upstream-style file: unknown tables and upstream-only keys load. */
static void test_upstream(void)
{
    clean_env();
    const char *upstream =
        "# upstream style\n"
        "[server]\nhost = \"127.0.0.1\"\nport = 8080\nmax_sandbox_timeout_seconds = 86400\n"
        "timeout_keep_alive = 30\nlimit_concurrency = 1024\nbacklog = 2048\n"
        "thread_pool_size = 200\nloop = \"auto\"\nhttp = \"auto\"\n"
        "[log]\nlevel = \"INFO\"\nfile_enabled = false\n"
        "[runtime]\ntype = \"%s\"\nexecd_image = \"opensandbox/execd:v1.0.22\"\n"
        "[storage]\nallowed_host_paths = []\nvolume_default_size = \"1Gi\"\n"
        "[store]\ntype = \"sqlite\"\npath = \"~/.opensandbox/opensandbox.db\"\n"
        "[docker]\nnetwork_mode = \"bridge\"\nport_range_min = 40000\n"
        "drop_capabilities = [\"AUDIT_WRITE\", \"MKNOD\"]\nno_new_privileges = true\n"
        "pids_limit = 4096\nseccomp_profile = \"\"\n"
        "[kubernetes]\nnamespace = \"opensandbox\"\n"
        "[ingress]\nmode = \"direct\"\n[ingress.gateway]\naddress = \"x\"\n"
        "[egress]\nimage = \"opensandbox/egress:v1.1.7\"\nmode = \"dns\"\n"
        "readiness_timeout_seconds = 30.0\n"
        "[renew_intent]\nenabled = false\nmin_interval_seconds = 60\nredis.enabled = false\n"
        "[secure_runtime]\ntype = \"\"\n";
    char text[4096];
    snprintf(text, sizeof text, upstream, "native");
    struct osb_config c = load_ok(text, "upstream-style file with native runtime loads");
    IS_INT(c.server.max_sandbox_timeout_seconds, 86400, "upstream max timeout");
    IS_STR(c.server.log_level, "info", "[log] level honoured");
    IS_INT(c.storage.volume_default_bytes, 1LL << 30, "upstream volume_default_size honoured");
    IS_INT(c.storage.volume_max_bytes, 1LL << 40, "volume_max_size defaults to 1Ti");
    osb_config_free(&c);
    c = load_ok("[storage]\nvolume_default_size = \"32Mi\"\nvolume_max_size = 1073741824\n",
                "pvc sizes as a quantity and as bytes");
    IS_INT(c.storage.volume_default_bytes, 32LL << 20, "volume_default_size 32Mi");
    IS_INT(c.storage.volume_max_bytes, 1LL << 30, "volume_max_size in bytes");
    osb_config_free(&c);
    load_fails("[storage]\nvolume_default_size = \"1Mi\"\n",
               "FILE:2: [storage] volume_default_size: must be between 8388608 and "
               "1125899906842624 bytes",
               "a claim default below 8Mi");
    snprintf(text, sizeof text, upstream, "docker");
    load_fails(text,
               "FILE:16: [runtime] type: runtime type 'docker' is not supported yet "
               "(use \"native\")",
               "docker runtime");
    snprintf(text, sizeof text, upstream, "kubernetes");
    load_fails(text,
               "FILE:16: [runtime] type: runtime type 'kubernetes' is not supported yet "
               "(use \"native\")",
               "kubernetes runtime");
    c = load_ok("[log]\nlevel = \"ERROR\"\n[server]\nlog_level = \"debug\"\n",
                "server.log_level beats [log] level");
    IS_STR(c.server.log_level, "debug", "server.log_level wins");
    osb_config_free(&c);
    load_fails("[log]\nlevel = \"LOUD\"\n",
               "FILE:2: [log] level: unknown level 'LOUD' "
               "(expected error, warn, info or debug)",
               "bad [log] level");
}

static void test_env(void)
{
    clean_env();
    setenv("OPENSANDBOX_SERVER_API_KEY", "from-env", 1);
    setenv("OPENSANDBOX_INSECURE_SERVER", "YES", 1);
    struct osb_config c = load_ok("[server]\napi_key = \"from-file\"\n", "env overrides");
    IS_STR(c.server.api_key, "from-env", "OPENSANDBOX_SERVER_API_KEY overrides the file");
    OK(c.insecure, "OPENSANDBOX_INSECURE_SERVER=YES");
    osb_config_free(&c);
    setenv("OPENSANDBOX_SERVER_API_KEY", "", 1);
    setenv("OPENSANDBOX_INSECURE_SERVER", "yes", 1);
    c = load_ok("[server]\napi_key = \"from-file\"\n", "empty env");
    IS_STR(c.server.api_key, "from-file", "an empty OPENSANDBOX_SERVER_API_KEY does not override");
    OK(!c.insecure, "only the exact YES sets insecure");
    osb_config_free(&c);
    clean_env();
    struct osb_err e = {0};
    setenv("OPENSANDBOX_SERVER_API_KEY", "k", 1);
    OK(osb_config_load(NULL, &c, &e) == 0, "env applies with built-in defaults too");
    IS_STR(c.server.api_key, "k", "env key without a file");
    osb_config_free(&c);
    clean_env();
}

static void test_errors(void)
{
    clean_env();
    load_fails("[server]\nport = 70000\n", "FILE:2: [server] port: must be an integer in 1..65535",
               "port out of range");
    load_fails("[server]\nport = \"80\"\n", "FILE:2: [server] port: must be an integer in 1..65535",
               "port as a string");
    load_fails("[server]\nport = 80.0\n", "FILE:2: [server] port: must be an integer in 1..65535",
               "port as a float");
    load_fails("\n[server]\n\nprot = 80\n",
               "FILE:4: [server] prot: unknown key (did you mean "
               "'port'?)",
               "typo gets a suggestion");
    load_fails("[native]\nstate_directory = \"/x\"\n",
               "FILE:2: [native] state_directory: "
               "unknown key",
               "unknown key");
    load_fails("[server.tls]\ncert = \"x\"\n", "FILE:1: [server] tls: unknown key",
               "sub-table of our table");
    load_fails("[server]\nhost = \"\"\n", "FILE:2: [server] host: must not be empty", "empty host");
    load_fails("[server]\nhost = 1\n", "FILE:2: [server] host: must be a string", "host type");
    load_fails("[server]\napi_key = true\n", "FILE:2: [server] api_key: must be a string",
               "api_key type");
    load_fails("[server]\nlog_level = \"loud\"\n",
               "FILE:2: [server] log_level: unknown level "
               "'loud' (expected error, warn, info or debug)",
               "bad log level");
    load_fails("[server]\nmax_sandboxes = -1\n",
               "FILE:2: [server] max_sandboxes: must be an integer in 0..10000000",
               "negative max_sandboxes");
    load_fails("[server]\nadmission_wait_seconds = 3601\n",
               "FILE:2: [server] admission_wait_seconds: must be an integer in 0..3600",
               "admission wait over an hour");
    load_fails("[server]\nmin_sandbox_timeout_seconds = 0\n",
               "FILE:2: [server] "
               "min_sandbox_timeout_seconds: must be an integer in 1..316224000",
               "min timeout 0");
    load_fails("[server]\nmax_sandbox_timeout_seconds = -1\n",
               "FILE:2: [server] "
               "max_sandbox_timeout_seconds: must be an integer in 0..316224000",
               "negative max");
    load_fails("[server]\nmax_sandbox_timeout_seconds = 30\n",
               "FILE:2: [server] "
               "max_sandbox_timeout_seconds: must be 0 (no cap) or at least "
               "min_sandbox_timeout_seconds (60)",
               "max below min");
    struct osb_config c = load_ok("[server]\nmax_sandbox_timeout_seconds = 30\n"
                                  "min_sandbox_timeout_seconds = 5\n",
                                  "max above a low min");
    IS_INT(c.server.max_sandbox_timeout_seconds, 30, "low max allowed with low min");
    osb_config_free(&c);
    load_fails("[runtime]\ntype = \"podman\"\n",
               "FILE:2: [runtime] type: unknown runtime type "
               "'podman' (there is: native, gvisor)",
               "unknown runtime");
    struct osb_config g = load_ok("[runtime]\ntype = \"gvisor\"\n", "runtime gvisor");
    IS_STR(g.runtime.type, "gvisor", "type gvisor kept");
    osb_config_free(&g);
    load_fails("[runtime]\nexecd_path = \"\"\n",
               "FILE:2: [runtime] execd_path: must not be "
               "empty",
               "empty execd_path");
    load_fails("[native]\ndefault_disk = \"lots\"\n",
               "FILE:2: [native] default_disk: must be a "
               "size: bytes as an integer, or a string like \"512Mi\" or \"1Gi\"",
               "bad quantity");
    load_fails("[native]\ndefault_disk = 1.5\n",
               "FILE:2: [native] default_disk: must be a "
               "size: bytes as an integer, or a string like \"512Mi\" or \"1Gi\"",
               "size as a float");
    load_fails("[native]\ndefault_disk = \"1Ki\"\n",
               "FILE:2: [native] default_disk: must be "
               "between 1048576 and 1125899906842624 bytes",
               "disk too small");
    load_fails("[native]\nuser_namespaces = 1\n",
               "FILE:2: [native] user_namespaces: must be true or false",
               "user_namespaces not a bool");
    {
        struct osb_config u =
            load_ok("[native]\nuser_namespaces = true\nuserns_range = \"65536:131072\"\n",
                    "user namespaces on");
        OK(u.native.user_namespaces, "user_namespaces = true read");
        OK(u.native.user_namespaces_set, "and marked explicit");
        IS_STR(u.native.userns_range, "65536:131072", "userns_range read");
        osb_config_free(&u);
    }
    {
        struct osb_config off = load_ok("[native]\nuser_namespaces = false\n", "userns off");
        OK(!off.native.user_namespaces && off.native.user_namespaces_set,
           "user_namespaces = false read, explicit");
        osb_config_free(&off);
    }
    load_fails("[native]\nuserns_range = \"100000\"\n",
               "FILE:2: [native] userns_range: `100000` is not \"start:count\" (two decimal "
               "numbers, e.g. \"100000:6553600\")",
               "userns_range without a count");
    load_fails("[native]\nuserns_range = 100000\n",
               "FILE:2: [native] userns_range: must be a string", "userns_range not a string");
    load_fails("[native]\n\nuserns_range = \"1000:65536\"\n",
               "FILE:3: [native] userns_range: `1000:65536`: start must be at least 65536 (the "
               "ids below are the host's own users, root among them)",
               "userns_range over the host's own users");
    load_fails("[native]\nuserns_range = \"100000:100000\"\n",
               "FILE:2: [native] userns_range: `100000:100000`: count must be a positive "
               "multiple of 65536 (one range per sandbox)",
               "userns_range count not a multiple of 65536");
    load_fails("[native]\nuserns_range = \"100000:0\"\n",
               "FILE:2: [native] userns_range: `100000:0`: count must be a positive "
               "multiple of 65536 (one range per sandbox)",
               "userns_range count 0");
    load_fails("[native]\nuserns_range = \"4294901760:65536\"\n",
               "FILE:2: [native] userns_range: `4294901760:65536`: start + count must not "
               "exceed 4294967295 (the kernel's invalid id)",
               "userns_range past 2^32 - 1");
    load_fails("[native]\nuserns_range = \"99999999999:65536\"\n",
               "FILE:2: [native] userns_range: `99999999999:65536` is not \"start:count\" (two "
               "decimal numbers, e.g. \"100000:6553600\")",
               "userns_range start over 32 bits");
    load_fails("[native]\nlog_max_bytes = \"2Gi\"\n",
               "FILE:2: [native] log_max_bytes: must be "
               "between 4096 and 1073741824 bytes",
               "log too large");
    load_fails("[native]\ndefault_pids_max = 0\n",
               "FILE:2: [native] default_pids_max: must be "
               "an integer in 16..4194304",
               "pids 0");
    load_fails("server = 1\n", "FILE:1: [server]: must be a table", "our table as a value");
    load_fails("port = 8080\n", "FILE:1: 'port': keys must be inside a table such as [server]",
               "top-level key");
    load_fails("[server]\nport = 8080\nport = 8081\n",
               "FILE: line 3, column 1: duplicate key "
               "'server.port'",
               "TOML error names file, line and column");
    load_fails("[server]\nport 8080\n",
               "FILE: line 2, column 6: expected '=' after key, found "
               "'8'",
               "syntax error");
    char *big = malloc(2 * 1024 * 1024);
    memset(big, '#', 2 * 1024 * 1024 - 1);
    big[2 * 1024 * 1024 - 1] = 0;
    load_fails(big, "config file FILE: larger than 1048576 bytes", "oversized file");
    free(big);
}

static void test_example(void)
{
    clean_env();
    char *p = tpath("deep/er/example.toml");
    struct osb_err e = {0};
    OK(osb_config_write_example(p, "native", NULL, &e) == 0, "example written, parents created");
    struct stat st;
    OK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "example is mode 0600");
    OK(osb_config_write_example(p, "native", NULL, &e) < 0, "refuses to overwrite");
    IS_INT(e.code, OSB_E_EXISTS, "exists code");
    char *want = osb_xasprintf("%s already exists; not overwriting it", p);
    IS_STR(e.msg, want, "overwrite message");
    free(want);

    struct osb_config c, d;
    OK(osb_config_load(p, &c, &e) == 0, "the example loads back");
    OK(osb_config_load(tp("nothing-here-so-defaults.toml"), &d, &e) < 0, "sanity: missing");
    OK(osb_config_load(NULL, &d, &e) == 0, "defaults");
    IS_STR(c.server.host, d.server.host, "example host = default");
    IS_INT(c.server.port, d.server.port, "example port = default");
    OK(c.server.api_key == NULL && c.server.eip == NULL, "example leaves key and eip unset");
    IS_INT(c.server.max_sandbox_timeout_seconds, d.server.max_sandbox_timeout_seconds, "max");
    IS_INT(c.server.min_sandbox_timeout_seconds, d.server.min_sandbox_timeout_seconds, "min");
    IS_STR(c.server.log_level, d.server.log_level, "log level");
    IS_STR(c.runtime.type, d.runtime.type, "runtime");
    IS_STR(c.runtime.execd_path, d.runtime.execd_path, "execd path");
    IS_STR(c.runtime.init_path, d.runtime.init_path, "init path");
    IS_STR(c.native.state_dir, d.native.state_dir, "state dir");
    IS_INT(c.native.default_disk_bytes, d.native.default_disk_bytes, "disk");
    IS_INT(c.native.default_pids_max, d.native.default_pids_max, "pids");
    IS_INT(c.native.log_max_bytes, d.native.log_max_bytes, "log size");
    osb_config_free(&c);
    osb_config_free(&d);

    FILE *f = fopen(p, "r");
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    const char *keys[] = {"host =",
                          "port =",
                          "# api_key =",
                          "# eip =",
                          "max_sandbox_timeout_seconds =",
                          "min_sandbox_timeout_seconds =",
                          "log_level =",
                          "type = \"native\"",
                          "# execd_path =",
                          "# init_path =",
                          "state_dir =",
                          "default_disk =",
                          "default_pids_max =",
                          "log_max_bytes =",
                          "[server]",
                          "[runtime]",
                          "[native]"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "example has %s", keys[i]);
        OK(strstr(text, keys[i]) != NULL, what);
    }
    OK(strstr(text, "timeout_keep_alive") == NULL, "ignored upstream keys are not in the example");

    OK(osb_config_write_example(tp("d.toml"), "docker", NULL, &e) < 0, "docker example refused");
    IS_INT(e.code, OSB_E_UNSUPPORTED, "docker example unsupported");
    IS_STR(e.msg,
           "example 'docker' is not available: runtime 'docker' is not supported yet "
           "(use --example native)",
           "docker example message");
    OK(osb_config_write_example(tp("d.toml"), "bogus", NULL, &e) < 0, "unknown example refused");
    IS_STR(e.msg, "unknown example 'bogus' (expected native)", "unknown example message");
    OK(access(tp("d.toml"), F_OK) < 0, "nothing written for a refused example");
    OK(osb_config_write_example(tp("null.toml"), NULL, NULL, &e) == 0, "NULL example = native");
    OK(osb_config_write_example(tp("subnet.toml"), NULL, "10.7.0.0/16", &e) == 0,
       "example with a chosen subnet");
    struct osb_config sc;
    OK(osb_config_load(tp("subnet.toml"), &sc, &e) == 0, "it loads");
    IS_STR(sc.network.subnet, "10.7.0.0/16", "the chosen subnet is written");
    osb_config_free(&sc);
    OK(osb_config_write_example("/proc/nope/x.toml", "native", NULL, &e) < 0,
       "unwritable path fails");
    OK(osb_config_write_example("", "native", NULL, &e) < 0, "empty path refused");
    IS_STR(e.msg, "init-config needs a file path", "empty path message");
    char *under_file = osb_xasprintf("%s/x.toml", p);
    OK(osb_config_write_example(under_file, "native", NULL, &e) < 0, "parent is a file: fails");
    want = osb_xasprintf("create %s: Not a directory", under_file);
    IS_STR(e.msg, want, "parent is a file: message");
    free(want);
    free(under_file);
    free(p);
}

static void test_storage(void)
{
    clean_env();
    struct osb_config c = load_ok("[native]\nstate_dir = \"/srv/osb\"\n", "no [storage]");
    OK(c.storage.allowed_host_paths && !c.storage.allowed_host_paths[0],
       "no allowed host paths by default");
    IS_STR(c.storage.volumes_dir, "/srv/osb/volumes", "volumes_dir defaults under state_dir");
    osb_config_free(&c);
    c = load_ok("[storage]\nallowed_host_paths = [\"/data/\", \"//srv//x/./y\", \"/\"]\n"
                "volumes_dir = \"/var/lib/vols\"\n",
                "allowed_host_paths and volumes_dir");
    IS_STR(c.storage.allowed_host_paths[0], "/data", "trailing slash dropped");
    IS_STR(c.storage.allowed_host_paths[1], "/srv/x/y", "path normalized");
    IS_STR(c.storage.allowed_host_paths[2], "/", "root stays /");
    OK(c.storage.allowed_host_paths[3] == NULL, "NULL-terminated");
    IS_STR(c.storage.volumes_dir, "/var/lib/vols", "volumes_dir");
    osb_config_free(&c);
    load_fails("[storage]\nallowed_host_paths = \"/data\"\n",
               "FILE:2: [storage] allowed_host_paths: must be an array of absolute paths",
               "allowed_host_paths not an array");
    load_fails("[storage]\nallowed_host_paths = [\"/a\", \"rel\"]\n",
               "FILE:2: [storage] allowed_host_paths: element 2 must be an absolute path without "
               "'..'",
               "relative allowed host path");
    load_fails("[storage]\nallowed_host_paths = [\"/a/../etc\"]\n",
               "FILE:2: [storage] allowed_host_paths: element 1 must be an absolute path without "
               "'..'",
               "'..' in an allowed host path");
    load_fails("[storage]\nalowed_host_paths = []\n",
               "FILE:2: [storage] alowed_host_paths: unknown key (did you mean "
               "'allowed_host_paths'?)",
               "typo in [storage]");
}

/* allowed as one comma-joined string, for comparing. */
static const char *joined(char *const *v)
{
    static char buf[256];
    buf[0] = 0;
    for (size_t i = 0; v && v[i]; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "", v[i]);
    return buf;
}

static void test_secure_default(void)
{
    clean_env();
    struct osb_config c = load_ok("", "no [secure_runtime]");
    IS_STR(c.runtime.type, "native", "default backend native");
    IS_STR(joined(c.secure_runtime.allowed), "native", "allowed: only the default");
    OK(!c.secure_runtime.type && !c.secure_runtime.docker_runtime &&
           !c.secure_runtime.k8s_runtime_class,
       "upstream keys unset");
    osb_config_free(&c);
    struct osb_err e = {0};
    OK(osb_config_load(NULL, &c, &e) == 0, "built-in defaults");
    IS_STR(joined(c.secure_runtime.allowed), "native", "defaults: allowed is the default");
    osb_config_free(&c);
}

static void test_secure_type(void)
{
    clean_env();
    struct osb_config c = load_ok("[secure_runtime]\ntype = \"gvisor\"\n", "type gvisor");
    IS_STR(c.runtime.type, "gvisor", "secure_runtime.type gvisor is the default backend");
    IS_STR(joined(c.secure_runtime.allowed), "gvisor", "allowed: gvisor only");
    osb_config_free(&c);
    c = load_ok("[runtime]\ntype = \"native\"\n[secure_runtime]\ntype = \"gvisor\"\n",
                "runtime native + secure gvisor (upstream's docker + runsc)");
    IS_STR(c.runtime.type, "gvisor", "gvisor wins over native");
    osb_config_free(&c);
    c = load_ok("[runtime]\ntype = \"gvisor\"\n[secure_runtime]\ntype = \"gvisor\"\n",
                "both gvisor");
    IS_STR(c.runtime.type, "gvisor", "both say gvisor");
    osb_config_free(&c);
    c = load_ok("[secure_runtime]\ntype = \"\"\n", "type \"\" (upstream: none)");
    IS_STR(c.runtime.type, "native", "empty type: native");
    IS_STR(c.secure_runtime.type, "", "empty type kept as written");
    osb_config_free(&c);
    load_fails("[runtime]\ntype = \"gvisor\"\n[secure_runtime]\ntype = \"\"\n",
               "FILE:4: [secure_runtime] type: \"\" contradicts [runtime] type = \"gvisor\"; "
               "set one of them only",
               "empty secure type contradicts runtime gvisor");
    load_fails("[secure_runtime]\ntype = \"kata\"\n",
               "FILE:2: [secure_runtime] type: secure runtime 'kata' does not exist in this "
               "server yet; the runtimes are: native, gvisor (use \"gvisor\", or \"\" for "
               "[runtime] type)",
               "kata: not yet");
    load_fails("[secure_runtime]\n\ntype = \"firecracker\"\n",
               "FILE:3: [secure_runtime] type: secure runtime 'firecracker' does not exist in "
               "this server yet; the runtimes are: native, gvisor (use \"gvisor\", or \"\" for "
               "[runtime] type)",
               "firecracker: not yet, with its line");
    load_fails("[secure_runtime]\ntype = \"native\"\n",
               "FILE:2: [secure_runtime] type: unknown secure runtime 'native' (expected \"\" or "
               "\"gvisor\")",
               "native is not a secure runtime");
    load_fails("[secure_runtime]\ntype = 1\n", "FILE:2: [secure_runtime] type: must be a string",
               "type not a string");
}

static void test_secure_allowed(void)
{
    clean_env();
    struct osb_config c =
        load_ok("[secure_runtime]\nallowed = [\"native\", \"gvisor\"]\n", "allowed both");
    IS_STR(c.runtime.type, "native", "default still native");
    IS_STR(joined(c.secure_runtime.allowed), "native,gvisor", "allowed: default first");
    osb_config_free(&c);
    c = load_ok("[secure_runtime]\ntype = \"gvisor\"\nallowed = [\"native\", \"gvisor\", "
                "\"native\"]\n",
                "allowed with a repeat, gvisor default");
    IS_STR(joined(c.secure_runtime.allowed), "gvisor,native", "deduplicated, default first");
    osb_config_free(&c);
    c = load_ok("[secure_runtime]\nallowed = [\"gvisor\"]\n", "allowed without the default");
    IS_STR(joined(c.secure_runtime.allowed), "native,gvisor", "the default is always allowed");
    osb_config_free(&c);
    c = load_ok("[secure_runtime]\nallowed = []\n", "allowed empty");
    IS_STR(joined(c.secure_runtime.allowed), "native", "empty: the default only");
    osb_config_free(&c);
    load_fails("[secure_runtime]\nallowed = [\"native\", \"runc\"]\n",
               "FILE:2: [secure_runtime] allowed: element 1: unknown runtime 'runc' (there is: "
               "native, gvisor)",
               "unknown name in allowed");
    load_fails("[secure_runtime]\nallowed = [\"kata\"]\n",
               "FILE:2: [secure_runtime] allowed: element 0: this server has no runtime 'kata' "
               "(there is: native, gvisor)",
               "kata in allowed");
    load_fails("[secure_runtime]\nallowed = \"gvisor\"\n",
               "FILE:2: [secure_runtime] allowed: must be an array of strings",
               "allowed not an array");
    load_fails("[secure_runtime]\nalowed = []\n",
               "FILE:2: [secure_runtime] alowed: unknown key (did you mean 'allowed'?)",
               "typo in [secure_runtime]");
    c = load_ok("[secure_runtime]\ntype = \"gvisor\"\ndocker_runtime = \"runsc\"\n"
                "k8s_runtime_class = \"gvisor\"\n",
                "upstream's docker_runtime and k8s_runtime_class accepted");
    IS_STR(c.secure_runtime.docker_runtime, "runsc", "docker_runtime kept (for the log line)");
    IS_STR(c.secure_runtime.k8s_runtime_class, "gvisor", "k8s_runtime_class kept");
    IS_STR(c.runtime.type, "gvisor", "and gvisor is the default");
    osb_config_free(&c);
}

int main(void)
{
    char tmpl[] = "/tmp/osb-config-test.XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    snprintf(tmp, sizeof tmp, "%s", tmpl);
    test_defaults();
    test_resolution();
    test_all_keys();
    test_upstream();
    test_env();
    test_errors();
    test_example();
    test_storage();
    test_secure_default();
    test_secure_type();
    test_secure_allowed();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmp);
    return tap_done();
}
