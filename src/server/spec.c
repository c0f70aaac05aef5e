/* CreateSandboxRequest validation. The order of checks follows the request
 * (image, entrypoint, limits, timeout, env, metadata, platform, features)
 * so the first problem a client sees is the first field it sent wrong. */
#include "server/spec.h"
#include "net/policy.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json.h"
#include "common/ctl.h"
#include "common/quantity.h"
#include "common/xalloc.h"
#include "server/claim.h"

#define BAD "SANDBOX::INVALID_PARAMETER"
/* Entrypoint argv and env entries: far beyond any real request, and a
 * bound on what the runtime is asked to copy. */
#define MAX_ARGS 4096
#define MAX_ENV 4096
/* Limits: the one table in runtime/runtime.h (OSB_LIMIT_*). */

/* -------------------------------------------------------------- labels */

static bool label_char(char c, bool edge)
{
    if (isalnum((unsigned char)c))
        return true;
    return !edge && (c == '-' || c == '_' || c == '.');
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 chars; empty
 * allowed when allow_empty. */
static bool label_name(const char *s, size_t n, bool allow_empty)
{
    if (n == 0)
        return allow_empty;
    if (n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!label_char(s[i], i == 0 || i == n - 1))
            return false;
    return true;
}

/* DNS-1123 subdomain: lower-case labels [a-z0-9]([-a-z0-9]*[a-z0-9])?
 * joined by dots, at most 253 chars. */
static bool dns_subdomain(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            char c = s[i];
            bool edge = i == start || i + 1 == n || s[i + 1] == '.';
            if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || (c == '-' && !edge)))
                return false;
            continue;
        }
        if (i == start)
            return false; /* empty label */
        start = i + 1;
    }
    return true;
}

int osb_label_reserved(const char *key)
{
    return strncmp(key, "opensandbox.io/", 15) == 0;
}

