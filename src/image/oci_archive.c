#include "image/oci_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/xalloc.h"
#include "image/ref.h"
#include "image/registry_parse.h"

static bool hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

/* The name an entry is kept under in dir ("index.json", "<hex>"), "" for a
 * directory or file of the layout that is not kept, NULL for anything
 * that is no part of an OCI layout. */
static const char *layout_name(const char *path, bool is_dir, char buf[128])
{
    if (!path)
        return NULL;
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    size_t n = strlen(path);
    if (n >= 128)
        return NULL;
    memcpy(buf, path, n + 1);
    while (n && buf[n - 1] == '/')
        buf[--n] = '\0';
    if (is_dir)
        return strcmp(buf, "") == 0 || strcmp(buf, ".") == 0 || strcmp(buf, "blobs") == 0 ||
                       strcmp(buf, "blobs/sha256") == 0
                   ? ""
                   : NULL;
    if (strcmp(buf, "oci-layout") == 0 || strcmp(buf, "index.json") == 0)
        return buf;
    if (strcmp(buf, "manifest.json") == 0 || strcmp(buf, "repositories") == 0)
        return "";
    if (strncmp(buf, "blobs/sha256/", 13) == 0 && hex64(buf + 13))
        return buf + 13;
    return NULL;
}

/* Copy the entry's data to dir/name; a blob is checked against its name. */
static int keep(struct archive *a, int dfd, const char *name, const char *image,
                struct osb_err *err)
{
    _cleanup_close_ int fd =
        openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return osb_err_sys(err, "image `%s`: write `%s`", image, name);
    bool blob = hex64(name);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    char buf[1 << 16];
    la_ssize_t n;
    int r = 0;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)n);
        for (la_ssize_t off = 0; off < n && r == 0;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                r = osb_err_sys(err, "image `%s`: write `%s`", image, name);
            else
                off += w;
        }
        if (r < 0)
            break;
    }
    unsigned char h[32];
    unsigned hn = 0;
    EVP_DigestFinal_ex(md, h, &hn);
    EVP_MD_CTX_free(md);
    if (r == 0 && n < 0)
        r = osb_err_set(err, OSB_E_INVALID, "image `%s`: read `%s`: %s", image, name,
                        archive_error_string(a));
    if (r == 0 && blob) {
        char hex[65];
        for (unsigned i = 0; i < hn && i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", h[i]);
        if (strcmp(hex, name) != 0)
            r = osb_err_set(err, OSB_E_INTEGRITY,
                            "image `%s`: blob sha256:%.12s does not match its digest", image, name);
    }
    return r;
}

/* 1 with the layout's files in dir, 0 when the archive is no layout. */
static int unpack(const char *tar_path, int dfd, const char *image, struct osb_err *err)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
    archive_read_support_filter_all(a);
    int r;
    if (archive_read_open_filename(a, tar_path, 1 << 20) != ARCHIVE_OK) {
        r = osb_err_set(err, OSB_E_INVALID, "image `%s`: open `%s`: %s", image, tar_path,
                        archive_error_string(a));
        archive_read_free(a);
        return r;
    }
    bool layout = false;
    struct archive_entry *e;
    r = 1;
    int ar;
    while (r == 1 && (ar = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
        mode_t type = archive_entry_filetype(e);
        char buf[128];
        const char *name = layout_name(archive_entry_pathname(e), type == AE_IFDIR, buf);
        if (!name || (type != AE_IFDIR && type != AE_IFREG)) {
            r = layout
                    ? osb_err_set(err, OSB_E_INVALID,
                                  "image `%s`: `%.200s` is no part of an OCI image layout", image,
                                  archive_entry_pathname(e) ? archive_entry_pathname(e) : "?")
                    : 0;
            break;
        }
        if (strcmp(name, "oci-layout") == 0 || strcmp(name, "index.json") == 0)
            layout = true;
        if (*name && keep(a, dfd, name, image, err) < 0)
            r = -1;
    }
    if (r == 1 && ar != ARCHIVE_EOF)
        r = osb_err_set(err, OSB_E_INVALID, "image `%s`: read `%s`: %s", image, tar_path,
                        archive_error_string(a));
    if (r == 1 && !layout)
        r = 0;
    archive_read_free(a);
    return r;
}

static json_t *load(int dfd, const char *name, const char *image, struct osb_err *err)
{
    _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        osb_err_set(err, OSB_E_INVALID, "image `%s`: the archive has no `%s`", image, name);
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadfd(fd, 0, &je);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        osb_err_set(err, OSB_E_INVALID, "image `%s`: `%.80s` is not a JSON object", image, name);
    }
    return j;
}

/* The blob's file exists and has the size its descriptor says. */
static int blob_check(int dfd, const struct osb_blob *b, const char *image, struct osb_err *err)
{
    struct stat st;
    if (fstatat(dfd, b->digest + 7, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return osb_err_set(err, OSB_E_INVALID, "image `%s`: the archive lacks blob %.19s", image,
                           b->digest);
    if (st.st_size != b->size)
        return osb_err_set(err, OSB_E_INTEGRITY,
                           "image `%s`: blob %.19s has %lld bytes, its descriptor says %lld", image,
                           b->digest, (long long)st.st_size, (long long)b->size);
    return 0;
}

static int manifest_of(int dfd, const char *image, struct osb_manifest *out, struct osb_err *err)
{
    json_t *index = load(dfd, "index.json", image, err);
    if (!index)
        return -1;
    json_t *ms = json_object_get(index, "manifests");
    char digest[OSB_DIGEST_MAX] = "";
    int r = 0;
    if (json_array_size(ms) == 1) {
        const char *d = json_string_value(json_object_get(json_array_get(ms, 0), "digest"));
        if (!d || !osb_digest_ok(d))
            r = osb_err_set(err, OSB_E_INVALID,
                            "image `%s`: index.json: a manifest without a "
                            "sha256 digest",
                            image);
        else
            snprintf(digest, sizeof digest, "%s", d);
    } else {
        r = osb_index_select(index, "linux", osb_default_arch(), image, digest, err);
    }
    json_decref(index);
    if (r < 0)
        return -1;
    json_t *man = load(dfd, digest + 7, image, err);
    if (!man)
        return -1;
    memset(out, 0, sizeof *out);
    snprintf(out->digest, sizeof out->digest, "%s", digest);
    r = osb_manifest_parse(man, image, out, err);
    json_decref(man);
    if (r < 0)
        return -1;
    r = blob_check(dfd, &out->config_blob, image, err);
    for (size_t i = 0; r == 0 && i < out->n_layers; i++)
        r = blob_check(dfd, &out->layers[i], image, err);
    if (r == 0 && !(out->config = load(dfd, out->config_blob.digest + 7, image, err)))
        r = -1;
    if (r < 0)
        osb_manifest_free(out);
    return r;
}

int osb_oci_archive_read(const char *tar_path, const char *dir, const char *image,
                         struct osb_manifest *out, struct osb_err *err)
{
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return osb_err_sys(err, "open `%s`", dir);
    int r = unpack(tar_path, dfd, image, err);
    if (r <= 0)
        return r;
    return manifest_of(dfd, image, out, err) < 0 ? -1 : 1;
}
