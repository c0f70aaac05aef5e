#include "image/registry.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "image/registry_parse.h"

#define MANIFEST_MAX (4u << 20)
#define CONFIG_MAX (16u << 20)
#define ERRBODY_MAX (16u << 10)
#define MAX_REDIRECTS 5

struct osb_registry {
    struct osb_ref ref;
    char image[600]; /* canonical reference, for messages */
    char **bases;    /* mirrors first, then the registry itself */
    size_t n_bases, cur;
    char *username, *password;
    char os[32], arch[32];
    char *auth; /* "Authorization: ..." for bases[cur], or NULL */
    bool push;  /* tokens are asked for with pull,push scope */
    CURL *curl;
};

/* One HTTP exchange. */
struct xfer {
    struct osb_registry *r;
    const char *accept;
    long status;
    char www_auth[1024];
    char content_type[256];
    char location[2048];
    char content_digest[OSB_DIGEST_MAX];
    struct osb_buf body; /* 200 body when no cb; else the error body */
    bool got_status;
    /* streaming a verified blob */
    osb_registry_data_cb cb;
    void *ud;
    struct osb_err *cb_err;
    bool cb_failed, too_big;
    int64_t limit; /* bytes allowed in a 200 body */
    int64_t delivered;
    EVP_MD_CTX *md;
    /* requests other than GET */
    const char *method;   /* "HEAD", "POST", "PUT"; NULL for GET */
    const char *req_type; /* Content-Type of the request body */
    long ok[3];           /* statuses that succeed, 0-terminated; {0}: 200 */
    int up_fd;            /* the PUT body: a file (>= 0) ... */
    const char *up_mem;   /* ... or bytes */
    int64_t up_size, up_off;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void sha256_hex(EVP_MD_CTX *md, char out[OSB_DIGEST_MAX])
{
    unsigned char h[32];
    unsigned int n = 0;
    EVP_DigestFinal_ex(md, h, &n);
    int o = snprintf(out, OSB_DIGEST_MAX, "sha256:");
    for (unsigned i = 0; i < n; i++)
        o += snprintf(out + o, (size_t)(OSB_DIGEST_MAX - o), "%02x", h[i]);
}

static void digest_of(const void *data, size_t len, char out[OSB_DIGEST_MAX])
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    EVP_DigestUpdate(md, data, len);
    sha256_hex(md, out);
    EVP_MD_CTX_free(md);
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        x->www_auth[0] = x->content_type[0] = x->location[0] = x->content_digest[0] = '\0';
        return len;
    }
    const char *colon = memchr(data, ':', len);
    if (!colon)
        return len;
    size_t klen = (size_t)(colon - data);
    const char *v = colon + 1;
    while (v < data + len && (*v == ' ' || *v == '\t'))
        v++;
    size_t vlen = (size_t)(data + len - v);
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
        vlen--;
    char *dst = NULL;
    size_t cap = 0;
    if (klen == 16 && strncasecmp(data, "www-authenticate", 16) == 0 && !x->www_auth[0]) {
        dst = x->www_auth;
        cap = sizeof x->www_auth;
    } else if (klen == 12 && strncasecmp(data, "content-type", 12) == 0) {
        dst = x->content_type;
        cap = sizeof x->content_type;
    } else if (klen == 8 && strncasecmp(data, "location", 8) == 0) {
        dst = x->location;
        cap = sizeof x->location;
    } else if (klen == 21 && strncasecmp(data, "docker-content-digest", 21) == 0) {
        dst = x->content_digest;
        cap = sizeof x->content_digest;
    }
    if (dst)
        snprintf(dst, cap, "%.*s", (int)(vlen < cap ? vlen : cap - 1), v);
    return len;
}

