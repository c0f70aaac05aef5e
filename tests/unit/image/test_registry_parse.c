/* The network-free parts of the registry client. */
#include "image/registry_parse.h"

#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static json_t *J(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    if (!j)
        printf("# bad test JSON: %s\n", s);
    return j;
}

static void test_auth(void)
{
    struct osb_auth_challenge c;
    OK(osb_auth_parse(
           "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
           "scope=\"repository:library/alpine:pull\"",
           &c, NULL) == 0,
       "Docker Hub's challenge parses");
    IS_STR(c.scheme, "Bearer", "scheme");
    IS_STR(c.realm, "https://auth.docker.io/token", "realm");
    IS_STR(c.service, "registry.docker.io", "service");
    IS_STR(c.scope, "repository:library/alpine:pull", "scope");
    OK(osb_auth_parse("Basic realm=\"Registry Realm\"", &c, NULL) == 0, "Basic parses");
    IS_STR(c.scheme, "Basic", "Basic scheme");
    IS_STR(c.realm, "Registry Realm", "realm with a space");
    OK(osb_auth_parse("Bearer realm=https://x/t, service=svc ,error=\"insufficient_scope\"", &c,
                      NULL) == 0,
       "unquoted values and spaces");
    IS_STR(c.realm, "https://x/t", "unquoted realm");
    IS_STR(c.service, "svc", "unquoted service");
    IS_STR(c.scope, "", "no scope");
    OK(osb_auth_parse("Bearer realm=\"a\\\"b\"", &c, NULL) == 0 && strcmp(c.realm, "a\"b") == 0,
       "escaped quote");
    struct osb_err err = {0};
    OK(osb_auth_parse("", &c, &err) < 0 && err.code == OSB_E_INVALID, "empty header refused");
    OK(osb_auth_parse("Bearer realm=\"unterminated", &c, NULL) < 0, "unterminated quote refused");
    OK(osb_auth_parse("Bearer realm", &c, NULL) < 0, "parameter without value refused");
}

static void test_media(void)
{
    IS_INT(osb_media_kind("application/vnd.oci.image.index.v1+json"), OSB_MT_INDEX, "OCI index");
    IS_INT(osb_media_kind("application/vnd.docker.distribution.manifest.list.v2+json"),
           OSB_MT_INDEX, "Docker list");
    IS_INT(osb_media_kind("application/vnd.oci.image.manifest.v1+json"), OSB_MT_MANIFEST, "OCI");
    IS_INT(osb_media_kind("application/vnd.docker.distribution.manifest.v2+json; charset=utf-8"),
           OSB_MT_MANIFEST, "Docker v2 with a parameter");
    IS_INT(osb_media_kind("application/vnd.docker.distribution.manifest.v1+prettyjws"),
           OSB_MT_SCHEMA1, "schema 1");
    IS_INT(osb_media_kind("application/vnd.oci.image.layer.v1.tar+zstd"), OSB_MT_LAYER, "zstd");
    IS_INT(osb_media_kind("application/vnd.oci.image.layer.v1.tar"), OSB_MT_LAYER, "tar");
    IS_INT(osb_media_kind("application/vnd.docker.image.rootfs.diff.tar.gzip"), OSB_MT_LAYER,
           "docker gzip");
    IS_INT(osb_media_kind("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"),
           OSB_MT_FOREIGN, "foreign");
    IS_INT(osb_media_kind("application/vnd.oci.image.config.v1+json"), OSB_MT_CONFIG, "config");
    IS_INT(osb_media_kind("application/vnd.docker.container.image.v1+json"), OSB_MT_CONFIG,
           "docker config");
    IS_INT(osb_media_kind("application/vnd.oci.image.layer.v1.tar+lz4"), OSB_MT_UNKNOWN, "lz4");
    IS_INT(osb_media_kind(NULL), OSB_MT_UNKNOWN, "none");
    OK(strstr(OSB_MANIFEST_ACCEPT, "manifest.list.v2") && strstr(OSB_MANIFEST_ACCEPT, "index.v1") &&
           strstr(OSB_MANIFEST_ACCEPT, "image.manifest.v1") &&
           strstr(OSB_MANIFEST_ACCEPT, "distribution.manifest.v2"),
       "Accept lists the four manifest types");
}

