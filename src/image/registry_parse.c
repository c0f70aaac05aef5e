#include "image/registry_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "common/cleanup.h"
#include "common/xalloc.h"

static const struct {
    const char *type;
    enum osb_media_kind kind;
} media_types[] = {
    {"application/vnd.oci.image.index.v1+json", OSB_MT_INDEX},
    {"application/vnd.docker.distribution.manifest.list.v2+json", OSB_MT_INDEX},
    {"application/vnd.oci.image.manifest.v1+json", OSB_MT_MANIFEST},
    {"application/vnd.docker.distribution.manifest.v2+json", OSB_MT_MANIFEST},
    {"application/vnd.docker.distribution.manifest.v1+json", OSB_MT_SCHEMA1},
    {"application/vnd.docker.distribution.manifest.v1+prettyjws", OSB_MT_SCHEMA1},
    {"application/vnd.oci.image.config.v1+json", OSB_MT_CONFIG},
    {"application/vnd.docker.container.image.v1+json", OSB_MT_CONFIG},
    {"application/vnd.oci.image.layer.v1.tar", OSB_MT_LAYER},
    {"application/vnd.oci.image.layer.v1.tar+gzip", OSB_MT_LAYER},
    {"application/vnd.oci.image.layer.v1.tar+zstd", OSB_MT_LAYER},
    {"application/vnd.docker.image.rootfs.diff.tar", OSB_MT_LAYER},
    {"application/vnd.docker.image.rootfs.diff.tar.gzip", OSB_MT_LAYER},
    {"application/vnd.docker.image.rootfs.diff.tar.zstd", OSB_MT_LAYER},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar", OSB_MT_FOREIGN},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OSB_MT_FOREIGN},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OSB_MT_FOREIGN},
    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OSB_MT_FOREIGN},
};

enum osb_media_kind osb_media_kind(const char *mt)
{
    if (!mt)
        return OSB_MT_UNKNOWN;
    /* Content-Type may carry parameters ("; charset=utf-8"). */
    size_t n = strcspn(mt, "; \t");
    for (size_t i = 0; i < OSB_ARRAY_LEN(media_types); i++)
        if (strlen(media_types[i].type) == n && strncasecmp(mt, media_types[i].type, n) == 0)
            return media_types[i].kind;
    return OSB_MT_UNKNOWN;
}

/* One k=v or k="v" pair at *p; advances past a trailing comma. */
static int auth_pair(const char **p, char *key, size_t kn, char *val, size_t vn)
{
    const char *s = *p;
    while (*s == ' ' || *s == ',' || *s == '\t')
        s++;
    if (!*s)
        return 0;
    size_t k = strcspn(s, "= \t,");
    if (s[k] != '=')
        return -1;
    snprintf(key, kn, "%.*s", (int)k, s);
    s += k + 1;
    size_t o = 0;
    if (*s == '"') {
        for (s++; *s && *s != '"'; s++) {
            if (*s == '\\' && s[1])
                s++;
            if (o + 1 < vn)
                val[o++] = *s;
        }
        if (*s != '"')
            return -1;
        s++;
    } else {
        for (; *s && *s != ',' && *s != ' '; s++)
            if (o + 1 < vn)
                val[o++] = *s;
    }
    val[o] = '\0';
    *p = s;
    return 1;
}

int osb_auth_parse(const char *h, struct osb_auth_challenge *out, struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    while (*h == ' ' || *h == '\t')
        h++;
    size_t n = strcspn(h, " \t");
    if (n == 0 || n >= sizeof out->scheme)
        return osb_err_set(err, OSB_E_INVALID, "WWW-Authenticate without a scheme");
    snprintf(out->scheme, sizeof out->scheme, "%.*s", (int)n, h);
    const char *p = h + n;
    char key[64], val[512];
    int r;
    while ((r = auth_pair(&p, key, sizeof key, val, sizeof val)) > 0) {
        if (strcasecmp(key, "realm") == 0)
            snprintf(out->realm, sizeof out->realm, "%s", val);
        else if (strcasecmp(key, "service") == 0)
            snprintf(out->service, sizeof out->service, "%s", val);
        else if (strcasecmp(key, "scope") == 0)
            snprintf(out->scope, sizeof out->scope, "%s", val);
    }
    if (r < 0)
        return osb_err_set(err, OSB_E_INVALID, "malformed WWW-Authenticate parameters");
    return 0;
}

