#include "image/export.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "image/layer.h"
#include "image/registry_parse.h"


static void hex_of(EVP_MD_CTX *md, char out[OSB_DIGEST_MAX])
{
    unsigned char h[32];
    unsigned n = 0;
    EVP_DigestFinal_ex(md, h, &n);
    int o = snprintf(out, OSB_DIGEST_MAX, "sha256:");
    for (unsigned i = 0; i < n; i++)
        o += snprintf(out + o, (size_t)(OSB_DIGEST_MAX - o), "%02x", h[i]);
}

/* Move tmp file path to <blobs>/<hex> after hashing it. */
static int blob_install(const char *blobs, const char *path, struct osb_export_blob *b,
                        struct osb_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return osb_err_sys(err, "open `%s`", path);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    char buf[1 << 16];
    ssize_t n;
    b->size = 0;
    while ((n = OSB_RETRY(read(fd, buf, sizeof buf))) > 0) {
        EVP_DigestUpdate(md, buf, (size_t)n);
        b->size += n;
    }
    hex_of(md, b->digest);
    EVP_MD_CTX_free(md);
    if (n < 0)
        return osb_err_sys(err, "read `%s`", path);
    _cleanup_free_ char *dst = osb_xasprintf("%s/%s", blobs, b->digest + 7);
    return rename(path, dst) < 0 ? osb_err_sys(err, "rename `%s`", path) : 0;
}

static int json_blob(const char *blobs, json_t *j, struct osb_export_blob *b, struct osb_err *err)
{
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.json", blobs);
    if (json_dump_file(j, tmp, JSON_COMPACT) < 0)
        return osb_err_sys(err, "write `%s`", tmp);
    return blob_install(blobs, tmp, b, err);
}

static json_t *config_json(const struct osb_image *im, const struct osb_export_blob *layers,
                           size_t n)
{
    json_t *diff = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(diff, json_string(layers[i].digest));
    json_t *c = json_object();
    if (im->env)
        json_object_set_new(c, "Env", osb_json_strv(im->env));
    if (im->entrypoint)
        json_object_set_new(c, "Entrypoint", osb_json_strv(im->entrypoint));
    if (im->cmd)
        json_object_set_new(c, "Cmd", osb_json_strv(im->cmd));
    if (im->workdir)
        json_object_set_new(c, "WorkingDir", json_string(im->workdir));
    if (im->user)
        json_object_set_new(c, "User", json_string(im->user));
    char when[40];
    time_t t = (time_t)(im->created_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:s, s:s, s:o, s:{s:s, s:o}}", "created", when, "architecture",
                     osb_default_arch(), "os", "linux", "config", c, "rootfs", "type", "layers",
                     "diff_ids", diff);
}

static json_t *desc(const char *mt, const struct osb_export_blob *b)
{
    return json_pack("{s:s, s:s, s:I}", "mediaType", mt, "digest", b->digest, "size",
                     (json_int_t)b->size);
}

/* "name:tag" docker load accepts: a tag added when there is none; none
 * at all for digest references. */
static json_t *repo_tags(const char *name)
{
    json_t *a = json_array();
    if (strchr(name, '@'))
        return a;
    const char *slash = strrchr(name, '/');
    bool tagged = strchr(slash ? slash : name, ':') != NULL;
    char *t = osb_xasprintf("%s%s", name, tagged ? "" : ":latest");
    json_array_append_new(a, json_string(t));
    free(t);
    return a;
}

/* The config and the manifest blobs, once the layer blobs are in. */
static int write_manifest(struct osb_export *e, const struct osb_image *im, struct osb_err *err)
{
    _cleanup_free_ char *blobs = osb_xasprintf("%s/blobs/sha256", e->root);
    json_t *cj = config_json(im, e->layers, e->n_layers);
    int r = json_blob(blobs, cj, &e->config, err);
    json_decref(cj);
    if (r < 0)
        return -1;
    json_t *layers = json_array();
    for (size_t i = 0; i < e->n_layers; i++)
        json_array_append_new(layers, desc(OSB_EXPORT_LAYER_MT, &e->layers[i]));
    json_t *mj = json_pack(
        "{s:i, s:s, s:o, s:o}", "schemaVersion", 2, "mediaType", OSB_EXPORT_MANIFEST_MT, "config",
        desc("application/vnd.oci.image.config.v1+json", &e->config), "layers", layers);
    r = json_blob(blobs, mj, &e->manifest, err);
    json_decref(mj);
    return r;
}

/* index.json, oci-layout, and docker load's manifest.json. */
static int write_layout(const struct osb_export *e, const struct osb_image *im, struct osb_err *err)
{
    json_t *dl = json_array();
    for (size_t i = 0; i < e->n_layers; i++) {
        char *p = osb_xasprintf("blobs/sha256/%s", e->layers[i].digest + 7);
        json_array_append_new(dl, json_string(p));
        free(p);
    }
    json_t *md = desc(OSB_EXPORT_MANIFEST_MT, &e->manifest);
    json_object_set_new(md, "annotations",
                        json_pack("{s:s}", "org.opencontainers.image.ref.name", im->name));
    json_t *idx = json_pack("{s:i, s:s, s:[o]}", "schemaVersion", 2, "mediaType",
                            "application/vnd.oci.image.index.v1+json", "manifests", md);
    char *cp = osb_xasprintf("blobs/sha256/%s", e->config.digest + 7);
    json_t *dm =
        json_pack("[{s:s, s:o, s:o}]", "Config", cp, "RepoTags", repo_tags(im->name), "Layers", dl);
    free(cp);
    json_t *layout = json_pack("{s:s}", "imageLayoutVersion", "1.0.0");
    _cleanup_free_ char *p1 = osb_xasprintf("%s/index.json", e->root);
    _cleanup_free_ char *p2 = osb_xasprintf("%s/manifest.json", e->root);
    _cleanup_free_ char *p3 = osb_xasprintf("%s/oci-layout", e->root);
    int r = 0;
    if (json_dump_file(idx, p1, JSON_COMPACT) < 0 || json_dump_file(dm, p2, JSON_COMPACT) < 0 ||
        json_dump_file(layout, p3, JSON_COMPACT) < 0)
        r = osb_err_sys(err, "write the layout in `%s`", e->root);
    json_decref(idx);
    json_decref(dm);
    json_decref(layout);
    return r;
}

