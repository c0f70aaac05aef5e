#include "vault/ca.h"

#include <errno.h>
#include <openssl/err.h>
#include <stdbool.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/xalloc.h"

#define LEAF_CACHE 512
#define LEAF_DAYS 30

struct leaf {
    char host[256];
    X509 *cert;
    time_t made;
};

struct osb_vault_ca {
    EVP_PKEY *key;      /* the CA's */
    X509 *cert;         /* the CA's */
    EVP_PKEY *leaf_key; /* shared by every leaf: minting stays a signature, no keygen */
    char *pem;
    pthread_mutex_t mu;
    struct leaf cache[LEAF_CACHE];
    size_t next; /* round-robin eviction */
};

static int ssl_fail(struct osb_err *err, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return osb_err_set(err, OSB_E_INTERNAL, "%s: %s", what, buf[0] ? buf : "OpenSSL failed");
}

static EVP_PKEY *new_key(void)
{
    return EVP_EC_gen("P-256");
}

static int set_serial(X509 *x)
{
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1)
        return -1;
    b[0] &= 0x7f; /* positive */
    BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!e)
        return -1;
    int ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

/* A certificate for subject cn, valid from an hour ago for days. */
static X509 *new_cert(const char *cn, EVP_PKEY *pub, long days)
{
    X509 *x = X509_new();
    X509_NAME *n = X509_NAME_new();
    if (!x || !n || X509_set_version(x, 2) != 1 || set_serial(x) < 0 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), days * 86400) ||
        !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_subject_name(x, n) || !X509_set_pubkey(x, pub)) {
        X509_free(x);
        x = NULL;
    }
    X509_NAME_free(n);
    return x;
}

static int make_ca(struct osb_vault_ca *ca, struct osb_err *err)
{
    char cn[96];
    unsigned char r[4];
    if (RAND_bytes(r, sizeof r) != 1)
        return ssl_fail(err, "vault CA: random");
    snprintf(cn, sizeof cn, "OpenSandbox credential vault CA %02x%02x%02x%02x", r[0], r[1], r[2],
             r[3]);
    if (!(ca->key = new_key()))
        return ssl_fail(err, "vault CA: key");
    X509 *x = new_cert(cn, ca->key, 3650);
    if (!x || !X509_set_issuer_name(x, X509_get_subject_name(x)) ||
        add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
        !X509_sign(x, ca->key, EVP_sha256())) {
        X509_free(x);
        return ssl_fail(err, "vault CA: certificate");
    }
    ca->cert = x;
    return 0;
}

/* Writes data to dir/name with mode, atomically (a temporary file renamed). */
static int write_file(const char *dir, const char *name, const char *data, size_t len, mode_t mode,
                      struct osb_err *err)
{
    char tmp[4096], path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return osb_err_sys(err, "create %s", tmp);
    ssize_t w = write(fd, data, len);
    if (w != (ssize_t)len || fsync(fd) < 0) {
        close(fd);
        unlink(tmp);
        return osb_err_sys(err, "write %s", tmp);
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        unlink(tmp);
        return osb_err_sys(err, "rename %s", path);
    }
    return 0;
}

static char *to_pem(EVP_PKEY *key, X509 *cert)
{
    BIO *b = BIO_new(BIO_s_mem());
    if (!b || (key && !PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)) ||
        (cert && !PEM_write_bio_X509(b, cert))) {
        BIO_free(b);
        return NULL;
    }
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *out = osb_xmalloc((size_t)n + 1);
    memcpy(out, p, (size_t)n);
    out[n] = 0;
    BIO_free(b);
    return out;
}

static int save(struct osb_vault_ca *ca, const char *dir, struct osb_err *err)
{
    char *k = to_pem(ca->key, NULL);
    if (!k)
        return ssl_fail(err, "vault CA: encode the key");
    int r = write_file(dir, "ca.key", k, strlen(k), 0600, err);
    OPENSSL_cleanse(k, strlen(k));
    free(k);
    if (r == 0)
        r = write_file(dir, "ca.crt", ca->pem, strlen(ca->pem), 0644, err);
    return r;
}