const char *osb_default_arch(void)
{
    struct utsname u;
    if (uname(&u) < 0)
        return "amd64";
    static const char *const map[][2] = {
        {"x86_64", "amd64"},    {"aarch64", "arm64"}, {"armv7l", "arm"},     {"i686", "386"},
        {"ppc64le", "ppc64le"}, {"s390x", "s390x"},   {"riscv64", "riscv64"}};
    for (size_t i = 0; i < OSB_ARRAY_LEN(map); i++)
        if (strcmp(u.machine, map[i][0]) == 0)
            return map[i][1];
    return "amd64";
}

static const char *str_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int osb_index_select(json_t *index, const char *os, const char *arch, const char *image,
                     char digest[OSB_DIGEST_MAX], struct osb_err *err)
{
    json_t *list = json_object_get(index, "manifests");
    if (!json_is_array(list))
        return osb_err_set(err, OSB_E_INVALID, "image `%s`: index without \"manifests\"", image);
    char offered[256] = "";
    size_t off = 0, i;
    json_t *m;
    json_array_foreach(list, i, m)
    {
        json_t *plat = json_object_get(m, "platform");
        const char *mos = str_of(plat, "os"), *march = str_of(plat, "architecture");
        const char *d = str_of(m, "digest");
        if (!mos || !march || !d || strcmp(mos, "unknown") == 0)
            continue; /* unknown/unknown: attestations, not images */
        if (strcmp(mos, os) == 0 && strcmp(march, arch) == 0) {
            if (!osb_digest_ok(d))
                return osb_err_set(err, OSB_E_UNSUPPORTED,
                                   "image `%s`: unsupported digest `%.80s` in index", image, d);
            snprintf(digest, OSB_DIGEST_MAX, "%s", d);
            return 0;
        }
        if (off + 1 < sizeof offered)
            off += (size_t)snprintf(offered + off, sizeof offered - off, "%s%s/%s", off ? ", " : "",
                                    mos, march);
    }
    return osb_err_set(err, OSB_E_UNSUPPORTED,
                       "image `%s` has no manifest for platform %s/%s (offered: %s)", image, os,
                       arch, off ? offered : "none");
}

static int blob_parse(json_t *o, const char *image, const char *what, struct osb_blob *b,
                      struct osb_err *err)
{
    const char *mt = str_of(o, "mediaType"), *d = str_of(o, "digest");
    json_t *sz = json_object_get(o, "size");
    if (!mt || !d || !json_is_integer(sz) || json_integer_value(sz) < 0)
        return osb_err_set(err, OSB_E_INVALID,
                           "image `%s`: %s lacks mediaType, digest or size in the manifest", image,
                           what);
    if (!osb_digest_ok(d))
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "image `%s`: %s has an unsupported digest `%.80s` (sha256 only)", image,
                           what, d);
    if (strlen(mt) >= sizeof b->media_type)
        return osb_err_set(err, OSB_E_UNSUPPORTED, "image `%s`: %s media type too long", image,
                           what);
    snprintf(b->digest, sizeof b->digest, "%s", d);
    snprintf(b->media_type, sizeof b->media_type, "%s", mt);
    b->size = json_integer_value(sz);
    return 0;
}

int osb_manifest_parse(json_t *man, const char *image, struct osb_manifest *out,
                       struct osb_err *err)
{
    json_t *cfg = json_object_get(man, "config"), *layers = json_object_get(man, "layers");
    if (!json_is_object(cfg) || !json_is_array(layers))
        return osb_err_set(err, OSB_E_INVALID,
                           "image `%s`: manifest without \"config\" or \"layers\"", image);
    if (blob_parse(cfg, image, "config", &out->config_blob, err) < 0)
        return -1;
    if (osb_media_kind(out->config_blob.media_type) != OSB_MT_CONFIG)
        return osb_err_set(err, OSB_E_UNSUPPORTED,
                           "image `%s`: unsupported config media type `%s` (not a container "
                           "image?)",
                           image, out->config_blob.media_type);
    size_t n = json_array_size(layers), i;
    struct osb_blob *bl = osb_xcalloc(n ? n : 1, sizeof *bl);
    json_t *l;
    json_array_foreach(layers, i, l)
    {
        char what[64];
        snprintf(what, sizeof what, "layer %zu", i + 1);
        int r = json_is_object(l) ? blob_parse(l, image, what, &bl[i], err)
                                  : osb_err_set(err, OSB_E_INVALID,
                                                "image `%s`: %s is not an "
                                                "object",
                                                image, what);
        if (r == 0 && osb_media_kind(bl[i].media_type) != OSB_MT_LAYER)
            r = osb_err_set(err, OSB_E_UNSUPPORTED,
                            "image `%s`: %s has unsupported media type `%s`", image, what,
                            bl[i].media_type);
        if (r < 0) {
            free(bl);
            return -1;
        }
    }
    out->layers = bl;
    out->n_layers = n;
    return 0;
}
