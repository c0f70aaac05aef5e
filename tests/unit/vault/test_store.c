/* The encrypted store: a round trip, the key file (made 0600, kept across
 * opens, refused when short or readable by others), the directory's mode,
 * files tampered with, truncated or moved to another sandbox's name,
 * another server's key, and hostile ids. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "vault/store.h"
#include "vault/vault.h"

static char dir[] = "/tmp/osb-vstore-XXXXXX";

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 16);
    *n = f ? fread(buf, 1, 1 << 16, f) : 0;
    if (f)
        fclose(f);
    return buf;
}

static void spit(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static struct osb_vault *make_vault(void)
{
    json_t *body = json_loads("{\"credentials\":[{\"name\":\"c\",\"source\":{\"value\":"
                              "\"top-secret-value\"}}],\"bindings\":[]}",
                              0, NULL);
    struct osb_vault *v = NULL;
    struct osb_err err = {0};
    if (osb_vault_create(body, NULL, &v, &err) < 0)
        printf("# %s\n", err.msg);
    json_decref(body);
    return v;
}

/* get must fail with code, and hand out nothing. */
static void get_fails(struct osb_vault_store *st, const char *id, enum osb_errc code,
                      const char *what)
{
    struct osb_vault *w = (void *)1;
    struct osb_err err = {0};
    OK(osb_vault_store_get(st, id, &w, &err) < 0 && w == NULL, what);
    IS_INT(err.code, code, "  error code");
}

static void test_key(void)
{
    struct osb_err err = {0};
    struct osb_vault_store *st = NULL;
    char p[512], kbuf[64];
    snprintf(p, sizeof p, "%s/vault.key", dir);
    OK(osb_vault_store_open(dir, &st, &err) == 0, "open makes a key");
    struct stat sb;
    OK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 32,
       "vault.key: 32 bytes, mode 0600");
    size_t n;
    char *k1 = slurp(p, &n);
    memcpy(kbuf, k1, 32);
    free(k1);
    osb_vault_store_close(st);
    st = NULL;
    OK(osb_vault_store_open(dir, &st, &err) == 0, "a second open");
    k1 = slurp(p, &n);
    OK(n == 32 && memcmp(k1, kbuf, 32) == 0, "  keeps the key");
    free(k1);
    osb_vault_store_close(st);

    chmod(p, 0640);
    st = NULL;
    OK(osb_vault_store_open(dir, &st, &err) < 0 && err.code == OSB_E_INVALID && !st,
       "a key readable by the group is refused");
    chmod(p, 0600);
    spit(p, kbuf, 16);
    chmod(p, 0600);
    OK(osb_vault_store_open(dir, &st, &err) < 0 && err.code == OSB_E_INVALID,
       "a key of the wrong size is refused");
    spit(p, kbuf, 32);
    chmod(p, 0600);
    OK(osb_vault_store_open(dir, &st, &err) == 0, "the restored key opens");
    osb_vault_store_close(st);
}

static void test_dir(void)
{
    struct osb_err err = {0};
    struct osb_vault_store *st = NULL;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/fresh", dir);
    OK(osb_vault_store_open(sub, &st, &err) == 0, "open makes its directory");
    struct stat sb;
    OK(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700, "  mode 0700");
    osb_vault_store_close(st);
    chmod(sub, 0755);
    st = NULL;
    OK(osb_vault_store_open(sub, &st, &err) < 0 && err.code == OSB_E_INVALID,
       "a directory others may enter is refused");
    chmod(sub, 0700);
}

static void test_round_trip(struct osb_vault_store *st, struct osb_vault *v)
{
    struct osb_err err = {0};
    struct osb_vault *w = NULL;
    char p[512];
    OK(osb_vault_store_put(st, "sbx-1", v, &err) == 0, "put");
    snprintf(p, sizeof p, "%s/sbx-1.vault", dir);
    struct stat sb;
    OK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600, "  the file is 0600");
    size_t n;
    char *raw = slurp(p, &n);
    OK(n > 33 && memcmp(raw, "OSBV1", 5) == 0, "  it starts with the magic");
    OK(!memmem(raw, n, "top-secret", 10) && !memmem(raw, n, "\"c\"", 3),
       "  it holds neither value nor name");
    free(raw);
    snprintf(p, sizeof p, "%s/sbx-1.vault.tmp", dir);
    OK(access(p, F_OK) != 0, "  no temporary file is left");
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) == 0 && w, "get");
    if (w) {
        json_t *a = osb_vault_state_json(v), *b = osb_vault_state_json(w);
        OK(json_equal(a, b), "  the same vault");
        IS_STR(osb_vault_secret(w, 0), "top-secret-value", "  with its value");
        json_decref(a);
        json_decref(b);
        osb_vault_unref(w);
    }
    OK(osb_vault_store_put(st, "sbx-1", v, &err) == 0, "a second put replaces it");
    w = NULL;
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) == 0 && w, "  and it reads back");
    osb_vault_unref(w);
}