int osb_label_check(const char *key, const char *value, char *msg, size_t n)
{
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (slash && strchr(name, '/')) {
        snprintf(msg, n, "metadata key '%s' may contain at most one '/'", key);
        return -1;
    }
    if (slash && !dns_subdomain(key, (size_t)(slash - key))) {
        snprintf(msg, n,
                 "metadata key '%s': the prefix must be a DNS subdomain (lower-case "
                 "alphanumerics, '-' and '.', at most 253 characters)",
                 key);
        return -1;
    }
    if (!label_name(name, strlen(name), false)) {
        snprintf(msg, n,
                 "metadata key '%s': the name must be 1-63 characters of alphanumerics, '-', "
                 "'_' or '.', starting and ending with an alphanumeric",
                 key);
        return -1;
    }
    if (value && !label_name(value, strlen(value), true)) {
        snprintf(msg, n,
                 "metadata value for '%s' must be at most 63 characters of alphanumerics, '-', "
                 "'_' or '.', starting and ending with an alphanumeric (or empty)",
                 key);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- parse */

static char **strv_new(size_t n)
{
    return osb_xcalloc(n + 1, sizeof(char *));
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static int parse_auth(json_t *img, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *auth = osb_json_field(img, "auth");
    if (!auth)
        return 0;
    if (!json_is_object(auth))
        return osb_apierr(e, BAD, "field 'image.auth' must be an object");
    json_t *u = osb_json_field(auth, "username"), *p = osb_json_field(auth, "password");
    if (!json_is_string(u) || !json_is_string(p))
        return osb_apierr(e, BAD,
                          "field 'image.auth' needs string fields 'username' and 'password'");
    out->auth_user = osb_xstrdup(json_string_value(u));
    out->auth_pass = osb_xstrdup(json_string_value(p));
    return 0;
}

/* extensions.poolRef is given (its shape is checked by parse_extensions). */
static bool pool_claim(json_t *body)
{
    json_t *x = osb_json_field(body, "extensions");
    return json_is_object(x) && osb_json_field(x, "poolRef");
}

static int parse_image(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *img = osb_json_field(body, "image");
    json_t *snap = osb_json_field(body, "snapshotId");
    const char *uri = NULL;
    if (img) {
        if (!json_is_object(img))
            return osb_apierr(e, BAD, "field 'image' must be an object {\"uri\": ...}");
        json_t *u = osb_json_field(img, "uri");
        if (u && !json_is_string(u))
            return osb_apierr(e, BAD, "field 'image.uri' must be a string");
        uri = u ? json_string_value(u) : NULL;
        if (u && osb_ctl_find(uri, json_string_length(u)) >= 0)
            return osb_apierr(e, BAD, "field 'image.uri' contains a control byte");
    }
    bool has_uri = uri && strspn(uri, " \t") != strlen(uri);
    if (snap && !json_is_string(snap))
        return osb_apierr(e, BAD, "field 'snapshotId' must be a string");
    if (snap && osb_ctl_find(json_string_value(snap), json_string_length(snap)) >= 0)
        return osb_apierr(e, BAD, "field 'snapshotId' contains a control byte");
    if (snap && has_uri)
        return osb_apierr(e, BAD, "fields 'image' and 'snapshotId' are mutually exclusive");
    if (snap) {
        const char *id = json_string_value(snap);
        if (!*id || strlen(id) > 64 || strspn(id, "0123456789abcdefABCDEF-") != strlen(id))
            return osb_apierr(e, "SNAPSHOT::NOT_FOUND", "snapshot '%.80s' not found", id);
        out->snapshot_id = osb_xstrdup(id);
        return 0;
    }
    if (!has_uri && pool_claim(body))
        return 0; /* a claim runs the pool's image (server/pool_claim.c) */
    if (!has_uri)
        return osb_apierr(e, BAD, "field 'image.uri' is required");
    if (strlen(uri) > 512)
        return osb_apierr(e, BAD, "field 'image.uri' is longer than 512 characters");
    out->image = osb_xstrdup(uri);
    return parse_auth(img, out, e);
}

static int parse_entrypoint(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    static const char *code = "SANDBOX::INVALID_ENTRYPOINT";
    json_t *ep = osb_json_field(body, "entrypoint");
    if (!ep && (out->snapshot_id || pool_claim(body))) {
        /* protocol.md 1.4: a restore defaults to the SDKs' keep-alive; so
         * does a claim, which then runs its pool's own command. */
        static const char *const keep[] = {"tail", "-f", "/dev/null"};
        out->sb.entrypoint = strv_new(3);
        for (size_t i = 0; i < 3; i++)
            out->sb.entrypoint[i] = osb_xstrdup(keep[i]);
        return 0;
    }
    if (!ep)
        return osb_apierr(e, code, "field 'entrypoint' is required");
    if (!json_is_array(ep) || json_array_size(ep) == 0)
        return osb_apierr(e, code, "field 'entrypoint' must be a non-empty array of strings");
    if (json_array_size(ep) > MAX_ARGS)
        return osb_apierr(e, code, "field 'entrypoint' has more than %d elements", MAX_ARGS);
    size_t i;
    json_t *v;
    json_array_foreach(ep, i, v)
    {
        if (!json_is_string(v))
            return osb_apierr(e, code, "field 'entrypoint[%zu]' must be a string", i);
    }
    if (json_string_length(json_array_get(ep, 0)) == 0)
        return osb_apierr(e, code, "field 'entrypoint[0]' (the program) must not be empty");
    out->sb.entrypoint = strv_new(json_array_size(ep));
    json_array_foreach(ep, i, v) out->sb.entrypoint[i] = osb_xstrdup(json_string_value(v));
    return 0;
}

static int limit_value(const char *key, json_t *v, const char **s, struct osb_apierr *e)
{
    if (!json_is_string(v))
        return osb_apierr(e, BAD, "field 'resourceLimits.%s' must be a string", key);
    *s = json_string_value(v);
    return 0;
}

static int parse_limit_cpu(const char *s, struct osb_create_spec *out, struct osb_apierr *e)
{
    if (osb_quantity_millicpu(s, &out->sb.cpu_millicores) < 0 || out->sb.cpu_millicores <= 0)
        return osb_apierr(e, BAD,
                          "field 'resourceLimits.cpu': '%s' is not a CPU quantity (e.g. "
                          "\"500m\", \"1\", \"2.5\")",
                          s);
    if (out->sb.cpu_millicores > OSB_LIMIT_MAX_CPU_MILLIS)
        return osb_apierr(e, BAD, "field 'resourceLimits.cpu': '%s' is too large", s);
    return 0;
}

static int parse_limit_bytes(const char *key, const char *s, int64_t *dst, struct osb_apierr *e)
{
    if (osb_quantity_bytes(s, dst) < 0)
        return osb_apierr(e, BAD,
                          "field 'resourceLimits.%s': '%s' is not a byte quantity (e.g. "
                          "\"512Mi\", \"2Gi\", \"1G\", \"1048576\")",
                          key, s);
    if (*dst < OSB_LIMIT_MIN_MEMORY)
        return osb_apierr(e, BAD, "field 'resourceLimits.%s': '%s' is below the minimum of 4Mi",
                          key, s);
    return 0;
}

static int parse_limit_pids(const char *s, struct osb_create_spec *out, struct osb_apierr *e)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < OSB_LIMIT_MIN_PIDS || v > OSB_LIMIT_MAX_PIDS)
        return osb_apierr(e, BAD, "field 'resourceLimits.pids': '%s' must be an integer in %d..%d",
                          s, OSB_LIMIT_MIN_PIDS, OSB_LIMIT_MAX_PIDS);
    out->sb.pids_max = v;
    return 0;
}

static int parse_limit(const char *key, const char *s, struct osb_create_spec *out,
                       struct osb_apierr *e)
{
    if (strcmp(key, "cpu") == 0)
        return parse_limit_cpu(s, out, e);
    if (strcmp(key, "memory") == 0)
        return parse_limit_bytes(key, s, &out->sb.memory_bytes, e);
    if (strcmp(key, "ephemeral-storage") == 0 || strcmp(key, "disk") == 0)
        return parse_limit_bytes(key, s, &out->sb.disk_bytes, e);
    if (strcmp(key, "pids") == 0)
        return parse_limit_pids(s, out, e);
    if (strcmp(key, "gpu") == 0 || strcmp(key, "nvidia.com/gpu") == 0) {
        if (strcmp(s, "0") == 0)
            return 0;
        return osb_apierr(e, BAD,
                          "field 'resourceLimits.%s': GPUs are not available on the native "
                          "runtime",
                          key);
    }
    return 0; /* other keys (k8s extended resources) are ignored, as upstream does */
}

static int parse_limits(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *rl = osb_json_field(body, "resourceLimits");
    if (!rl)
        return 0;
    if (!json_is_object(rl))
        return osb_apierr(e, BAD, "field 'resourceLimits' must be an object of strings");
    const char *k;
    json_t *v;
    json_object_foreach(rl, k, v)
    {
        const char *s = NULL;
        if (limit_value(k, v, &s, e) < 0 || parse_limit(k, s, out, e) < 0)
            return -1;
    }
    out->resource_limits = json_deep_copy(rl);
    return 0;
}

static int parse_timeout(json_t *body, const struct osb_spec_limits *lim,
                         struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *t = osb_json_field(body, "timeout");
    if (!t)
        return 0; /* omitted or null: manual cleanup */
    if (!json_is_integer(t))
        return osb_apierr(e, BAD, "field 'timeout' must be an integer number of seconds or null");
    json_int_t v = json_integer_value(t);
    if (v < lim->min_timeout_s)
        return osb_apierr(e, BAD, "field 'timeout' must be at least %lld seconds (got %lld)",
                          (long long)lim->min_timeout_s, (long long)v);
    if (lim->max_timeout_s > 0 && v > lim->max_timeout_s)
        return osb_apierr(e, BAD,
                          "field 'timeout' must be at most %lld seconds "
                          "(server.max_sandbox_timeout_seconds; got %lld)",
                          (long long)lim->max_timeout_s, (long long)v);
    /* A century: keeps expiresAt arithmetic far from overflow. */
    if (v > 100LL * 365 * 86400)
        return osb_apierr(e, BAD, "field 'timeout' is too large (got %lld)", (long long)v);
    out->timeout_s = v;
    return 0;
}

static int env_key_ok(const char *k)
{
    return *k && !strchr(k, '=');
}

static int parse_env(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *env = osb_json_field(body, "env");
    if (!env)
        return 0;
    if (!json_is_object(env))
        return osb_apierr(e, BAD, "field 'env' must be an object of strings");
    if (json_object_size(env) > MAX_ENV)
        return osb_apierr(e, BAD, "field 'env' has more than %d entries", MAX_ENV);
    out->sb.env = strv_new(json_object_size(env));
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v)
    {
        if (json_is_null(v))
            continue; /* null values are skipped (protocol.md 1.4) */
        if (!json_is_string(v))
            return osb_apierr(e, BAD, "field 'env.%s' must be a string or null", k);
        if (!env_key_ok(k))
            return osb_apierr(e, BAD, "field 'env': invalid variable name '%s'", k);
        out->sb.env[n++] = osb_xasprintf("%s=%s", k, json_string_value(v));
    }
    return 0;
}