static size_t on_data(char *data, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t len = size * n;
    if (!x->got_status) {
        curl_easy_getinfo(x->r->curl, CURLINFO_RESPONSE_CODE, &x->status);
        x->got_status = true;
    }
    if (x->status != 200) {
        /* An error body only feeds a message: its first bytes are enough. */
        size_t room = x->body.max - x->body.len;
        if (osb_buf_add(&x->body, data, len < room ? len : room) < 0)
            return 0;
        return len;
    }
    x->delivered += (int64_t)len;
    if (x->limit >= 0 && x->delivered > x->limit) {
        x->too_big = true;
        return 0;
    }
    if (x->md)
        EVP_DigestUpdate(x->md, data, len);
    if (!x->cb)
        return osb_buf_add(&x->body, data, len) < 0 ? (x->too_big = true, 0) : len;
    if (x->cb(x->ud, data, len, x->cb_err) < 0) {
        x->cb_failed = true;
        return 0;
    }
    return len;
}

static struct curl_slist *req_headers(struct xfer *x, bool auth)
{
    struct curl_slist *h = NULL;
    if (x->accept) {
        char *a = osb_xasprintf("Accept: %s", x->accept);
        h = curl_slist_append(h, a);
        free(a);
    }
    if (auth && x->r->auth)
        h = curl_slist_append(h, x->r->auth);
    if (x->req_type) {
        char *a = osb_xasprintf("Content-Type: %s", x->req_type);
        h = curl_slist_append(h, a);
        free(a);
    }
    return h;
}

static void xfer_reset(struct xfer *x)
{
    x->status = 0;
    x->got_status = false;
    x->www_auth[0] = x->content_type[0] = x->location[0] = x->content_digest[0] = '\0';
    x->up_off = 0;
    osb_buf_reset(&x->body);
}

/* The PUT body, from the file (streamed, never all in memory) or bytes. */
static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    size_t want = size * n;
    if ((int64_t)want > x->up_size - x->up_off)
        want = (size_t)(x->up_size - x->up_off);
    if (want == 0)
        return 0;
    if (x->up_mem) {
        memcpy(buf, x->up_mem + x->up_off, want);
        x->up_off += (int64_t)want;
        return want;
    }
    ssize_t got = OSB_RETRY(pread(x->up_fd, buf, want, (off_t)x->up_off));
    if (got <= 0) /* a shrunk file: the registry's digest check would fail anyway */
        return CURL_READFUNC_ABORT;
    x->up_off += got;
    return (size_t)got;
}

static int on_seek(void *ud, curl_off_t off, int origin)
{
    struct xfer *x = ud;
    if (origin != SEEK_SET || off < 0 || off > x->up_size)
        return CURL_SEEKFUNC_CANTSEEK;
    x->up_off = off;
    return CURL_SEEKFUNC_OK;
}

static void set_method(struct xfer *x, CURL *c)
{
    if (!x->method)
        return;
    if (strcmp(x->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(x->method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    } else {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, x);
        curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(c, CURLOPT_SEEKDATA, x);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->up_size);
    }
}

/* One request (GET unless x->method) without following redirects. <0 only for transport failures
 * (or the consumer's refusal); HTTP statuses are the caller's. */
