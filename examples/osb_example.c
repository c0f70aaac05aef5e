/* A whole program on libopensandbox: create a sandbox, run a command with
 * live output, write and read back a file, run Python in a code context,
 * and delete the sandbox.
 *
 *   cc osb_example.c -lopensandbox -o osb_example
 *   OPEN_SANDBOX_DOMAIN=localhost:8080 OPEN_SANDBOX_API_KEY=... ./osb_example [IMAGE]
 *
 * Exits 0 when every step worked; prints each failure with the server's
 * error code. */
#include <stdio.h>
#include <string.h>

#include <osb/opensandbox.h>

static int print_out(void *ud, const char *text, size_t len)
{
    fprintf(ud, "  | %.*s\n", (int)len, text);
    return 0;
}

static int report(const char *step, const struct osbc_error *err)
{
    fprintf(stderr, "%s failed: %s", step, err->message);
    if (err->server_code[0])
        fprintf(stderr, " (%s, HTTP %d)", err->server_code, err->http_status);
    fprintf(stderr, "\n");
    return 1;
}

static int work(osbc_client *c, const char *id)
{
    struct osbc_error err;
    struct osbc_exec_cbs cbs = {.on_stdout = print_out, .on_stderr = print_out, .ud = stdout};
    struct osbc_exec_result r = {0};
    printf("command: uname -s; echo to-stderr >&2; exit 3\n");
    if (osbc_command_run(c, id, "uname -s; echo to-stderr >&2; exit 3", NULL, &cbs, &r, &err))
        return report("command run", &err);
    printf("  exit code %d\n", r.exit_code);
    osbc_exec_result_clear(&r);

    const char text[] = "hello from libopensandbox\n";
    if (osbc_file_write(c, id, "/tmp/example.txt", text, strlen(text), NULL, &err))
        return report("file write", &err);
    char *data;
    size_t len;
    if (osbc_file_read(c, id, "/tmp/example.txt", &data, &len, &err))
        return report("file read", &err);
    printf("file: %zu bytes, %s\n", len,
           len == strlen(text) && !memcmp(data, text, len) ? "as written" : "DIFFERENT");
    int same = len == strlen(text) && !memcmp(data, text, len);
    osbc_free(data);

    printf("code: python\n");
    if (osbc_code_run(c, id, NULL, "python", "x = 6 * 7\nprint(x)", &cbs, &r, &err))
        return report("code run", &err);
    osbc_exec_result_clear(&r);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct osbc_config cfg;
    osbc_config_from_env(&cfg);
    struct osbc_error err;
    osbc_client *c;
    if (osbc_client_new(&cfg, &c, &err))
        return report("client", &err);

    const char *entry[] = {"tail", "-f", "/dev/null"};
    struct osbc_create_opts o = {
        .image = argc > 1 ? argv[1] : "host",
        .entrypoint = entry,
        .n_entrypoint = 3,
        .timeout_s = 600,
    };
    char *id;
    if (osbc_sandbox_create(c, &o, NULL, &id, &err)) {
        osbc_client_free(c);
        return report("create", &err);
    }
    printf("sandbox %s is ready\n", id);
    int rc = work(c, id);
    if (osbc_sandbox_delete(c, id, &err))
        rc = report("delete", &err);
    else
        printf("sandbox %s deleted\n", id);
    osbc_free(id);
    osbc_client_free(c);
    return rc;
}