static int parse_metadata(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    static const char *code = "SANDBOX::INVALID_METADATA_LABEL";
    json_t *md = osb_json_field(body, "metadata");
    out->metadata = json_object();
    if (!md)
        return 0;
    if (!json_is_object(md))
        return osb_apierr(e, code, "field 'metadata' must be an object of strings");
    const char *k;
    json_t *v;
    json_object_foreach(md, k, v)
    {
        if (!json_is_string(v))
            return osb_apierr(e, code, "field 'metadata.%s' must be a string", k);
        if (osb_label_reserved(k))
            return osb_apierr(e, code,
                              "metadata key '%s' uses the reserved prefix 'opensandbox.io/'", k);
        char msg[400];
        if (osb_label_check(k, json_string_value(v), msg, sizeof msg) < 0)
            return osb_apierr(e, code, "%s", msg);
        json_object_set(out->metadata, k, v);
    }
    return 0;
}

static int platform_field(json_t *p, const char *key, const char *const *allowed, char *buf,
                          size_t n, struct osb_apierr *e)
{
    json_t *v = osb_json_field(p, key);
    if (!v)
        return osb_apierr(e, BAD, "field 'platform.%s' is required", key);
    if (!json_is_string(v) || json_string_length(v) >= n)
        return osb_apierr(e, BAD, "field 'platform.%s' must be one of %s, %s", key, allowed[0],
                          allowed[1]);
    const char *s = json_string_value(v);
    size_t i = 0;
    for (; s[i]; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[i] = '\0';
    if (strcmp(buf, allowed[0]) != 0 && strcmp(buf, allowed[1]) != 0)
        return osb_apierr(e, BAD, "field 'platform.%s' must be one of %s, %s (got '%s')", key,
                          allowed[0], allowed[1], s);
    return 0;
}

static const char *host_arch(void)
{
#if defined(__aarch64__)
    return "arm64";
#else
    return "amd64";
#endif
}

static int parse_platform(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    static const char *const oses[] = {"linux", "windows"}, *const arches[] = {"amd64", "arm64"};
    json_t *p = osb_json_field(body, "platform");
    if (!p)
        return 0;
    if (!json_is_object(p))
        return osb_apierr(e, BAD, "field 'platform' must be an object {os, arch}");
    char os[16], arch[16];
    if (platform_field(p, "os", oses, os, sizeof os, e) < 0 ||
        platform_field(p, "arch", arches, arch, sizeof arch, e) < 0)
        return -1;
    if (strcmp(os, "linux") != 0)
        return osb_apierr(e, BAD, "field 'platform.os': only linux sandboxes are supported");
    if (strcmp(arch, host_arch()) != 0)
        return osb_apierr(e, BAD, "field 'platform.arch': this server runs %s sandboxes only",
                          host_arch());
    out->platform = json_pack("{s:s,s:s}", "os", os, "arch", arch);
    return 0;
}

/* ------------------------------------------------------------- volumes */

/* Far beyond any real request; each one is a mount in the sandbox. */
#define MAX_VOLUMES 64
#define VBAD(...) osb_apierr(e, BAD, __VA_ARGS__)

/* Paths the runtime itself mounts or needs: a volume on, under or above
 * one of them would hide or replace it (execd's binary and socket, the
 * kernel filesystems). */
static const char *const reserved_paths[] = {"/proc", "/sys", "/dev", "/run/opensandbox",
                                             "/opt/opensandbox"};

/* Whether a is b or lies under it (both normalized, absolute). */
static bool path_within(const char *a, const char *b)
{
    size_t n = strlen(b);
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* Lexical normalization: "//" and "." components dropped, no trailing
 * slash; ".." is refused rather than resolved (a path that needs it is a
 * mistake or an attack). abs: the result starts with "/" ("/" itself
 * allowed). Returns NULL with *why set. Caller frees. */
static char *norm_path(const char *in, bool abs, const char **why)
{
    size_t n = strlen(in);
    char *out = osb_xmalloc(n + 2), *o = out;
    if (abs)
        *o++ = '/';
    for (const char *c = in; *c;) {
        while (*c == '/')
            c++;
        size_t len = strcspn(c, "/");
        if (len == 2 && c[0] == '.' && c[1] == '.') {
            free(out);
            *why = "must not contain '..'";
            return NULL;
        }
        if (len && !(len == 1 && c[0] == '.')) {
            if (o > out && o[-1] != '/')
                *o++ = '/';
            memcpy(o, c, len);
            o += len;
        }
        c += len;
    }
    *o = '\0';
    return out;
}

static bool vol_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool edge = i == 0 || i == n - 1;
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
              (s[i] == '-' && !edge)))
            return false;
    }
    return true;
}

