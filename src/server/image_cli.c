#include "server/image_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"

static int fail(const char *verb, const struct osb_err *err)
{
    fprintf(stderr, "image %s: %s\n", verb, err->msg);
    return 1;
}

static int usage(void)
{
    fputs("usage: image pull REF [--username U] [--password-stdin] [--platform OS/ARCH]\n"
          "       image list | image rm NAME | image prune\n"
          "       image import NAME FILE.tar | image export NAME FILE.tar\n"
          "       image push NAME REF [--username U] [--password-stdin]\n",
          stderr);
    return 2;
}

static void on_progress(void *ud, const char *line)
{
    (void)ud;
    fprintf(stderr, "%s\n", line);
}

/* One line from stdin, without its newline; NULL at EOF. */
static char *read_password(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

/* Options from argv[first]; platform NULL: no --platform (push). */
static int pull_args(int argc, char **argv, int first, struct osb_registry_opts *o, char **password,
                     char *platform, size_t n)
{
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--username") == 0 && i + 1 < argc) {
            o->username = argv[++i];
        } else if (strcmp(argv[i], "--password-stdin") == 0) {
            if (!(*password = read_password()))
                return fprintf(stderr, "image %s: no password on stdin\n", argv[1]), 1;
            o->password = *password;
        } else if (platform && strcmp(argv[i], "--platform") == 0 && i + 1 < argc) {
            snprintf(platform, n, "%s", argv[++i]);
            char *slash = strchr(platform, '/');
            if (!slash || slash == platform || !slash[1])
                return fprintf(stderr, "image pull: --platform wants OS/ARCH, not `%s`\n",
                               platform),
                       1;
            *slash = '\0';
            o->os = platform;
            o->arch = slash + 1;
            char *variant = strchr(slash + 1, '/'); /* linux/arm/v7: variant ignored */
            if (variant)
                *variant = '\0';
        } else {
            return usage();
        }
    }
    return 0;
}

static int cmd_pull(struct osb_istore *s, const struct osb_registry_opts *defaults, int argc,
                    char **argv)
{
    if (argc < 3)
        return usage();
    struct osb_registry_opts o = defaults ? *defaults : (struct osb_registry_opts){0};
    char platform[128];
    char *password = NULL;
    int rc = pull_args(argc, argv, 3, &o, &password, platform, sizeof platform);
    if (rc == 0) {
        struct osb_err err = {0};
        struct osb_image im;
        if (osb_istore_pull(s, argv[2], &o, on_progress, NULL, &im, &err) < 0) {
            rc = fail("pull", &err);
        } else {
            printf("%s %s\n", im.name, im.digest);
            osb_image_free(&im);
        }
    }
    if (password) {
        explicit_bzero(password, strlen(password));
        free(password);
    }
    return rc;
}

static int cmd_push(struct osb_istore *s, const struct osb_registry_opts *defaults, int argc,
                    char **argv)
{
    if (argc < 4)
        return usage();
    struct osb_registry_opts o = defaults ? *defaults : (struct osb_registry_opts){0};
    char *password = NULL;
    int rc = pull_args(argc, argv, 4, &o, &password, NULL, 0);
    if (rc == 0) {
        struct osb_err err = {0};
        char digest[OSB_DIGEST_MAX];
        if (osb_istore_push(s, argv[2], argv[3], &o, on_progress, NULL, digest, &err) < 0)
            rc = fail("push", &err);
        else
            printf("%s %s\n", argv[3], digest);
    }
    if (password) {
        explicit_bzero(password, strlen(password));
        free(password);
    }
    return rc;
}

static int cmd_list(struct osb_istore *s)
{
    struct osb_image *v = NULL;
    size_t n = 0;
    struct osb_err err = {0};
    if (osb_istore_list(s, &v, &n, &err) < 0)
        return fail("list", &err);
    printf("%-32s %12s  %-20s  %s\n", "NAME", "SIZE", "CREATED", "DIGEST");
    printf("%-32s %12llu  %-20s  %s\n", "host", 0ULL, "-", "-");
    for (size_t i = 0; i < n; i++) {
        char when[32] = "-";
        if (v[i].created_ms > 0) {
            time_t t = (time_t)(v[i].created_ms / 1000);
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        }
        printf("%-32s %12llu  %-20s  %s\n", v[i].name, (unsigned long long)v[i].size_bytes, when,
               v[i].digest[0] ? v[i].digest : "-");
        osb_image_free(&v[i]);
    }
    free(v);
    return 0;
}

int osb_image_cli(struct osb_istore *s, const struct osb_registry_opts *defaults,
                  osb_istore_in_use_cb in_use, void *ud, int argc, char **argv)
{
    struct osb_err err = {0};
    const char *verb = argc >= 2 ? argv[1] : "";
    if (strcmp(verb, "pull") == 0)
        return cmd_pull(s, defaults, argc, argv);
    if (strcmp(verb, "push") == 0)
        return cmd_push(s, defaults, argc, argv);
    if (strcmp(verb, "list") == 0 && argc == 2)
        return cmd_list(s);
    if (strcmp(verb, "rm") == 0 && argc == 3) {
        if (osb_istore_remove(s, argv[2], in_use, ud, &err) < 0)
            return fail("rm", &err);
        printf("removed %s\n", argv[2]);
        return 0;
    }
    if (strcmp(verb, "prune") == 0 && argc == 2) {
        size_t n = 0;
        uint64_t bytes = 0;
        if (osb_istore_prune(s, &n, &bytes, &err) < 0)
            return fail("prune", &err);
        printf("removed %zu layers, freed %llu bytes\n", n, (unsigned long long)bytes);
        return 0;
    }
    if (strcmp(verb, "import") == 0 && argc == 4) {
        if (osb_istore_import(s, argv[2], argv[3], &err) < 0)
            return fail("import", &err);
        printf("imported %s from %s\n", argv[2], argv[3]);
        return 0;
    }
    if (strcmp(verb, "export") == 0 && argc == 4) {
        if (osb_istore_export(s, argv[2], argv[3], &err) < 0)
            return fail("export", &err);
        printf("exported %s to %s\n", argv[2], argv[3]);
        return 0;
    }
    return usage();
}