/* The layout dir as a tar: files only, in a fixed order. */
static int add_file(struct archive *a, const char *root, const char *rel, struct osb_err *err)
{
    _cleanup_free_ char *p = osb_xasprintf("%s/%s", root, rel);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return osb_err_sys(err, "open `%s`", p);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, S_ISDIR(st.st_mode) ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(e, S_ISDIR(st.st_mode) ? 0755 : 0644);
    archive_entry_set_size(e, S_ISDIR(st.st_mode) ? 0 : st.st_size);
    archive_entry_set_mtime(e, st.st_mtime, 0);
    int r = archive_write_header(a, e) < ARCHIVE_WARN ? -1 : 0;
    archive_entry_free(e);
    char buf[1 << 16];
    ssize_t n = 0;
    while (r == 0 && !S_ISDIR(st.st_mode) && (n = OSB_RETRY(read(fd, buf, sizeof buf))) > 0)
        if (archive_write_data(a, buf, (size_t)n) < 0)
            r = -1;
    if (r < 0 || n < 0)
        return osb_err_set(err, OSB_E_INTERNAL, "write `%s` to the archive: %s", rel,
                           archive_error_string(a) ? archive_error_string(a) : strerror(errno));
    return 0;
}

static int pack(const char *root, const char *out, struct osb_err *err)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    int r = archive_write_open_filename(a, out) != ARCHIVE_OK
                ? osb_err_set(err, OSB_E_SYS, "create `%s`: %s", out, archive_error_string(a))
                : 0;
    static const char *const top[] = {"oci-layout", "index.json", "manifest.json", "blobs",
                                      "blobs/sha256"};
    for (size_t i = 0; i < OSB_ARRAY_LEN(top) && r == 0; i++)
        r = add_file(a, root, top[i], err);
    _cleanup_free_ char *blobs = osb_xasprintf("%s/blobs/sha256", root);
    struct dirent **names = NULL;
    int n = r == 0 ? scandir(blobs, &names, NULL, alphasort) : 0;
    for (int i = 0; i < n; i++) {
        if (r == 0 && names[i]->d_name[0] != '.') {
            char rel[128];
            snprintf(rel, sizeof rel, "blobs/sha256/%s", names[i]->d_name);
            r = add_file(a, root, rel, err);
        }
        free(names[i]);
    }
    free(names);
    if (r == 0 && archive_write_close(a) != ARCHIVE_OK)
        r = osb_err_set(err, OSB_E_SYS, "finish `%s`: %s", out, archive_error_string(a));
    archive_write_free(a);
    return r;
}

static int layer_blob(const char *blobs, const char *dir, struct osb_export_blob *b,
                      struct osb_err *err)
{
    _cleanup_free_ char *tmp = osb_xasprintf("%s/.layer", blobs);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return osb_err_sys(err, "create `%s`", tmp);
    int r = osb_layer_to_tar(dir, fd, err);
    if (close(fd) < 0 && r == 0)
        r = osb_err_sys(err, "write `%s`", tmp);
    return r < 0 ? -1 : blob_install(blobs, tmp, b, err);
}

int osb_export_build(const struct osb_image *im, char *const *layer_dirs, size_t n,
                     const char *root_template, struct osb_export *out, struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    out->root = osb_xstrdup(root_template);
    if (!mkdtemp(out->root)) {
        int r = osb_err_sys(err, "create `%s`", root_template);
        free(out->root);
        out->root = NULL;
        return r;
    }
    out->layers = osb_xcalloc(n ? n : 1, sizeof *out->layers);
    out->n_layers = n;
    _cleanup_free_ char *blobs = osb_xasprintf("%s/blobs/sha256", out->root);
    int r = osb_mkdir_p(blobs, 0755, err);
    for (size_t i = 0; i < n && r == 0; i++)
        r = layer_blob(blobs, layer_dirs[i], &out->layers[i], err);
    if (r == 0)
        r = write_manifest(out, im, err);
    if (r < 0)
        osb_export_free(out);
    return r;
}

char *osb_export_blob_path(const struct osb_export *e, const char *digest)
{
    return osb_xasprintf("%s/blobs/sha256/%s", e->root, digest + 7);
}

void osb_export_free(struct osb_export *e)
{
    if (e->root)
        osb_layer_discard(e->root);
    free(e->root);
    free(e->layers);
    memset(e, 0, sizeof *e);
}

int osb_export_write(const struct osb_image *im, char *const *layer_dirs, size_t n,
                     const char *tar_path, struct osb_err *err)
{
    _cleanup_free_ char *tmpl = osb_xasprintf("%s.tmp-XXXXXX", tar_path);
    struct osb_export e;
    if (osb_export_build(im, layer_dirs, n, tmpl, &e, err) < 0)
        return -1;
    _cleanup_free_ char *tmp_tar = osb_xasprintf("%s/out.tar", e.root);
    int r = write_layout(&e, im, err);
    if (r == 0)
        r = pack(e.root, tmp_tar, err);
    if (r == 0 && rename(tmp_tar, tar_path) < 0)
        r = osb_err_sys(err, "install `%s`", tar_path);
    osb_export_free(&e);
    return r;
}