/* ^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$ */
static bool storage_ok(const char *s)
{
    size_t d = strspn(s, "0123456789");
    if (d == 0)
        return false;
    s += d;
    if (*s == '.') {
        d = strspn(s + 1, "0123456789");
        if (d == 0)
            return false;
        s += 1 + d;
    }
    if (!*s)
        return true;
    return strlen(s) == 2 && strchr("KMGTPE", s[0]) && s[1] == 'i';
}

/* A string field: required or optional (NULL when absent/null); a string
 * holding NUL is refused (C sees only its head). */
static int vol_str(json_t *o, const char *key, size_t i, const char *where, bool required,
                   const char **out, struct osb_apierr *e)
{
    json_t *v = osb_json_field(o, key);
    *out = NULL;
    if (!v && required)
        return VBAD("field 'volumes[%zu].%s%s' is required", i, where, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return VBAD("field 'volumes[%zu].%s%s' must be a string", i, where, key);
    if (osb_ctl_find(json_string_value(v), json_string_length(v)) >= 0)
        return VBAD("field 'volumes[%zu].%s%s' contains a control byte", i, where, key);
    *out = json_string_value(v);
    if (required && !**out)
        return VBAD("field 'volumes[%zu].%s%s' must not be empty", i, where, key);
    return 0;
}

static int vol_bool(json_t *o, const char *key, size_t i, const char *where, bool def, bool *out,
                    struct osb_apierr *e)
{
    json_t *v = osb_json_field(o, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return VBAD("field 'volumes[%zu].%s%s' must be a boolean", i, where, key);
    *out = json_is_true(v);
    return 0;
}

static int vol_strings(json_t *o, const char *key, size_t i, const char *where, json_t **out,
                       struct osb_apierr *e)
{
    json_t *a = osb_json_field(o, key);
    *out = NULL;
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > 64)
        return VBAD("field 'volumes[%zu].%s%s' must be an array of strings", i, where, key);
    size_t k;
    json_t *v;
    json_array_foreach(a, k, v)
    {
        if (!json_is_string(v))
            return VBAD("field 'volumes[%zu].%s%s[%zu]' must be a string", i, where, key, k);
    }
    *out = json_deep_copy(a);
    return 0;
}

static int parse_mount_path(json_t *o, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    const char *mp, *why = NULL;
    if (vol_str(o, "mountPath", i, "", true, &mp, e) < 0)
        return -1;
    if (mp[0] != '/')
        return VBAD("field 'volumes[%zu].mountPath' must be an absolute path (got '%s')", i, mp);
    if (!(v->mount_path = norm_path(mp, true, &why)))
        return VBAD("field 'volumes[%zu].mountPath' %s (got '%s')", i, why, mp);
    if (strcmp(v->mount_path, "/") == 0)
        return VBAD("field 'volumes[%zu].mountPath' must not be '/'", i);
    for (size_t k = 0; k < OSB_ARRAY_LEN(reserved_paths); k++)
        if (path_within(v->mount_path, reserved_paths[k]) ||
            path_within(reserved_paths[k], v->mount_path))
            return VBAD("field 'volumes[%zu].mountPath': '%s' is reserved by the runtime (no "
                        "volume on, under or above %s)",
                        i, v->mount_path, reserved_paths[k]);
    return 0;
}

static int parse_sub_path(json_t *o, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    const char *sp, *why = NULL;
    if (vol_str(o, "subPath", i, "", false, &sp, e) < 0)
        return -1;
    if (!sp)
        return 0;
    if (sp[0] == '/')
        return VBAD("field 'volumes[%zu].subPath' must be a relative path (got '%s')", i, sp);
    if (!(v->sub_path = norm_path(sp, false, &why)))
        return VBAD("field 'volumes[%zu].subPath' %s (got '%s')", i, why, sp);
    if (!*v->sub_path) {
        free(v->sub_path);
        v->sub_path = NULL; /* "" or ".": the volume's root */
    }
    return 0;
}

static int parse_host(json_t *h, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    const char *p, *why = NULL;
    if (!json_is_object(h))
        return VBAD("field 'volumes[%zu].host' must be an object {\"path\": ...}", i);
    if (vol_str(h, "path", i, "host.", true, &p, e) < 0)
        return -1;
    if (p[0] != '/')
        return VBAD("field 'volumes[%zu].host.path' must be an absolute Linux path (got '%s')", i,
                    p);
    if (!(v->host_path = norm_path(p, true, &why)))
        return VBAD("field 'volumes[%zu].host.path' %s (got '%s')", i, why, p);
    v->backend = OSB_VOL_HOST;
    return 0;
}

/* A claim's storage in bytes: whole, and room for ext4's own metadata.
 * The server's maximum and free space are checked when a claim is made
 * (server/volumes.c): an existing claim keeps its size. */
static int pvc_size(const char *st, size_t i, int64_t *out, struct osb_apierr *e)
{
    if (osb_quantity_bytes(st, out) < 0)
        return osb_apierr(e, "VOLUME::INVALID_SIZE",
                          "field 'volumes[%zu].pvc.storage': '%s' is too large", i, st);
    if (*out < OSB_CLAIM_MIN_BYTES)
        return osb_apierr(e, "VOLUME::INVALID_SIZE",
                          "field 'volumes[%zu].pvc.storage': '%s' is below the smallest "
                          "claim, %lld bytes (8Mi)",
                          i, st, (long long)OSB_CLAIM_MIN_BYTES);
    return 0;
}

static int parse_pvc(json_t *c, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    const char *claim, *sc, *st;
    if (!json_is_object(c))
        return VBAD("field 'volumes[%zu].pvc' must be an object {\"claimName\": ...}", i);
    v->backend = OSB_VOL_PVC;
    if (vol_str(c, "claimName", i, "pvc.", true, &claim, e) < 0)
        return -1;
    if (!dns_subdomain(claim, strlen(claim)))
        return VBAD("field 'volumes[%zu].pvc.claimName': '%s' must be a DNS name (lower-case "
                    "alphanumerics, '-' and '.', at most 253 characters)",
                    i, claim);
    if (vol_bool(c, "createIfNotExists", i, "pvc.", true, &v->pvc.create, e) < 0 ||
        vol_bool(c, "deleteOnSandboxTermination", i, "pvc.", false, &v->pvc.delete_on_term, e) <
            0 ||
        vol_str(c, "storageClass", i, "pvc.", false, &sc, e) < 0 ||
        vol_str(c, "storage", i, "pvc.", false, &st, e) < 0 ||
        vol_strings(c, "accessModes", i, "pvc.", &v->pvc.access_modes, e) < 0)
        return -1;
    if (st && !storage_ok(st))
        return VBAD("field 'volumes[%zu].pvc.storage': '%s' is not a size such as \"1Gi\" or "
                    "\"500Mi\"",
                    i, st);
    if (st && pvc_size(st, i, &v->pvc.storage_bytes, e) < 0)
        return -1;
    v->pvc.claim = osb_xstrdup(claim);
    v->pvc.storage_class = sc ? osb_xstrdup(sc) : NULL;
    v->pvc.storage = st ? osb_xstrdup(st) : NULL;
    return 0;
}

/* Checked in full so a client learns of a malformed entry first, then
 * refused: mounting a bucket needs ossfs (FUSE) and credentials on the host. */
static int parse_ossfs(json_t *o, size_t i, struct osb_apierr *e)
{
    const char *bucket, *s;
    json_t *opts = NULL;
    if (!json_is_object(o))
        return VBAD("field 'volumes[%zu].ossfs' must be an object", i);
    if (vol_str(o, "bucket", i, "ossfs.", true, &bucket, e) < 0 ||
        vol_str(o, "endpoint", i, "ossfs.", true, &s, e) < 0 ||
        vol_str(o, "accessKeyId", i, "ossfs.", true, &s, e) < 0 ||
        vol_str(o, "accessKeySecret", i, "ossfs.", true, &s, e) < 0 ||
        vol_str(o, "version", i, "ossfs.", false, &s, e) < 0)
        return -1;
    if (strlen(bucket) < 3 || strlen(bucket) > 63)
        return VBAD("field 'volumes[%zu].ossfs.bucket' must be 3-63 characters", i);
    if (s && strcmp(s, "1.0") != 0 && strcmp(s, "2.0") != 0)
        return VBAD("field 'volumes[%zu].ossfs.version' must be \"1.0\" or \"2.0\"", i);
    if (vol_strings(o, "options", i, "ossfs.", &opts, e) < 0)
        return -1;
    json_decref(opts);
    return osb_apierr(e, "VOLUME::UNSUPPORTED_BACKEND",
                      "field 'volumes[%zu].ossfs': ossfs volumes are not supported by this "
                      "runtime (use a host or pvc volume)",
                      i);
}

static int parse_backend(json_t *o, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    json_t *h = osb_json_field(o, "host"), *c = osb_json_field(o, "pvc"),
           *x = osb_json_field(o, "ossfs");
    int n = !!h + !!c + !!x;
    if (n != 1)
        return VBAD("field 'volumes[%zu]' must have exactly one backend of 'host', 'pvc' or "
                    "'ossfs' (got %d)",
                    i, n);
    if (x)
        return parse_ossfs(x, i, e);
    return h ? parse_host(h, i, v, e) : parse_pvc(c, i, v, e);
}

static int parse_volume(json_t *o, size_t i, struct osb_volume *v, struct osb_apierr *e)
{
    const char *name;
    if (!json_is_object(o))
        return VBAD("field 'volumes[%zu]' must be an object", i);
    if (vol_str(o, "name", i, "", true, &name, e) < 0)
        return -1;
    if (!vol_name_ok(name))
        return VBAD("field 'volumes[%zu].name': '%s' must be 1-63 lower-case alphanumerics or "
                    "'-', starting and ending with an alphanumeric",
                    i, name);
    v->name = osb_xstrdup(name);
    if (parse_mount_path(o, i, v, e) < 0 ||
        vol_bool(o, "readOnly", i, "", false, &v->read_only, e) < 0 ||
        parse_sub_path(o, i, v, e) < 0)
        return -1;
    return parse_backend(o, i, v, e);
}

static int volumes_unique(const struct osb_create_spec *out, struct osb_apierr *e)
{
    for (size_t i = 0; i < out->n_volumes; i++)
        for (size_t k = 0; k < i; k++) {
            if (strcmp(out->volumes[i].name, out->volumes[k].name) == 0)
                return VBAD("field 'volumes[%zu].name': '%s' is already used by volumes[%zu]", i,
                            out->volumes[i].name, k);
            if (strcmp(out->volumes[i].mount_path, out->volumes[k].mount_path) == 0)
                return VBAD("field 'volumes[%zu].mountPath': '%s' is already used by "
                            "volumes[%zu]",
                            i, out->volumes[i].mount_path, k);
        }
    return 0;
}

static int parse_volumes(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *a = osb_json_field(body, "volumes");
    if (!a)
        return 0;
    if (!json_is_array(a))
        return VBAD("field 'volumes' must be an array");
    if (json_array_size(a) > MAX_VOLUMES)
        return VBAD("field 'volumes' has more than %d entries", MAX_VOLUMES);
    out->volumes = osb_xcalloc(json_array_size(a) + 1, sizeof *out->volumes);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        out->n_volumes++;
        if (parse_volume(v, i, &out->volumes[i], e) < 0)
            return -1;
    }
    return volumes_unique(out, e);
}

