/* A driver for tests/integration/test_image_store.py: runs one store
 * operation against a live local registry and prints the result as JSON.
 * Run by `make test` without OSB_TEST_REGISTRY, it only reports a skip.
 *
 *   OSB_TEST_REGISTRY=1 test_pull_live STATE VERB ARGS...
 *   VERB: pull REF | get NAME | list | rm NAME | prune | import NAME TAR
 *         | export NAME TAR | totar LAYERDIR OUT | copytree SRC DST
 * Registry options from the environment: OSB_TEST_USER, OSB_TEST_PASS,
 * OSB_TEST_INSECURE and OSB_TEST_MIRRORS (comma lists), OSB_TEST_OS,
 * OSB_TEST_ARCH. Failure: {"error": CODE, "message": ...}, exit 1. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/layer.h"
#include "image/store.h"

static const char *code_name(enum osb_errc c)
{
    static const char *const names[] = {"OK",       "INVALID", "NOTFOUND",    "EXISTS",
                                        "TOOBIG",   "RANGE",   "UNSUPPORTED", "SYS",
                                        "INTERNAL", "DENIED",  "UNAVAILABLE", "INTEGRITY"};
    return (size_t)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

static int fail(const struct osb_err *err)
{
    json_t *j = json_pack("{s:s, s:s}", "error", code_name(err->code), "message", err->msg);
    json_dumpf(j, stdout, 0);
    puts("");
    json_decref(j);
    return 1;
}

static json_t *strv(char **v)
{
    if (!v)
        return json_null();
    json_t *a = json_array();
    for (; *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *image_json(const struct osb_image *im)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:s?, s:s?, s:I, s:I}", "name", im->name,
                     "digest", im->digest, "base", im->base, "layers", strv(im->layers), "env",
                     strv(im->env), "entrypoint", strv(im->entrypoint), "cmd", strv(im->cmd),
                     "workdir", im->workdir, "user", im->user, "size", (json_int_t)im->size_bytes,
                     "created", (json_int_t)im->created_ms);
}

static int print(json_t *j)
{
    json_dumpf(j, stdout, 0);
    puts("");
    json_decref(j);
    return 0;
}

static const char **list_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return NULL;
    char *copy = strdup(v);
    const char **out = calloc(strlen(v) + 2, sizeof *out);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return out;
}

/* out[0] points into the one copy list_env made. */
static void list_free(const char **l)
{
    if (l)
        free((char *)l[0]);
    free(l);
}

static void progress(void *ud, const char *line)
{
    (void)ud;
    fprintf(stderr, "%s\n", line);
}

static int pull(struct osb_istore *s, const char *ref)
{
    struct osb_registry_opts o = {
        .insecure = list_env("OSB_TEST_INSECURE"),
        .mirrors = list_env("OSB_TEST_MIRRORS"),
        .username = getenv("OSB_TEST_USER"),
        .password = getenv("OSB_TEST_PASS"),
        .os = getenv("OSB_TEST_OS"),
        .arch = getenv("OSB_TEST_ARCH"),
    };
    struct osb_image im;
    struct osb_err err = {0};
    int r = osb_istore_pull(s, ref, &o, progress, NULL, &im, &err);
    list_free((const char **)o.insecure);
    list_free((const char **)o.mirrors);
    if (r < 0)
        return fail(&err);
    print(image_json(&im));
    osb_image_free(&im);
    return 0;
}

static int run(struct osb_istore *s, int argc, char **argv)
{
    struct osb_err err = {0};
    const char *verb = argv[2];
    if (strcmp(verb, "pull") == 0 && argc == 4)
        return pull(s, argv[3]);
    if (strcmp(verb, "get") == 0 && argc == 4) {
        struct osb_image im;
        if (osb_istore_get(s, argv[3], &im, &err) < 0)
            return fail(&err);
        print(image_json(&im));
        osb_image_free(&im);
        return 0;
    }
    if (strcmp(verb, "list") == 0) {
        struct osb_image *v;
        size_t n;
        if (osb_istore_list(s, &v, &n, &err) < 0)
            return fail(&err);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            json_array_append_new(a, image_json(&v[i]));
            osb_image_free(&v[i]);
        }
        free(v);
        return print(a);
    }
    if (strcmp(verb, "rm") == 0 && argc == 4)
        return osb_istore_remove(s, argv[3], NULL, NULL, &err) < 0 ? fail(&err)
                                                                   : print(json_object());
    if (strcmp(verb, "prune") == 0) {
        size_t n;
        uint64_t b;
        if (osb_istore_prune(s, &n, &b, &err) < 0)
            return fail(&err);
        return print(json_pack("{s:I, s:I}", "layers", (json_int_t)n, "bytes", (json_int_t)b));
    }
    if (strcmp(verb, "import") == 0 && argc == 5)
        return osb_istore_import(s, argv[3], argv[4], &err) < 0 ? fail(&err) : print(json_object());
    if (strcmp(verb, "export") == 0 && argc == 5)
        return osb_istore_export(s, argv[3], argv[4], &err) < 0 ? fail(&err) : print(json_object());
    if (strcmp(verb, "totar") == 0 && argc == 5) {
        int fd = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int r = fd < 0 ? -1 : osb_layer_to_tar(argv[3], fd, &err);
        if (fd >= 0)
            close(fd);
        return r < 0 ? fail(&err) : print(json_object());
    }
    if (strcmp(verb, "copytree") == 0 && argc == 5) {
        int fd = open(argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = fd < 0 ? -1 : osb_layer_copy_tree(fd, argv[4], &err);
        if (fd >= 0)
            close(fd);
        return r < 0 ? fail(&err) : print(json_object());
    }
    if (strcmp(verb, "snapshot") == 0 && argc == 6) {
        /* snapshot NAME BASE SRC: copy_tree into a new layer, then add */
        char dir[4096];
        osb_istore_new_layer(s, "snap", dir, sizeof dir);
        int fd = open(argv[5], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || osb_layer_copy_tree(fd, dir, &err) < 0)
            return fail(&err);
        close(fd);
        char *layers[] = {dir, NULL};
        struct osb_image im = {.layers = layers};
        snprintf(im.name, sizeof im.name, "%s", argv[3]);
        snprintf(im.base, sizeof im.base, "%s", argv[4]);
        return osb_istore_add(s, &im, &err) < 0 ? fail(&err) : print(json_object());
    }
    fprintf(stderr, "bad usage\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (!getenv("OSB_TEST_REGISTRY") || argc < 3) {
        puts("ok - # SKIP live registry checks run from tests/integration/test_image_store.py");
        return 0;
    }
    struct osb_istore *s;
    struct osb_err err = {0};
    if (osb_istore_open(argv[1], &s, &err) < 0)
        return fail(&err);
    int rc = run(s, argc, argv);
    osb_istore_close(s);
    return rc;
}