static int load(struct osb_vault_ca *ca, const char *key_path, const char *crt_path,
                struct osb_err *err)
{
    struct stat st;
    if (stat(key_path, &st) < 0)
        return osb_err_sys(err, "%s", key_path);
    if ((st.st_mode & 077) || st.st_uid != geteuid())
        return osb_err_set(err, OSB_E_INVALID,
                           "%s: the vault CA key must be owned by the server and mode 0600",
                           key_path);
    FILE *f = fopen(key_path, "re");
    if (f) {
        ca->key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
        fclose(f);
    }
    if ((f = fopen(crt_path, "re"))) {
        ca->cert = PEM_read_X509(f, NULL, NULL, NULL);
        fclose(f);
    }
    if (!ca->key || !ca->cert)
        return ssl_fail(err, "vault CA: read ca.key/ca.crt");
    if (X509_check_private_key(ca->cert, ca->key) != 1)
        return ssl_fail(err, "vault CA: ca.crt does not belong to ca.key");
    return 0;
}

int osb_vault_ca_open(const char *dir, struct osb_vault_ca **out, struct osb_err *err)
{
    *out = NULL;
    if (osb_mkdir_p(dir, 0700, err) < 0)
        return -1;
    char kp[4096], cp[4096];
    snprintf(kp, sizeof kp, "%s/ca.key", dir);
    snprintf(cp, sizeof cp, "%s/ca.crt", dir);
    bool hk = access(kp, F_OK) == 0, hc = access(cp, F_OK) == 0;
    if (hk != hc)
        return osb_err_set(err, OSB_E_INVALID,
                           "%s: the vault CA has %s but not %s (remove both to make a new CA)", dir,
                           hk ? "ca.key" : "ca.crt", hk ? "ca.crt" : "ca.key");
    struct osb_vault_ca *ca = osb_xcalloc(1, sizeof *ca);
    pthread_mutex_init(&ca->mu, NULL);
    int r = hk ? load(ca, kp, cp, err) : make_ca(ca, err);
    if (r == 0 && !(ca->pem = to_pem(NULL, ca->cert)))
        r = ssl_fail(err, "vault CA: encode the certificate");
    if (r == 0 && !hk)
        r = save(ca, dir, err);
    if (r == 0 && !(ca->leaf_key = new_key()))
        r = ssl_fail(err, "vault CA: leaf key");
    if (r < 0) {
        osb_vault_ca_close(ca);
        return -1;
    }
    *out = ca;
    return 0;
}

void osb_vault_ca_close(struct osb_vault_ca *ca)
{
    if (!ca)
        return;
    for (size_t i = 0; i < LEAF_CACHE; i++)
        X509_free(ca->cache[i].cert);
    EVP_PKEY_free(ca->key);
    EVP_PKEY_free(ca->leaf_key);
    X509_free(ca->cert);
    free(ca->pem);
    pthread_mutex_destroy(&ca->mu);
    free(ca);
}

const char *osb_vault_ca_pem(const struct osb_vault_ca *ca)
{
    return ca->pem;
}

EVP_PKEY *osb_vault_ca_leaf_key(const struct osb_vault_ca *ca)
{
    return ca->leaf_key;
}

static X509 *mint(struct osb_vault_ca *ca, const char *host)
{
    char san[300];
    snprintf(san, sizeof san, "DNS:%s", host);
    X509 *x = new_cert(host, ca->leaf_key, LEAF_DAYS);
    if (!x || !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) ||
        add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(x, ca->cert, NID_subject_alt_name, san) < 0 ||
        add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") < 0 ||
        !X509_sign(x, ca->key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

int osb_vault_ca_leaf(struct osb_vault_ca *ca, const char *host, X509 **out, struct osb_err *err)
{
    *out = NULL;
    if (!host[0] || strlen(host) > 253 || strpbrk(host, ",:/\\ \t\r\n"))
        return osb_err_set(err, OSB_E_INVALID, "not a host name for a certificate");
    time_t now = time(NULL);
    pthread_mutex_lock(&ca->mu);
    for (size_t i = 0; i < LEAF_CACHE && !*out; i++) {
        struct leaf *l = &ca->cache[i];
        /* Reminted well before it ends: a connection may last. */
        if (l->cert && strcmp(l->host, host) == 0 && now - l->made < (LEAF_DAYS - 7) * 86400L) {
            X509_up_ref(l->cert);
            *out = l->cert;
        }
    }
    if (!*out && (*out = mint(ca, host))) {
        struct leaf *l = &ca->cache[ca->next];
        ca->next = (ca->next + 1) % LEAF_CACHE;
        X509_free(l->cert);
        snprintf(l->host, sizeof l->host, "%s", host);
        l->cert = *out;
        l->made = now;
        X509_up_ref(*out);
    }
    pthread_mutex_unlock(&ca->mu);
    return *out ? 0 : ssl_fail(err, "vault CA: mint a leaf certificate");
}
