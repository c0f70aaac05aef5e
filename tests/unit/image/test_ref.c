/* Image references: Docker's grammar and canonical forms. */
#include "image/ref.h"

#include <stdio.h>

#include "tap.h"

static void good(const char *in, const char *want)
{
    struct osb_ref r;
    struct osb_err err = {0};
    char got[700], what[300];
    snprintf(what, sizeof what, "`%s` parses", in);
    if (osb_ref_parse(in, &r, &err) < 0) {
        printf("# %s\n", err.msg);
        OK(0, what);
        return;
    }
    osb_ref_string(&r, got, sizeof got);
    snprintf(what, sizeof what, "`%s` -> %s", in, want);
    IS_STR(got, want, what);
}

static void bad(const char *in, const char *needle)
{
    struct osb_ref r;
    struct osb_err err = {0};
    char what[300];
    snprintf(what, sizeof what, "`%s` is refused", in);
    OK(osb_ref_parse(in, &r, &err) < 0 && err.code == OSB_E_INVALID, what);
    if (needle) {
        snprintf(what, sizeof what, "... the message mentions `%s`", needle);
        OK(strstr(err.msg, needle) != NULL, what);
    }
}

int main(void)
{
    const char *d64 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char in[300], want[300];
    good("alpine", "docker.io/library/alpine:latest");
    good("python:3.12", "docker.io/library/python:3.12");
    good("docker.io/library/alpine:3.20", "docker.io/library/alpine:3.20");
    good("docker.io/alpine", "docker.io/library/alpine:latest");
    good("index.docker.io/library/alpine", "docker.io/library/alpine:latest");
    good("user/repo", "docker.io/user/repo:latest");
    good("ghcr.io/org/img:tag", "ghcr.io/org/img:tag");
    good("localhost/img", "localhost/img:latest");
    good("localhost:5000/a/b:v1.0-rc_1", "localhost:5000/a/b:v1.0-rc_1");
    good("127.0.0.1:5000/team/img", "127.0.0.1:5000/team/img:latest");
    good("my-registry.example.com/a__b/c.d/e-f---g",
         "my-registry.example.com/a__b/c.d/e-f---g:latest");
    good("Registry.Example.com/x", "Registry.Example.com/x:latest");
    good("a/b/c/d/e", "docker.io/a/b/c/d/e:latest");
    good("img:_under", "docker.io/library/img:_under");
    snprintf(in, sizeof in, "registry.example.com:5000/team/img@%s", d64);
    snprintf(want, sizeof want, "registry.example.com:5000/team/img@%s", d64);
    good(in, want);
    snprintf(in, sizeof in, "alpine:3.20@%s", d64);
    snprintf(want, sizeof want, "docker.io/library/alpine:3.20@%s", d64);
    good(in, want);
    struct osb_ref r;
    snprintf(in, sizeof in, "alpine@%s", d64);
    OK(osb_ref_parse(in, &r, NULL) == 0 && r.tag[0] == '\0' && strcmp(r.digest, d64) == 0,
       "digest only: no tag, the digest is kept");
    OK(osb_ref_parse("localhost:5000/a:t", &r, NULL) == 0 &&
           strcmp(r.domain, "localhost:5000") == 0 && strcmp(r.path, "a") == 0 &&
           strcmp(r.tag, "t") == 0,
       "parts: domain, path (no library/ outside docker.io), tag");
    char tag128[140];
    memset(tag128, 'a', 128);
    tag128[128] = '\0';
    snprintf(in, sizeof in, "img:%s", tag128);
    OK(osb_ref_parse(in, &r, NULL) == 0, "a 128-character tag is fine");
    snprintf(in, sizeof in, "img:%sa", tag128);
    bad(in, "tag");

    bad("", "empty");
    bad("Alpine", "component");
    bad("docker.io/Library/alpine", "component");
    bad("alpine:", "tag");
    bad("alpine:-x", "tag");
    bad("alpine:.x", "tag");
    bad("alpine:a b", "tag");
    bad("alpine@sha256:abc", "digest");
    bad("alpine@md5:0123456789abcdef0123456789abcdef", "digest");
    bad("alpine@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "digest");
    bad("a//b", "component");
    bad("/alpine", NULL);
    bad("alpine/", "component");
    bad("a/-b", "component");
    bad("a/b-", "component");
    bad("a/b..c", "component");
    bad("a/b___c", "component");
    bad("a/../b", "component");
    bad(":tag", "no name");
    bad("@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "no name");
    bad("-host.com/a", NULL);
    bad("host-.com/a", "registry");
    bad("host.com:/a", "registry");
    bad("host.com:99999x/a", "registry");
    bad("host..com/a", "registry");
    bad("ex ample.com/a", NULL);
    char longname[300];
    memset(longname, 'a', 260);
    longname[260] = '\0';
    bad(longname, "longer");
    return tap_done();
}
