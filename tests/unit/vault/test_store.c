/* The encrypted store: a round trip, the key file's mode, a file that was
 * tampered with or moved to another sandbox's name, hostile ids. */
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

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    struct osb_err err = {0};
    struct osb_vault_store *st = NULL;
    OK(osb_vault_store_open(dir, &st, &err) == 0, "open makes a key");
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/vault.key", dir);
    struct stat sb;
    OK(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600 && sb.st_size == 32,
       "vault.key: 32 bytes, mode 0600");
    json_t *body = json_loads("{\"credentials\":[{\"name\":\"c\",\"source\":{\"value\":"
                              "\"top-secret-value\"}}],\"bindings\":[]}",
                              0, NULL);
    struct osb_vault *v = NULL, *w = NULL;
    OK(osb_vault_create(body, NULL, &v, &err) == 0, "a vault to store");
    json_decref(body);
    OK(osb_vault_store_put(st, "sbx-1", v, &err) == 0, "put");
    snprintf(p, sizeof p, "%s/sbx-1.vault", dir);
    size_t n;
    char *raw = slurp(p, &n);
    OK(n > 0 && !memmem(raw, n, "top-secret", 10) && !memmem(raw, n, "\"c\"", 3),
       "the file holds neither value nor name");
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) == 0 && w, "get");
    if (w) {
        json_t *a = osb_vault_state_json(v), *b = osb_vault_state_json(w);
        OK(json_equal(a, b), "  the same vault");
        IS_STR(osb_vault_secret(w, 0), "top-secret-value", "  with its value");
        json_decref(a);
        json_decref(b);
        osb_vault_unref(w);
        w = NULL;
    }
    IS_INT(osb_vault_store_get(st, "sbx-2", &w, &err), -1, "get of a sandbox without one fails");
    IS_INT(err.code, OSB_E_NOTFOUND, "  OSB_E_NOTFOUND");

    snprintf(q, sizeof q, "%s/sbx-2.vault", dir);
    spit(q, raw, n);
    OK(osb_vault_store_get(st, "sbx-2", &w, &err) < 0 && err.code == OSB_E_INTEGRITY && !w,
       "a file copied to another sandbox's name does not decrypt");
    raw[n / 2] ^= 1;
    spit(p, raw, n);
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) < 0 && err.code == OSB_E_INTEGRITY && !w,
       "a flipped byte: OSB_E_INTEGRITY, no vault");
    spit(p, "OSBV1", 5);
    OK(osb_vault_store_get(st, "sbx-1", &w, &err) < 0 && err.code == OSB_E_INTEGRITY,
       "a truncated file: OSB_E_INTEGRITY");
    free(raw);

    OK(osb_vault_store_put(st, "../x", v, &err) < 0 && err.code == OSB_E_INVALID,
       "an id with a path is refused");
    OK(osb_vault_store_get(st, "", &w, &err) < 0 && err.code == OSB_E_INVALID,
       "an empty id is refused");
    OK(osb_vault_store_del(st, "sbx-1", &err) == 0 && access(p, F_OK) != 0, "del removes it");
    OK(osb_vault_store_del(st, "sbx-1", &err) == 0, "del of none is fine");
    osb_vault_store_close(st);

    snprintf(p, sizeof p, "%s/vault.key", dir);
    chmod(p, 0644);
    st = NULL;
    OK(osb_vault_store_open(dir, &st, &err) < 0 && err.code == OSB_E_INVALID,
       "a key readable by others is refused");
    osb_vault_store_close(st);
    osb_vault_unref(v);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_failed ? 1 : 0;
}