static void volume_free(struct osb_volume *v)
{
    free(v->name);
    free(v->mount_path);
    free(v->sub_path);
    free(v->host_path);
    free(v->pvc.claim);
    free(v->pvc.storage_class);
    free(v->pvc.storage);
    json_decref(v->pvc.access_modes);
    free(v->src_root);
    free(v->src_rel);
}

static json_t *volume_record(const struct osb_volume *v)
{
    json_t *r = json_pack("{s:s,s:s,s:b}", "name", v->name, "mountPath", v->mount_path, "readOnly",
                          v->read_only);
    if (v->sub_path)
        json_object_set_new(r, "subPath", json_string(v->sub_path));
    if (v->backend == OSB_VOL_HOST) {
        json_object_set_new(r, "host", json_pack("{s:s}", "path", v->host_path));
        return r;
    }
    json_t *c = json_pack("{s:s,s:b,s:b}", "claimName", v->pvc.claim, "createIfNotExists",
                          v->pvc.create, "deleteOnSandboxTermination", v->pvc.delete_on_term);
    if (v->pvc.storage_class)
        json_object_set_new(c, "storageClass", json_string(v->pvc.storage_class));
    if (v->pvc.storage)
        json_object_set_new(c, "storage", json_string(v->pvc.storage));
    if (v->pvc.access_modes)
        json_object_set(c, "accessModes", v->pvc.access_modes);
    if (v->pvc.created)
        json_object_set_new(c, "autoCreated", json_true());
    json_object_set_new(r, "pvc", c);
    return r;
}

