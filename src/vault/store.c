#include "vault/store.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "vault/vault.h"

#define MAGIC "OSBV1"
#define MAGIC_LEN 5
#define NONCE_LEN 12
#define TAG_LEN 16
#define KEY_LEN 32
#define MAX_FILE (8u << 20)

struct osb_vault_store {
    char *dir;
    unsigned char key[KEY_LEN];
};

static int read_all(int fd, unsigned char *buf, size_t cap, size_t *n)
{
    *n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + *n, cap - *n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        *n += (size_t)r;
        if (*n == cap)
            return 0;
    }
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int load_key(struct osb_vault_store *st, struct osb_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vault.key", st->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) { /* first use */
        if (RAND_bytes(st->key, KEY_LEN) != 1)
            return osb_err_set(err, OSB_E_INTERNAL, "vault key: no randomness");
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || write_all(fd, st->key, KEY_LEN) < 0 || fsync(fd) < 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            unlink(path);
            errno = e;
            return osb_err_sys(err, "create %s", path);
        }
        close(fd);
        return 0;
    }
    struct stat sb;
    size_t n = 0;
    if (fd < 0 || fstat(fd, &sb) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return osb_err_sys(err, "open %s", path);
    }
    int r = (sb.st_mode & 077) || sb.st_uid != geteuid() || sb.st_size != KEY_LEN
                ? osb_err_set(err, OSB_E_INVALID,
                              "%s must be %d bytes, owned by the server, mode 0600", path, KEY_LEN)
            : read_all(fd, st->key, KEY_LEN, &n) < 0 || n != KEY_LEN
                ? osb_err_sys(err, "read %s", path)
                : 0;
    close(fd);
    return r;
}

int osb_vault_store_open(const char *dir, struct osb_vault_store **out, struct osb_err *err)
{
    *out = NULL;
    struct osb_vault_store *st = osb_xcalloc(1, sizeof *st);
    st->dir = osb_xstrdup(dir);
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST && osb_err_sys(err, "mkdir %s", dir) < 0) ||
        load_key(st, err) < 0) {
        osb_vault_store_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

void osb_vault_store_close(struct osb_vault_store *st)
{
    if (!st)
        return;
    OPENSSL_cleanse(st->key, sizeof st->key);
    free(st->dir);
    free(st);
}

static int file_of(const struct osb_vault_store *st, const char *id, char *path, size_t n,
                   struct osb_err *err)
{
    size_t l = strlen(id);
    if (l == 0 || l > 64 ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789-") != l)
        return osb_err_set(err, OSB_E_INVALID, "not a sandbox id");
    snprintf(path, n, "%s/%s.vault", st->dir, id);
    return 0;
}

/* AES-256-GCM of in[0..n) into out (same length); enc 0 checks tag. */
static int gcm(const struct osb_vault_store *st, int enc, const char *id,
               const unsigned char *nonce, const unsigned char *in, size_t n, unsigned char *out,
               unsigned char *tag)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int l = 0,
        ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
             EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1 &&
             EVP_CipherInit_ex(c, NULL, NULL, st->key, nonce, enc) == 1 &&
             EVP_CipherUpdate(c, NULL, &l, (const unsigned char *)id, (int)strlen(id)) == 1 &&
             EVP_CipherUpdate(c, out, &l, in, (int)n) == 1;
    if (ok && !enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1;
    ok = ok && EVP_CipherFinal_ex(c, out + l, &l) == 1;
    if (ok && enc)
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

static int write_file(const char *path, const unsigned char *data, size_t n, const char *dir,
                      struct osb_err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return osb_err_sys(err, "create %s", tmp);
    if (write_all(fd, data, n) < 0 || fsync(fd) < 0 || close(fd) < 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return osb_err_sys(err, "write %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return osb_err_sys(err, "rename %s", path);
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int osb_vault_store_put(struct osb_vault_store *st, const char *id, const struct osb_vault *v,
                        struct osb_err *err)
{
    char path[4096];
    if (file_of(st, id, path, sizeof path, err) < 0)
        return -1;
    char *text = osb_vault_dump(v);
    size_t n = strlen(text), total = MAGIC_LEN + NONCE_LEN + n + TAG_LEN;
    unsigned char *buf = osb_xmalloc(total);
    memcpy(buf, MAGIC, MAGIC_LEN);
    int r = RAND_bytes(buf + MAGIC_LEN, NONCE_LEN) == 1 &&
                    gcm(st, 1, id, buf + MAGIC_LEN, (unsigned char *)text, n,
                        buf + MAGIC_LEN + NONCE_LEN, buf + total - TAG_LEN) == 0
                ? 0
                : osb_err_set(err, OSB_E_INTERNAL, "encrypt the vault of %s", id);
    osb_vault_dump_free(text);
    if (r == 0)
        r = write_file(path, buf, total, st->dir, err);
    free(buf);
    return r;
}

int osb_vault_store_get(struct osb_vault_store *st, const char *id, struct osb_vault **out,
                        struct osb_err *err)
{
    char path[4096];
    *out = NULL;
    if (file_of(st, id, path, sizeof path, err) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? osb_err_set(err, OSB_E_NOTFOUND, "no vault for %s", id)
                               : osb_err_sys(err, "open %s", path);
    unsigned char *buf = osb_xmalloc(MAX_FILE);
    size_t n = 0;
    int rr = read_all(fd, buf, MAX_FILE, &n);
    close(fd);
    int r = -1;
    unsigned char *plain = NULL;
    if (rr < 0)
        osb_err_sys(err, "read %s", path);
    else if (n < MAGIC_LEN + NONCE_LEN + TAG_LEN || n == MAX_FILE || memcmp(buf, MAGIC, MAGIC_LEN))
        osb_err_set(err, OSB_E_INTEGRITY, "%s is not a stored vault", path);
    else {
        size_t cl = n - MAGIC_LEN - NONCE_LEN - TAG_LEN;
        plain = osb_xmalloc(cl + 1);
        if (gcm(st, 0, id, buf + MAGIC_LEN, buf + MAGIC_LEN + NONCE_LEN, cl, plain,
                buf + n - TAG_LEN) < 0)
            osb_err_set(err, OSB_E_INTEGRITY, "%s does not decrypt (tampered, or another key)",
                        path);
        else if ((r = osb_vault_load((char *)plain, cl, out, err)) < 0)
            err->code = OSB_E_INTEGRITY;
        OPENSSL_cleanse(plain, cl);
    }
    free(plain);
    free(buf);
    return r;
}

int osb_vault_store_del(struct osb_vault_store *st, const char *id, struct osb_err *err)
{
    char path[4096];
    if (file_of(st, id, path, sizeof path, err) < 0)
        return -1;
    if (unlink(path) < 0 && errno != ENOENT)
        return osb_err_sys(err, "remove %s", path);
    return 0;
}