static void test_tamper(struct osb_vault_store *st)
{
    char p[512], q[512];
    size_t n;
    snprintf(p, sizeof p, "%s/sbx-1.vault", dir);
    snprintf(q, sizeof q, "%s/sbx-2.vault", dir);
    char *raw = slurp(p, &n);
    get_fails(st, "sbx-3", OSB_E_NOTFOUND, "get of a sandbox without one: OSB_E_NOTFOUND");
    spit(q, raw, n);
    get_fails(st, "sbx-2", OSB_E_INTEGRITY,
              "a file copied to another sandbox's name does not decrypt: OSB_E_INTEGRITY");
    unlink(q);
    for (size_t at = 0; at < n; at += n / 7 + 1) {
        char what[96];
        raw[at] ^= 1;
        spit(p, raw, n);
        snprintf(what, sizeof what, "a flipped byte at %zu of %zu: OSB_E_INTEGRITY", at, n);
        get_fails(st, "sbx-1", OSB_E_INTEGRITY, what);
        raw[at] ^= 1;
    }
    raw[n - 1] ^= 0x80;
    spit(p, raw, n);
    get_fails(st, "sbx-1", OSB_E_INTEGRITY, "a flipped tag byte: OSB_E_INTEGRITY");
    raw[n - 1] ^= 0x80;
    spit(p, raw, n - 1);
    get_fails(st, "sbx-1", OSB_E_INTEGRITY, "one byte short: OSB_E_INTEGRITY");
    spit(p, "OSBV1", 5);
    get_fails(st, "sbx-1", OSB_E_INTEGRITY, "only the magic: OSB_E_INTEGRITY");
    spit(p, "", 0);
    get_fails(st, "sbx-1", OSB_E_INTEGRITY, "an empty file: OSB_E_INTEGRITY");
    spit(p, raw, n);
    struct osb_vault *w = NULL;
    struct osb_err err = {0};
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) == 0, "the original bytes read again");
    osb_vault_unref(w);
    free(raw);
}

/* A file sealed under another server's key does not open under ours. */
static void test_other_key(struct osb_vault_store *st, struct osb_vault *v)
{
    char other[600], p[700], q[600];
    snprintf(other, sizeof other, "%s/other", dir);
    struct osb_vault_store *st2 = NULL;
    struct osb_err err = {0};
    OK(osb_vault_store_open(other, &st2, &err) == 0 &&
           osb_vault_store_put(st2, "sbx-9", v, &err) == 0,
       "another store seals a vault");
    osb_vault_store_close(st2);
    snprintf(p, sizeof p, "%s/sbx-9.vault", other);
    snprintf(q, sizeof q, "%s/sbx-9.vault", dir);
    size_t n;
    char *raw = slurp(p, &n);
    spit(q, raw, n);
    free(raw);
    get_fails(st, "sbx-9", OSB_E_INTEGRITY, "  it does not open under this key: OSB_E_INTEGRITY");
}

static void test_ids(struct osb_vault_store *st, struct osb_vault *v)
{
    static const char *const bad[] = {
        "",
        "../x",
        "..",
        ".",
        "a/b",
        "/etc/passwd",
        "a b",
        "a\nb",
        "vault.key",
        "x.vault",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    struct osb_err err = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[128];
        struct osb_vault *w = NULL;
        snprintf(what, sizeof what, "id \"%s\" is refused by put, get and del", bad[i]);
        int a = osb_vault_store_put(st, bad[i], v, &err);
        int ca = err.code;
        int b = osb_vault_store_get(st, bad[i], &w, &err);
        int cb = err.code;
        int c = osb_vault_store_del(st, bad[i], &err);
        OK(a < 0 && b < 0 && c < 0 && ca == OSB_E_INVALID && cb == OSB_E_INVALID &&
               err.code == OSB_E_INVALID && !w,
           what);
    }
    OK(osb_vault_store_put(st, "0b6f1c1e-4d7a-4f5e-9a3b-2c1d0e9f8a7b", v, &err) == 0,
       "a UUID id is fine");
    OK(osb_vault_store_del(st, "0b6f1c1e-4d7a-4f5e-9a3b-2c1d0e9f8a7b", &err) == 0, "  del");
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    test_key();
    test_dir();
    struct osb_err err = {0};
    struct osb_vault_store *st = NULL;
    struct osb_vault *v = make_vault();
    if (osb_vault_store_open(dir, &st, &err) < 0 || !v) {
        printf("# open: %s\n", err.msg);
        return 1;
    }
    test_round_trip(st, v);
    test_tamper(st);
    test_other_key(st, v);
    test_ids(st, v);
    char p[512];
    snprintf(p, sizeof p, "%s/sbx-1.vault", dir);
    OK(osb_vault_store_del(st, "sbx-1", &err) == 0 && access(p, F_OK) != 0, "del removes it");
    OK(osb_vault_store_del(st, "sbx-1", &err) == 0, "del of none is fine");
    get_fails(st, "sbx-1", OSB_E_NOTFOUND, "get after del: OSB_E_NOTFOUND");
    osb_vault_store_close(st);
    osb_vault_unref(v);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}