/* Features whose issues have not landed: a clear refusal, never silence. */
/* networkPolicy (protocol.md 4): parsed here, once, into the typed policy
 * the server enforces (src/server/network.c). */
static int parse_network_policy(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *v = osb_json_field(body, "networkPolicy");
    if (!v)
        return 0;
    if (!json_is_object(v))
        return osb_apierr(e, BAD, "field 'networkPolicy' must be an object");
    struct osb_policy p;
    struct osb_err err = {0};
    if (osb_policy_parse(v, &p, &err) < 0)
        return osb_apierr(e, BAD, "field 'networkPolicy': %s", err.msg);
    out->network_policy = osb_xmalloc(sizeof *out->network_policy);
    *out->network_policy = p;
    return 0;
}

static int parse_unsupported(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *v;
    if ((v = osb_json_field(body, "networkPolicy")) && !json_is_object(v))
        return osb_apierr(e, BAD, "field 'networkPolicy' must be an object");
    if ((v = osb_json_field(body, "credentialProxy"))) {
        if (!json_is_object(v))
            return osb_apierr(e, BAD, "field 'credentialProxy' must be an object");
        json_t *en = osb_json_field(v, "enabled");
        if (en && !json_is_boolean(en))
            return osb_apierr(e, BAD, "field 'credentialProxy.enabled' must be a boolean");
        json_t *np = osb_json_field(body, "networkPolicy");
        if (json_is_true(en) && (!np || json_is_null(np)))
            return osb_apierr(e, BAD,
                              "field 'credentialProxy': the credential proxy needs a "
                              "networkPolicy (its bindings' hosts must be allowed by it)");
        out->credential_proxy = json_is_true(en);
    }
    if ((v = osb_json_field(body, "secureAccess"))) {
        if (!json_is_boolean(v))
            return osb_apierr(e, BAD, "field 'secureAccess' must be a boolean");
        if (json_is_true(v))
            return osb_apierr(e, BAD,
                              "field 'secureAccess': secure access is only available with the "
                              "Kubernetes gateway; this server protects execd with a per-sandbox "
                              "token instead");
    }
    return 0;
}