static int perform(struct xfer *x, const char *url, bool auth, const char *user, const char *pass,
                   struct osb_err *err)
{
    CURL *c = x->r->curl;
    char errbuf[CURL_ERROR_SIZE] = "";
    xfer_reset(x);
    curl_easy_reset(c);
    struct curl_slist *h = req_headers(x, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "opensandbox-server");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    set_method(x, c);
    if (user) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, pass ? pass : "");
    }
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (!x->got_status)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
    if (rc == CURLE_OK)
        return 0;
    if (x->cb_failed)
        return -1;
    if (x->too_big)
        return osb_err_set(err, OSB_E_INTEGRITY,
                           "image `%s`: more data than the %lld bytes "
                           "expected",
                           x->r->image, (long long)x->limit);
    return osb_err_set(err, OSB_E_UNAVAILABLE, "image `%s`: registry unreachable: %s", x->r->image,
                       errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

/* The first message of a registry's {"errors":[{code,message}]} body. */
static void registry_message(struct xfer *x, char *out, size_t n)
{
    out[0] = '\0';
    json_t *j = x->body.len ? json_loadb(x->body.data, x->body.len, 0, NULL) : NULL;
    json_t *e = json_array_get(json_object_get(j, "errors"), 0);
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (code || msg)
        snprintf(out, n, ": %s%s%s", code ? code : "", code && msg ? " " : "", msg ? msg : "");
    json_decref(j);
}

static bool same_origin(const char *a, const char *b)
{
    CURLU *ua = curl_url(), *ub = curl_url();
    char *ha = NULL, *hb = NULL, *pa = NULL, *pb = NULL, *sa = NULL, *sb = NULL;
    bool same = curl_url_set(ua, CURLUPART_URL, a, 0) == CURLUE_OK &&
                curl_url_set(ub, CURLUPART_URL, b, 0) == CURLUE_OK &&
                curl_url_get(ua, CURLUPART_HOST, &ha, 0) == CURLUE_OK &&
                curl_url_get(ub, CURLUPART_HOST, &hb, 0) == CURLUE_OK &&
                curl_url_get(ua, CURLUPART_PORT, &pa, CURLU_DEFAULT_PORT) == CURLUE_OK &&
                curl_url_get(ub, CURLUPART_PORT, &pb, CURLU_DEFAULT_PORT) == CURLUE_OK &&
                curl_url_get(ua, CURLUPART_SCHEME, &sa, 0) == CURLUE_OK &&
                curl_url_get(ub, CURLUPART_SCHEME, &sb, 0) == CURLUE_OK &&
                strcasecmp(ha, hb) == 0 && strcmp(pa, pb) == 0 && strcmp(sa, sb) == 0;
    curl_free(ha), curl_free(hb), curl_free(pa), curl_free(pb), curl_free(sa), curl_free(sb);
    curl_url_cleanup(ua);
    curl_url_cleanup(ub);
    return same;
}

static bool header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

/* Docker Hub's flow: a token from the realm, with Basic credentials if any. */
static int fetch_token(struct osb_registry *r, const struct osb_auth_challenge *ch,
                       struct osb_err *err)
{
    if (strncmp(ch->realm, "https://", 8) != 0 && strncmp(ch->realm, "http://", 7) != 0)
        return osb_err_set(err, OSB_E_DENIED,
                           "image `%s`: registry asks for a token from an "
                           "unusable realm",
                           r->image);
    char scope[600];
    if (r->push) /* a challenge to a HEAD asks for pull only */
        snprintf(scope, sizeof scope, "repository:%s:pull,push", r->ref.path);
    else if (ch->scope[0])
        snprintf(scope, sizeof scope, "%s", ch->scope);
    else
        snprintf(scope, sizeof scope, "repository:%s:pull", r->ref.path);
    char *es = curl_easy_escape(r->curl, scope, 0), *sv = curl_easy_escape(r->curl, ch->service, 0);
    char *url = osb_xasprintf("%s%sservice=%s&scope=%s", ch->realm,
                              strchr(ch->realm, '?') ? "&" : "?", sv, es);
    curl_free(es);
    curl_free(sv);
    struct xfer x = {.r = r, .accept = "application/json", .limit = 1 << 20};
    osb_buf_init(&x.body, 1 << 20);
    int rc = perform(&x, url, false, r->username, r->password, err);
    free(url);
    json_t *j = NULL;
    if (rc == 0 && (x.status == 401 || x.status == 403))
        rc = osb_err_set(err, OSB_E_DENIED, "image `%s`: authentication failed%s", r->image,
                         r->username ? " (wrong username or password?)" : "");
    else if (rc == 0 && x.status != 200)
        rc = osb_err_set(err, x.status >= 500 ? OSB_E_UNAVAILABLE : OSB_E_DENIED,
                         "image `%s`: token service answered HTTP %ld", r->image, x.status);
    else if (rc == 0)
        j = json_loadb(x.body.data, x.body.len, 0, NULL);
    const char *tok = json_string_value(json_object_get(j, "token"));
    if (!tok)
        tok = json_string_value(json_object_get(j, "access_token"));
    if (rc == 0 && (!tok || !header_safe(tok)))
        rc = osb_err_set(err, OSB_E_DENIED, "image `%s`: token service gave no usable token",
                         r->image);
    if (rc == 0) {
        free(r->auth);
        r->auth = osb_xasprintf("Authorization: Bearer %s", tok);
    }
    json_decref(j);
    osb_buf_free(&x.body);
    return rc;
}

static int set_basic(struct osb_registry *r, struct osb_err *err)
{
    if (!r->username)
        return osb_err_set(err, OSB_E_DENIED,
                           "image `%s`: the registry requires authentication (no credentials "
                           "given)",
                           r->image);
    _cleanup_free_ char *raw = osb_xasprintf("%s:%s", r->username, r->password ? r->password : "");
    size_t n = strlen(raw);
    _cleanup_free_ char *b64 = osb_xmalloc(OSB_BASE64_ENCODED_SIZE(n));
    osb_base64_encode((const uint8_t *)raw, n, b64);
    explicit_bzero(raw, n);
    free(r->auth);
    r->auth = osb_xasprintf("Authorization: Basic %s", b64);
    explicit_bzero(b64, strlen(b64));
    return 0;
}

static int authenticate(struct osb_registry *r, struct xfer *x, struct osb_err *err)
{
    struct osb_auth_challenge ch;
    if (!x->www_auth[0] || osb_auth_parse(x->www_auth, &ch, NULL) < 0)
        return osb_err_set(err, OSB_E_DENIED, "image `%s`: registry refused access (HTTP 401)",
                           r->image);
    if (strcasecmp(ch.scheme, "Bearer") == 0)
        return fetch_token(r, &ch, err);
    if (strcasecmp(ch.scheme, "Basic") == 0)
        return set_basic(r, err);
    return osb_err_set(err, OSB_E_DENIED, "image `%s`: unsupported authentication scheme `%s`",
                       r->image, ch.scheme);
}

static int status_error(struct xfer *x, const char *what, struct osb_err *err)
{
    char m[300];
    registry_message(x, m, sizeof m);
    const char *img = x->r->image;
    switch (x->status) {
    case 401:
        return osb_err_set(err, OSB_E_DENIED,
                           "image `%s`: %s: access denied (authentication "
                           "failed, or the repository does not exist)%s",
                           img, what, m);
    case 403:
        return osb_err_set(err, OSB_E_DENIED, "image `%s`: %s: access refused%s", img, what, m);
    case 404: return osb_err_set(err, OSB_E_NOTFOUND, "image `%s`: %s not found%s", img, what, m);
    case 429:
        return osb_err_set(err, OSB_E_UNAVAILABLE,
                           "image `%s`: %s: rate limited by the "
                           "registry%s",
                           img, what, m);
    default:
        return osb_err_set(err, x->status >= 500 ? OSB_E_UNAVAILABLE : OSB_E_INVALID,
                           "image `%s`: %s: registry answered HTTP %ld%s", img, what, x->status, m);
    }
}

static bool status_ok(const struct xfer *x)
{
    if (!x->ok[0])
        return x->status == 200;
    for (size_t i = 0; i < OSB_ARRAY_LEN(x->ok) && x->ok[i]; i++)
        if (x->status == x->ok[i])
            return true;
    return false;
}

/* url (under bases[cur]): authenticates when challenged, follows
 * redirects (credentials only to the registry's own origin). */
static int request_url(struct osb_registry *r, const char *start, const char *what, struct xfer *x,
                       struct osb_err *err)
{
    const char *base = r->bases[r->cur];
    _cleanup_free_ char *url = osb_xstrdup(start);
    bool tried_auth = false;
    for (int hops = 0; hops <= MAX_REDIRECTS;) {
        bool own = same_origin(url, base);
        if (perform(x, url, own, NULL, NULL, err) < 0)
            return -1;
        if (status_ok(x))
            return 0;
        if (x->status == 401 && own && !tried_auth) {
            tried_auth = true;
            if (authenticate(r, x, err) < 0)
                return -1;
            continue;
        }
        if (x->status >= 300 && x->status < 400 && x->status != 304) {
            char *loc = NULL;
            curl_easy_getinfo(r->curl, CURLINFO_REDIRECT_URL, &loc);
            if (!loc)
                break;
            char *next = osb_xstrdup(loc);
            free(url);
            url = next;
            hops++;
            continue;
        }
        return status_error(x, what, err);
    }
    return osb_err_set(err, OSB_E_UNAVAILABLE, "image `%s`: %s: too many or bad redirects",
                       r->image, what);
}

/* <base>/v2/<path>/<suffix>, as request_url. */
static int request(struct osb_registry *r, const char *suffix, const char *what, struct xfer *x,
                   struct osb_err *err)
{
    _cleanup_free_ char *url = osb_xasprintf("%s/v2/%s/%s", r->bases[r->cur], r->ref.path, suffix);
    return request_url(r, url, what, x, err);
}

static bool listed(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

int osb_registry_open(const struct osb_ref *ref, const struct osb_registry_opts *o,
                      struct osb_registry **out, struct osb_err *err)
{
    pthread_once(&curl_once, curl_init_once);
    struct osb_registry *r = osb_xcalloc(1, sizeof *r);
    r->ref = *ref;
    osb_ref_string(ref, r->image, sizeof r->image);
    r->curl = curl_easy_init();
    if (!r->curl) {
        osb_err_set(err, OSB_E_INTERNAL, "image `%s`: curl_easy_init failed", r->image);
        free(r);
        return -1;
    }
    size_t nm = 0;
    bool hub = strcmp(ref->domain, "docker.io") == 0;
    while (hub && o && o->mirrors && o->mirrors[nm])
        nm++;
    r->bases = osb_xcalloc(nm + 1, sizeof *r->bases);
    for (size_t i = 0; i < nm; i++) {
        size_t l = strlen(o->mirrors[i]);
        while (l && o->mirrors[i][l - 1] == '/')
            l--;
        r->bases[i] = osb_xstrndup(o->mirrors[i], l);
    }
    const char *scheme = o && listed(o->insecure, ref->domain) ? "http" : "https";
    r->bases[nm] = osb_xasprintf("%s://%s", scheme, hub ? "registry-1.docker.io" : ref->domain);
    r->n_bases = nm + 1;
    r->username = o && o->username ? osb_xstrdup(o->username) : NULL;
    r->password = o && o->password ? osb_xstrdup(o->password) : NULL;
    snprintf(r->os, sizeof r->os, "%s", o && o->os ? o->os : "linux");
    snprintf(r->arch, sizeof r->arch, "%s", o && o->arch ? o->arch : osb_default_arch());
    *out = r;
    return 0;
}

static void free_secret(char *s)
{
    if (s)
        explicit_bzero(s, strlen(s));
    free(s);
}

void osb_registry_close(struct osb_registry *r)
{
    if (!r)
        return;
    curl_easy_cleanup(r->curl);
    for (size_t i = 0; i < r->n_bases; i++)
        free(r->bases[i]);
    free(r->bases);
    free(r->username);
    free_secret(r->password);
    free_secret(r->auth);
    free(r);
}

void osb_manifest_free(struct osb_manifest *m)
{
    if (!m)
        return;
    json_decref(m->config);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* A manifest or index by tag or digest; a digest is verified. */
static int get_manifest(struct osb_registry *r, const char *reference, json_t **out,
                        enum osb_media_kind *kind, char digest[OSB_DIGEST_MAX], struct osb_err *err)
{
    struct xfer x = {.r = r, .accept = OSB_MANIFEST_ACCEPT, .limit = MANIFEST_MAX};
    osb_buf_init(&x.body, MANIFEST_MAX);
    char suffix[200];
    snprintf(suffix, sizeof suffix, "manifests/%s", reference);
    int rc = request(r, suffix, "manifest", &x, err);
    if (rc == 0) {
        digest_of(x.body.data, x.body.len, digest);
        if (strncmp(reference, "sha256:", 7) == 0 && strcmp(reference, digest) != 0)
            rc = osb_err_set(err, OSB_E_INTEGRITY,
                             "image `%s`: manifest digest mismatch: "
                             "wanted %s, got %s",
                             r->image, reference, digest);
    }
    json_t *j = NULL;
    if (rc == 0 && !(j = json_loadb(x.body.data, x.body.len, 0, NULL)))
        rc = osb_err_set(err, OSB_E_INVALID, "image `%s`: manifest is not JSON", r->image);
    if (rc == 0 && !json_is_object(j))
        rc = osb_err_set(err, OSB_E_INVALID, "image `%s`: manifest is not an object", r->image);
    if (rc == 0) {
        *kind = osb_media_kind(x.content_type);
        if (*kind == OSB_MT_UNKNOWN)
            *kind = osb_media_kind(json_string_value(json_object_get(j, "mediaType")));
        if (*kind == OSB_MT_UNKNOWN && json_is_array(json_object_get(j, "manifests")))
            *kind = OSB_MT_INDEX;
        if (*kind == OSB_MT_UNKNOWN && json_is_array(json_object_get(j, "layers")))
            *kind = OSB_MT_MANIFEST;
        if (*kind == OSB_MT_UNKNOWN && json_is_array(json_object_get(j, "fsLayers")))
            *kind = OSB_MT_SCHEMA1;
    }
    osb_buf_free(&x.body);
    if (rc < 0) {
        json_decref(j);
        return -1;
    }
    *out = j;
    return 0;
}

static int fetch_config(struct osb_registry *r, struct osb_manifest *m, struct osb_err *err)
{
    struct osb_buf b;
    osb_buf_init(&b, CONFIG_MAX);
    int rc = m->config_blob.size > (int64_t)CONFIG_MAX
                 ? osb_err_set(err, OSB_E_INVALID, "image `%s`: config blob too large", r->image)
                 : 0;
    if (rc == 0)
        rc = osb_registry_blob(r, &m->config_blob, NULL, &b, err);
    if (rc == 0 && !(m->config = json_loadb(b.data, b.len, 0, NULL)))
        rc = osb_err_set(err, OSB_E_INVALID, "image `%s`: config is not JSON", r->image);
    if (rc == 0 && !json_is_object(m->config))
        rc = osb_err_set(err, OSB_E_INVALID, "image `%s`: config is not an object", r->image);
    osb_buf_free(&b);
    return rc;
}

static int resolve(struct osb_registry *r, struct osb_manifest *out, struct osb_err *err)
{
    enum osb_media_kind kind = OSB_MT_UNKNOWN;
    json_t *j = NULL;
    const char *reference = r->ref.digest[0] ? r->ref.digest : r->ref.tag;
    if (get_manifest(r, reference, &j, &kind, out->digest, err) < 0)
        return -1;
    if (kind == OSB_MT_INDEX) {
        char d[OSB_DIGEST_MAX];
        int rc = osb_index_select(j, r->os, r->arch, r->image, d, err);
        json_decref(j);
        j = NULL;
        if (rc < 0 || get_manifest(r, d, &j, &kind, out->digest, err) < 0)
            return -1;
    }
    int rc = 0;
    if (kind == OSB_MT_SCHEMA1)
        rc = osb_err_set(err, OSB_E_UNSUPPORTED,
                         "image `%s`: Docker v2 schema 1 manifests are "
                         "not supported",
                         r->image);
    else if (kind != OSB_MT_MANIFEST)
        rc = osb_err_set(err, OSB_E_UNSUPPORTED, "image `%s`: unsupported manifest media type",
                         r->image);
    if (rc == 0)
        rc = osb_manifest_parse(j, r->image, out, err);
    json_decref(j);
    if (rc == 0 && fetch_config(r, out, err) < 0) {
        osb_manifest_free(out);
        return -1;
    }
    return rc;
}

static void next_base(struct osb_registry *r, const struct osb_err *err)
{
    osb_warn("image `%s`: mirror %s failed (%s); trying %s", r->image, r->bases[r->cur],
             err ? err->msg : "?", r->bases[r->cur + 1]);
    r->cur++;
    free_secret(r->auth);
    r->auth = NULL;
}

int osb_registry_manifest(struct osb_registry *r, struct osb_manifest *out, struct osb_err *err)
{
    memset(out, 0, sizeof *out);
    for (;;) {
        if (resolve(r, out, err) == 0)
            return 0;
        if (r->cur + 1 >= r->n_bases)
            return -1;
        next_base(r, err);
    }
}

static int blob_once(struct osb_registry *r, const struct osb_blob *b, osb_registry_data_cb cb,
                     void *ud, int64_t *delivered, struct osb_err *err)
{
    struct xfer x = {.r = r, .cb = cb, .ud = ud, .cb_err = err, .limit = b->size};
    osb_buf_init(&x.body, cb ? ERRBODY_MAX : CONFIG_MAX);
    if (!cb) /* into a caller's buffer (the config) */
        x.body.max = CONFIG_MAX;
    x.md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(x.md, EVP_sha256(), NULL);
    char suffix[120], what[120];
    snprintf(suffix, sizeof suffix, "blobs/%s", b->digest);
    snprintf(what, sizeof what, "blob %.19s", b->digest);
    int rc = request(r, suffix, what, &x, err);
    *delivered = x.delivered;
    if (rc == 0 && x.delivered != b->size)
        rc = osb_err_set(err, OSB_E_INTEGRITY,
                         "image `%s`: blob %s: got %lld bytes, the "
                         "manifest says %lld",
                         r->image, b->digest, (long long)x.delivered, (long long)b->size);
    char got[OSB_DIGEST_MAX];
    sha256_hex(x.md, got);
    if (rc == 0 && strcmp(got, b->digest) != 0)
        rc = osb_err_set(err, OSB_E_INTEGRITY,
                         "image `%s`: blob digest mismatch: wanted %s, "
                         "got %s",
                         r->image, b->digest, got);
    if (rc == 0 && !cb) {
        struct osb_buf *dst = ud;
        if (osb_buf_add(dst, x.body.data, x.body.len) < 0)
            rc = osb_err_set(err, OSB_E_TOOBIG, "image `%s`: blob %s does not fit in %zu bytes",
                             r->image, b->digest, dst->max);
    }
    EVP_MD_CTX_free(x.md);
    osb_buf_free(&x.body);
    return rc;
}

int osb_registry_blob(struct osb_registry *r, const struct osb_blob *b, osb_registry_data_cb cb,
                      void *ud, struct osb_err *err)
{
    if (!osb_digest_ok(b->digest))
        return osb_err_set(err, OSB_E_UNSUPPORTED, "image `%s`: unsupported digest `%.80s`",
                           r->image, b->digest);
    for (;;) {
        int64_t delivered = 0;
        if (blob_once(r, b, cb, ud, &delivered, err) == 0)
            return 0;
        /* Another base only while the consumer has seen nothing. */
        if (delivered > 0 || r->cur + 1 >= r->n_bases || (err && err->code == OSB_E_INTEGRITY))
            return -1;
        next_base(r, err);
    }
}

/* ------------------------------------------------------------ push */

/* Pushes go to the registry itself, never to a mirror, with a token for
 * pull,push (a pull token, if any, is dropped). */
static void push_mode(struct osb_registry *r)
{
    if (r->push)
        return;
    r->push = true;
    r->cur = r->n_bases - 1;
    free_secret(r->auth);
    r->auth = NULL;
}

/* The upload URL: Location (absolute, or relative to the POST's URL) with
 * digest=<digest> added to whatever query it already has. */
static char *upload_url(const char *post_url, const char *location, const char *digest)
{
    CURLU *u = curl_url();
    char *full = NULL, *out = NULL;
    _cleanup_free_ char *q = osb_xasprintf("digest=%s", digest);
    if (curl_url_set(u, CURLUPART_URL, post_url, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_URL, location, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK)
        out = osb_xstrdup(full);
    curl_free(full);
    curl_url_cleanup(u);
    return out;
}

static int blob_present(struct osb_registry *r, const char *digest, const char *what, bool *present,
                        struct osb_err *err)
{
    struct xfer x = {.r = r, .method = "HEAD", .ok = {200, 404}};
    osb_buf_init(&x.body, ERRBODY_MAX);
    char suffix[120];
    snprintf(suffix, sizeof suffix, "blobs/%s", digest);
    int rc = request(r, suffix, what, &x, err);
    *present = x.status == 200;
    osb_buf_free(&x.body);
    return rc;
}

static int blob_upload(struct osb_registry *r, const char *digest, int64_t size, int fd,
                       const char *what, struct osb_err *err)
{
    struct xfer x = {.r = r, .method = "POST", .ok = {202}};
    osb_buf_init(&x.body, ERRBODY_MAX);
    _cleanup_free_ char *post =
        osb_xasprintf("%s/v2/%s/blobs/uploads/", r->bases[r->cur], r->ref.path);
    int rc = request_url(r, post, what, &x, err);
    _cleanup_free_ char *put = NULL;
    if (rc == 0 && !(put = x.location[0] ? upload_url(post, x.location, digest) : NULL))
        rc = osb_err_set(err, OSB_E_INVALID,
                         "image `%s`: %s: the registry gave no usable "
                         "upload location",
                         r->image, what);
    if (rc == 0) {
        x.method = "PUT";
        x.ok[0] = 201;
        x.ok[1] = 204;
        x.req_type = "application/octet-stream";
        x.up_fd = fd;
        x.up_size = size;
        rc = request_url(r, put, what, &x, err);
    }
    osb_buf_free(&x.body);
    return rc;
}

int osb_registry_push_blob(struct osb_registry *r, const char *digest, int64_t size,
                           const char *path, struct osb_err *err)
{
    if (!osb_digest_ok(digest))
        return osb_err_set(err, OSB_E_UNSUPPORTED, "image `%s`: unsupported digest `%.80s`",
                           r->image, digest);
    push_mode(r);
    char what[120];
    snprintf(what, sizeof what, "blob %.19s", digest);
    bool present = false;
    if (blob_present(r, digest, what, &present, err) < 0)
        return -1;
    if (present)
        return 1;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return osb_err_sys(err, "image `%s`: open `%s`", r->image, path);
    if (st.st_size != size)
        return osb_err_set(err, OSB_E_INTEGRITY, "image `%s`: `%s` has %lld bytes, not %lld",
                           r->image, path, (long long)st.st_size, (long long)size);
    return blob_upload(r, digest, size, fd, what, err) < 0 ? -1 : 0;
}

int osb_registry_push_manifest(struct osb_registry *r, const char *reference,
                               const char *media_type, const void *data, size_t len,
                               struct osb_err *err)
{
    push_mode(r);
    char digest[OSB_DIGEST_MAX];
    digest_of(data, len, digest);
    if (strncmp(reference, "sha256:", 7) == 0 && strcmp(reference, digest) != 0)
        return osb_err_set(err, OSB_E_INTEGRITY, "image `%s`: the manifest is %s, not %.80s",
                           r->image, digest, reference);
    struct xfer x = {.r = r,
                     .method = "PUT",
                     .ok = {201, 200, 204},
                     .req_type = media_type,
                     .up_fd = -1,
                     .up_mem = data,
                     .up_size = (int64_t)len};
    osb_buf_init(&x.body, ERRBODY_MAX);
    char suffix[200];
    snprintf(suffix, sizeof suffix, "manifests/%s", reference);
    int rc = request(r, suffix, "manifest", &x, err);
    if (rc == 0 && x.content_digest[0] && strcmp(x.content_digest, digest) != 0)
        rc = osb_err_set(err, OSB_E_INTEGRITY,
                         "image `%s`: the registry stored the manifest "
                         "as %.80s, pushed %s",
                         r->image, x.content_digest, digest);
    osb_buf_free(&x.body);
    return rc;
}