static void test_index(void)
{
    json_t *idx = J("{\"schemaVersion\":2,\"manifests\":["
                    "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1
                    "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm\","
                    "\"variant\":\"v7\"}},"
                    "{\"digest\":\"" D2 "\",\"size\":10,\"platform\":{\"os\":\"linux\","
                    "\"architecture\":\"amd64\"}},"
                    "{\"digest\":\"" D3 "\",\"size\":10,\"platform\":{\"os\":\"unknown\","
                    "\"architecture\":\"unknown\"}}]}");
    char d[OSB_DIGEST_MAX];
    struct osb_err err = {0};
    OK(osb_index_select(idx, "linux", "amd64", "img", d, &err) == 0 && strcmp(d, D2) == 0,
       "linux/amd64 picked");
    OK(osb_index_select(idx, "linux", "arm", "img", d, &err) == 0 && strcmp(d, D1) == 0,
       "linux/arm picked, variant ignored");
    OK(osb_index_select(idx, "linux", "s390x", "myimg", d, &err) < 0 &&
           err.code == OSB_E_UNSUPPORTED,
       "no match: UNSUPPORTED");
    OK(strstr(err.msg, "myimg") && strstr(err.msg, "linux/amd64") && strstr(err.msg, "linux/arm") &&
           !strstr(err.msg, "unknown"),
       "... the message names the image and the platforms offered, not attestations");
    OK(osb_index_select(idx, "unknown", "unknown", "img", d, &err) < 0,
       "attestation entries never match");
    json_decref(idx);
    idx = J("{\"manifests\":{}}");
    OK(osb_index_select(idx, "linux", "amd64", "img", d, &err) < 0 && err.code == OSB_E_INVALID,
       "malformed index: INVALID");
    json_decref(idx);
    idx = J("{\"manifests\":[{\"digest\":\"sha512:00\",\"platform\":{\"os\":\"linux\","
            "\"architecture\":\"amd64\"}}]}");
    OK(osb_index_select(idx, "linux", "amd64", "img", d, &err) < 0 && err.code == OSB_E_UNSUPPORTED,
       "non-sha256 digest: UNSUPPORTED");
    json_decref(idx);
    const char *a = osb_default_arch();
    OK(a && *a && !strchr(a, '_'), "default arch in Go's spelling");
}

static void test_manifest(void)
{
    struct osb_manifest m = {0};
    struct osb_err err = {0};
    json_t *man =
        J("{\"schemaVersion\":2,\"config\":{\"mediaType\":"
          "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1 "\",\"size\":7},"
          "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
          "\"digest\":\"" D2 "\",\"size\":100},{\"mediaType\":"
          "\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" D3 "\",\"size\":200}]}");
    OK(osb_manifest_parse(man, "img", &m, &err) == 0, "OCI manifest parses");
    IS_INT(m.n_layers, 2, "two layers");
    IS_STR(m.config_blob.digest, D1, "config digest");
    IS_INT(m.config_blob.size, 7, "config size");
    IS_STR(m.layers[1].digest, D3, "layers bottom first");
    IS_INT(m.layers[1].size, 200, "layer size");
    free(m.layers);
    json_decref(man);
    man = J(
        "{\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
        "\",\"size\":7},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+lz4\","
        "\"digest\":\"" D2 "\",\"size\":1}]}");
    memset(&m, 0, sizeof m);
    OK(osb_manifest_parse(man, "myimg", &m, &err) < 0 && err.code == OSB_E_UNSUPPORTED &&
           strstr(err.msg, "myimg") && strstr(err.msg, "lz4"),
       "unknown layer type: UNSUPPORTED naming the image and the type");
    json_decref(man);
    man =
        J("{\"config\":{\"mediaType\":\"application/vnd.cncf.helm.config.v1+json\",\"digest\":\"" D1
          "\",\"size\":7},\"layers\":[]}");
    OK(osb_manifest_parse(man, "chart", &m, &err) < 0 && err.code == OSB_E_UNSUPPORTED,
       "a helm chart's config: UNSUPPORTED");
    json_decref(man);
    man =
        J("{\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
          "\",\"size\":7},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
          "\"digest\":\"sha256:../../etc\",\"size\":1}]}");
    OK(osb_manifest_parse(man, "img", &m, &err) < 0, "a malformed layer digest is refused");
    json_decref(man);
    man =
        J("{\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
          "\"},\"layers\":[]}");
    OK(osb_manifest_parse(man, "img", &m, &err) < 0 && err.code == OSB_E_INVALID,
       "config without size: INVALID");
    json_decref(man);
    man = J("{\"layers\":[]}");
    OK(osb_manifest_parse(man, "img", &m, &err) < 0 && err.code == OSB_E_INVALID,
       "no config: INVALID");
    json_decref(man);
}

int main(void)
{
    test_auth();
    test_media();
    test_index();
    test_manifest();
    return tap_done();
}