static int parse_extensions(json_t *body, struct osb_create_spec *out, struct osb_apierr *e)
{
    json_t *x = osb_json_field(body, "extensions");
    if (!x)
        return 0;
    if (!json_is_object(x))
        return osb_apierr(e, BAD, "field 'extensions' must be an object of strings");
    const char *k;
    json_t *v;
    json_object_foreach(x, k, v)
    {
        if (!json_is_string(v))
            return osb_apierr(e, BAD, "field 'extensions.%s' must be a string", k);
    }
    json_t *pool = osb_json_field(x, "poolRef");
    if (pool) {
        /* whether the pool exists is the claim's question (server/pools.c) */
        const char *n = json_string_value(pool);
        if (!*n || strlen(n) > 63 ||
            strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(n))
            return osb_apierr(e, BAD,
                              "field 'extensions.poolRef' must be a pool name (lower-case "
                              "letters, digits and '-', at most 63 characters)");
        out->pool_ref = osb_xstrdup(n);
    }
    json_t *rt = osb_json_field(x, "runtime");
    if (rt) {
        /* which backend may run it is the server's call (backends.c); here
         * only the shape: a backend name is short and plain */
        const char *n = json_string_value(rt);
        if (!*n || strlen(n) > 31 ||
            strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(n))
            return osb_apierr(e, "SANDBOX::RUNTIME_NOT_ALLOWED",
                              "field 'extensions.runtime' must be a runtime name such as "
                              "\"native\" or \"gvisor\"");
        out->runtime_req = osb_xstrdup(n);
    }
    json_t *ext = osb_json_field(x, "access.renew.extend.seconds");
    if (ext) {
        char *end;
        long long s = strtoll(json_string_value(ext), &end, 10);
        if (*end || end == json_string_value(ext) || s < 300 || s > 86400)
            return osb_apierr(e, BAD,
                              "field 'extensions.access.renew.extend.seconds' must be an "
                              "integer in 300..86400");
    }
    return 0;
}

