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

#include "common/keyfile.h"
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

static int load_key(struct osb_vault_store *st, struct osb_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/vault.key", st->dir);
    return osb_keyfile_load(path, st->key, KEY_LEN, err);
}

/* The directory holds the key: ours, a directory (not a link to one), and
 * closed to everybody else. Made 0700 when absent. */
static int check_dir(const char *dir, struct osb_err *err)
{
    struct stat sb;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return osb_err_sys(err, "mkdir %s", dir);
    if (lstat(dir, &sb) < 0)
        return osb_err_sys(err, "stat %s", dir);
    if (!S_ISDIR(sb.st_mode) || (sb.st_mode & 077) || sb.st_uid != geteuid())
        return osb_err_set(err, OSB_E_INVALID,
                           "%s must be a directory owned by the server, mode 0700", dir);
    return 0;
}

int osb_vault_store_open(const char *dir, struct osb_vault_store **out, struct osb_err *err)
{
    *out = NULL;
    if (strlen(dir) == 0 || strlen(dir) > 3000)
        return osb_err_set(err, OSB_E_INVALID, "vault store: a bad directory name");
    struct osb_vault_store *st = osb_xcalloc(1, sizeof *st);
    st->dir = osb_xstrdup(dir);
    if (check_dir(dir, err) < 0 || load_key(st, err) < 0) {
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
    /* fd is closed exactly once: the proxy's threads open descriptors too */
    int r = osb_write_all(fd, data, n) == 0 && fsync(fd) == 0 ? 0 : -1, e = errno;
    if (close(fd) < 0 && r == 0)
        r = -1, e = errno;
    if (r < 0) {
        unlink(tmp);
        errno = e;
        return osb_err_sys(err, "write %s", tmp);
    }
    if (rename(tmp, path) < 0) {
        e = errno;
        unlink(tmp);
        errno = e;
        return osb_err_sys(err, "rename %s", path);
    }
    /* The new file is in place whatever happens now; a failed directory
     * fsync only makes the rename less durable, not the write wrong. */
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

/* The whole file (at most MAX_FILE bytes) into *buf: 0, OSB_E_NOTFOUND
 * when absent, OSB_E_INTEGRITY when too big to be ours. */
static int slurp(const char *path, unsigned char **buf, size_t *n, struct osb_err *err)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    *buf = NULL;
    if (fd < 0)
        return errno == ENOENT ? osb_err_set(err, OSB_E_NOTFOUND, "no vault stored in %s", path)
                               : osb_err_sys(err, "open %s", path);
    int r = 0;
    if (fstat(fd, &sb) < 0)
        r = osb_err_sys(err, "stat %s", path);
    else if (!S_ISREG(sb.st_mode) || sb.st_size >= (off_t)MAX_FILE)
        r = osb_err_set(err, OSB_E_INTEGRITY, "%s is not a stored vault", path);
    else {
        /* one byte more than fstat said: a file that grew is caught below */
        *buf = osb_xmalloc((size_t)sb.st_size + 1);
        if (osb_read_all(fd, *buf, (size_t)sb.st_size + 1, n) < 0)
            r = osb_err_sys(err, "read %s", path);
        else if (*n != (size_t)sb.st_size)
            r = osb_err_set(err, OSB_E_INTEGRITY, "%s changed while read", path);
    }
    close(fd);
    if (r < 0) {
        free(*buf);
        *buf = NULL;
    }
    return r;
}

/* buf[0..n) is MAGIC, nonce, ciphertext, tag: the vault it holds for id,
 * or OSB_E_INTEGRITY (nothing partial). */
static int open_sealed(const struct osb_vault_store *st, const char *id, const char *path,
                       const unsigned char *buf, size_t n, struct osb_vault **out,
                       struct osb_err *err)
{
    if (n < MAGIC_LEN + NONCE_LEN + TAG_LEN || memcmp(buf, MAGIC, MAGIC_LEN) != 0)
        return osb_err_set(err, OSB_E_INTEGRITY, "%s is not a stored vault", path);
    size_t cl = n - MAGIC_LEN - NONCE_LEN - TAG_LEN;
    unsigned char *plain = osb_xmalloc(cl + 1);
    int r = gcm(st, 0, id, buf + MAGIC_LEN, buf + MAGIC_LEN + NONCE_LEN, cl, plain,
                (unsigned char *)buf + n - TAG_LEN);
    if (r < 0)
        osb_err_set(err, OSB_E_INTEGRITY, "%s does not decrypt (tampered, moved, or another key)",
                    path);
    else if ((r = osb_vault_load((char *)plain, cl, out, err)) < 0 && err)
        err->code = OSB_E_INTEGRITY; /* authentic but unreadable: still not a vault */
    OPENSSL_cleanse(plain, cl);
    free(plain);
    return r;
}

int osb_vault_store_get(struct osb_vault_store *st, const char *id, struct osb_vault **out,
                        struct osb_err *err)
{
    char path[4096];
    unsigned char *buf;
    size_t n = 0;
    *out = NULL;
    if (file_of(st, id, path, sizeof path, err) < 0 || slurp(path, &buf, &n, err) < 0)
        return -1;
    int r = open_sealed(st, id, path, buf, n, out, err);
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