int osb_spec_parse_create(json_t *body, const struct osb_spec_limits *lim,
                          struct osb_create_spec *out, struct osb_apierr *e)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return osb_apierr(e, BAD, "request body must be a JSON object");
    if (parse_image(body, out, e) < 0 || parse_entrypoint(body, out, e) < 0 ||
        parse_limits(body, out, e) < 0 || parse_timeout(body, lim, out, e) < 0 ||
        parse_env(body, out, e) < 0 || parse_metadata(body, out, e) < 0 ||
        parse_platform(body, out, e) < 0 || parse_volumes(body, out, e) < 0 ||
        parse_unsupported(body, out, e) < 0 || parse_network_policy(body, out, e) < 0 ||
        parse_extensions(body, out, e) < 0) {
        osb_spec_free(out);
        return -1;
    }
    return 0;
}

void osb_spec_free(struct osb_create_spec *s)
{
    free(s->image);
    free(s->snapshot_id);
    free(s->runtime_req);
    free(s->pool_ref);
    free(s->pool_member);
    free(s->auth_user);
    if (s->auth_pass)
        explicit_bzero(s->auth_pass, strlen(s->auth_pass));
    free(s->auth_pass);
    free(s->sb.workdir);
    free(s->sb.user);
    if (s->network_policy)
        osb_policy_free(s->network_policy);
    free(s->network_policy);
    strv_free(s->sb.entrypoint);
    strv_free(s->sb.env);
    free(s->sb.volumes); /* the mount list; its strings are the volumes' (below) */
    json_decref(s->metadata);
    json_decref(s->platform);
    json_decref(s->resource_limits);
    for (size_t i = 0; i < s->n_volumes; i++)
        volume_free(&s->volumes[i]);
    free(s->volumes);
    memset(s, 0, sizeof *s);
}

json_t *osb_spec_record(const struct osb_create_spec *s)
{
    json_t *ep = json_array();
    for (size_t i = 0; s->sb.entrypoint[i]; i++)
        json_array_append_new(ep, json_string(s->sb.entrypoint[i]));
    json_t *r = json_pack("{s:o}", "entrypoint", ep);
    if (s->snapshot_id)
        json_object_set_new(r, "snapshotId", json_string(s->snapshot_id));
    else
        json_object_set_new(r, "image", json_pack("{s:s}", "uri", s->image));
    if (s->platform)
        json_object_set(r, "platform", s->platform);
    if (s->resource_limits)
        json_object_set(r, "resourceLimits", s->resource_limits);
    if (s->timeout_s)
        json_object_set_new(r, "timeout", json_integer(s->timeout_s));
    if (s->n_volumes) {
        json_t *vols = json_array();
        for (size_t i = 0; i < s->n_volumes; i++)
            json_array_append_new(vols, volume_record(&s->volumes[i]));
        json_object_set_new(r, "volumes", vols);
    }
    if (s->credential_proxy)
        json_object_set_new(r, "credentialProxy", json_pack("{s:b}", "enabled", 1));
    if (s->pool_member) /* server/pools.c: never shown (the API picks its fields) */
        json_object_set_new(r, "poolMember",
                            json_pack("{s:s,s:I,s:b}", "name", s->pool_member, "revision",
                                      (json_int_t)s->pool_rev, "keepRunning",
                                      s->pool_keep_running));
    return r;
}
