/* libopensandbox: the C client of an OpenSandbox server (ours or upstream's).
 *
 * One handle (osbc_client) per connection configuration; it holds its own
 * keep-alive connection and a cache of resolved execd endpoints, so use one
 * handle per thread. No global state, no abort, no printing: every call
 * returns 0 on success or a negative OSBC_E_* code and fills the caller's
 * struct osbc_error (which may be NULL) with the code, the HTTP status, the
 * server's own error "code" and a message naming what failed.
 *
 * Results: calls that read a document return the server's JSON text in a
 * malloc'd string the caller frees with osbc_free; the values callers chain
 * (a new sandbox's id, a command's exit code, a session id) come back typed
 * as well. Strings in are UTF-8 and NUL-terminated; NULL means "not given".
 *
 * The wire contract is docs/protocol.md; docs/clients.md shows the calls in
 * use and examples/osb_example.c is a whole program. */
#ifndef OPENSANDBOX_H
#define OPENSANDBOX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define OSBC_API __attribute__((visibility("default")))
#else
#define OSBC_API
#endif

#define OSBC_VERSION_MAJOR 0
#define OSBC_VERSION_MINOR 1

/* ------------------------------------------------------------ errors */

enum osbc_code {
    OSBC_OK = 0,
    OSBC_E_ARG = -1,      /* a bad argument from the caller; nothing was sent */
    OSBC_E_NOMEM = -2,    /* out of memory */
    OSBC_E_CONNECT = -3,  /* cannot resolve or connect to the server */
    OSBC_E_TIMEOUT = -4,  /* the request timeout passed */
    OSBC_E_TLS = -5,      /* TLS handshake or certificate failure */
    OSBC_E_PROTOCOL = -6, /* the peer broke HTTP, JSON, SSE or WebSocket framing */
    OSBC_E_HTTP = -7, /* the server answered with an error status (see http_status, server_code) */
    OSBC_E_IO = -8,   /* a local file or descriptor failed (see sys_errno) */
    OSBC_E_CANCELLED = -9, /* a callback asked to stop */
    OSBC_E_REMOTE = -10,   /* the remote command or code failed (see osbc_exec_result) */
};

struct osbc_error {
    int code;             /* enum osbc_code */
    int http_status;      /* the response status, or 0 when there was none */
    int sys_errno;        /* errno for OSBC_E_IO / OSBC_E_CONNECT, else 0 */
    char server_code[96]; /* the server's {"code"}, e.g. "DOCKER::SANDBOX_NOT_FOUND", or "" */
    char message[512];    /* what failed and why, one line */
};

/* A static string naming the code: "connection failed", ... */
OSBC_API const char *osbc_strerror(int code);
/* Frees a string or buffer returned by this library. */
OSBC_API void osbc_free(void *p);

/* ------------------------------------------------------------ connection */

struct osbc_config {
    const char *domain;      /* "host:port"; default "localhost:8080" */
    const char *protocol;    /* "http" (default) or "https" */
    const char *api_key;     /* sent as OPEN-SANDBOX-API-KEY when set */
    long request_timeout_ms; /* per request; 0 means 30000; streams: per read */
    int use_server_proxy;    /* reach execd through the server's proxy (asked of the server) */
    const char *ca_file;     /* https: a PEM bundle to trust instead of the system's */
    int tls_insecure;        /* https: skip certificate verification (tests only) */
    const char *user_agent;  /* default "libopensandbox/0.1" */
};

/* Fills cfg with the defaults, then the environment of the official SDKs:
 * OPEN_SANDBOX_DOMAIN, OPEN_SANDBOX_API_KEY, OPEN_SANDBOX_PROTOCOL,
 * OPEN_SANDBOX_REQUEST_TIMEOUT (seconds), OPEN_SANDBOX_USE_SERVER_PROXY.
 * The strings point into the environment; the client copies what it keeps. */
OSBC_API void osbc_config_from_env(struct osbc_config *cfg);

typedef struct osbc_client osbc_client;

/* Validates cfg (no connection is made yet) and copies it. */
OSBC_API int osbc_client_new(const struct osbc_config *cfg, osbc_client **out,
                             struct osbc_error *err);
OSBC_API void osbc_client_free(osbc_client *c);

/* A raw call to the lifecycle server: path is "/v1/..." with its query;
 * body (may be NULL) is sent as application/json. On any completed exchange
 * (even 4xx/5xx) resp is filled and 0 is returned; only transport failures
 * are errors. Free resp with osbc_response_free. */
struct osbc_response {
    int status;
    char *body; /* NUL-terminated (the body may contain NULs; see len) */
    size_t len;
    char *content_type;
};
OSBC_API int osbc_request(osbc_client *c, const char *method, const char *path, const char *body,
                          struct osbc_response *resp, struct osbc_error *err);
OSBC_API void osbc_response_free(struct osbc_response *resp);

/* ------------------------------------------------------------ common types */

struct osbc_kv {
    const char *key;
    const char *value;
};

/* ------------------------------------------------------------ sandboxes */

#define OSBC_TIMEOUT_DEFAULT 0 /* the server default (the SDKs send 600 s) */
#define OSBC_TIMEOUT_NONE (-1) /* no expiry: manual cleanup */

struct osbc_create_opts {
    const char *image;          /* image URI; or snapshot_id */
    const char *image_username; /* registry credentials for this pull */
    const char *image_password;
    const char *snapshot_id;       /* create from a snapshot */
    const char *const *entrypoint; /* NULL: ["tail","-f","/dev/null"] */
    size_t n_entrypoint;
    long timeout_s;            /* seconds, or OSBC_TIMEOUT_DEFAULT / _NONE */
    const struct osbc_kv *env; /* environment of the entrypoint and commands */
    size_t n_env;
    const struct osbc_kv *metadata; /* labels */
    size_t n_metadata;
    const struct osbc_kv *extensions; /* e.g. {"poolRef", "name"} */
    size_t n_extensions;
    const struct osbc_kv *resources; /* {"cpu","1"}, {"memory","2Gi"}; NULL: cpu 1, memory 2Gi */
    size_t n_resources;
    const char *network_policy_json; /* a NetworkPolicy object, as JSON text */
    const char *volumes_json;        /* an array of Volume objects, as JSON text */
    const char *idempotency_key;     /* sent as Idempotency-Key */
    int skip_health_check;           /* do not wait for execd to answer /ping */
    long ready_timeout_ms;           /* readiness wait; 0 means 30000 */
    int credential_proxy;            /* credentialProxy.enabled (needs a network policy):
                                        the sandbox gets a credential vault */
};

/* POST /v1/sandboxes, then (unless skip_health_check) waits for execd's
 * /ping as the SDKs do; a sandbox that never gets ready is deleted.
 * json (may be NULL): the CreateSandboxResponse; id (may be NULL): its id. */
OSBC_API int osbc_sandbox_create(osbc_client *c, const struct osbc_create_opts *o, char **json,
                                 char **id, struct osbc_error *err);

struct osbc_list_opts {
    const char *const *states; /* OR; case-insensitive */
    size_t n_states;
    const struct osbc_kv *metadata; /* AND, exact */
    size_t n_metadata;
    int page;      /* 0: server default (1) */
    int page_size; /* 0: server default (20) */
};
OSBC_API int osbc_sandbox_list(osbc_client *c, const struct osbc_list_opts *o, char **json,
                               struct osbc_error *err);
OSBC_API int osbc_sandbox_get(osbc_client *c, const char *id, char **json, struct osbc_error *err);
OSBC_API int osbc_sandbox_delete(osbc_client *c, const char *id, struct osbc_error *err);
OSBC_API int osbc_sandbox_pause(osbc_client *c, const char *id, struct osbc_error *err);
/* Resumes, then waits for /ping unless ready_timeout_ms < 0 (0 means 30 s). */
OSBC_API int osbc_sandbox_resume(osbc_client *c, const char *id, long ready_timeout_ms,
                                 struct osbc_error *err);
/* New expiry = now + seconds. json: {"expiresAt"}. */
OSBC_API int osbc_sandbox_renew(osbc_client *c, const char *id, long seconds, char **json,
                                struct osbc_error *err);
/* merge_patch_json: an object; a null value deletes the key. json: the Sandbox. */
OSBC_API int osbc_sandbox_patch_metadata(osbc_client *c, const char *id,
                                         const char *merge_patch_json, char **json,
                                         struct osbc_error *err);
/* use_server_proxy < 0: the client's setting. json: {"endpoint","headers"?}. */
OSBC_API int osbc_sandbox_endpoint(osbc_client *c, const char *id, int port, int use_server_proxy,
                                   char **json, struct osbc_error *err);
/* GET {execd}/ping once: 0 when execd answers 2xx. */
OSBC_API int osbc_sandbox_ping(osbc_client *c, const char *id, struct osbc_error *err);
/* Waits until /ping answers or timeout_ms (0 means 30 s) passes. */
OSBC_API int osbc_sandbox_wait_ready(osbc_client *c, const char *id, long timeout_ms,
                                     struct osbc_error *err);
/* execd's /metrics: {"cpu_count","cpu_used_pct","mem_total_mib","mem_used_mib","timestamp"}. */
OSBC_API int osbc_sandbox_metrics(osbc_client *c, const char *id, char **json,
                                  struct osbc_error *err);

/* Called with each JSON document of a stream (one metrics sample, one line).
 * Return non-zero to stop: the call then returns OSBC_E_CANCELLED. */
typedef int (*osbc_json_cb)(void *ud, const char *json);
OSBC_API int osbc_sandbox_metrics_watch(osbc_client *c, const char *id, osbc_json_cb cb, void *ud,
                                        struct osbc_error *err);

/* kind "logs" or "events"; scope (may be NULL: the legacy text form) as the
 * diagnostics API. Returns the body as is (JSON or text). */
OSBC_API int osbc_diagnostics(osbc_client *c, const char *id, const char *kind, const char *scope,
                              char **body, struct osbc_error *err);

/* ------------------------------------------------------------ desktop */

/* execd's computer-use API (docs/execd.md, "Computer use"). A sandbox with
 * no display fails with server_code "DESKTOP::NO_DISPLAY" (HTTP 409). */
struct osbc_region {
    int x, y, width, height; /* width or height 0: the whole screen */
};
/* The screen (or region, may be NULL) as PNG bytes, downscaled by scale in
 * (0, 1] (0: full size). Free *png with osbc_free. */
OSBC_API int osbc_desktop_screenshot(osbc_client *c, const char *id,
                                     const struct osbc_region *region, double scale, char **png,
                                     size_t *len, struct osbc_error *err);
/* body_json as execd takes it: {"action": "move"|"click"|"double_click"|"drag"|"scroll",
 * "x","y","button","toX","toY","dx","dy"}; json (may be NULL): {"x","y"} after. */
OSBC_API int osbc_desktop_mouse(osbc_client *c, const char *id, const char *body_json, char **json,
                                struct osbc_error *err);
/* {"action":"type","text"} or {"action":"press","keys":[...]}. */
OSBC_API int osbc_desktop_keyboard(osbc_client *c, const char *id, const char *body_json,
                                   char **json, struct osbc_error *err);
/* Shorthands: a click (button NULL: left; twice: a double click), typed
 * text, a key combination such as {"ctrl", "c"}. */
OSBC_API int osbc_desktop_click(osbc_client *c, const char *id, int x, int y, const char *button,
                                int twice, struct osbc_error *err);
OSBC_API int osbc_desktop_type(osbc_client *c, const char *id, const char *text,
                               struct osbc_error *err);
OSBC_API int osbc_desktop_press(osbc_client *c, const char *id, const char *const *keys, size_t n,
                                struct osbc_error *err);
/* json: {"x","y"} of the pointer. */
OSBC_API int osbc_desktop_cursor(osbc_client *c, const char *id, char **json,
                                 struct osbc_error *err);
/* json: {"items":[{"id","title","x","y","width","height","focused"}]}. */
OSBC_API int osbc_desktop_windows(osbc_client *c, const char *id, char **json,
                                  struct osbc_error *err);
/* window: the id as the list gives it (digits are sent as a number). */
OSBC_API int osbc_desktop_focus(osbc_client *c, const char *id, const char *window,
                                struct osbc_error *err);
/* Opens a URL or a file on the desktop; json: {"pid"}. */
OSBC_API int osbc_desktop_open(osbc_client *c, const char *id, const char *target, char **json,
                               struct osbc_error *err);

/* ------------------------------------------------------------ snapshots */

OSBC_API int osbc_snapshot_create(osbc_client *c, const char *sandbox_id, const char *name,
                                  char **json, char **snapshot_id, struct osbc_error *err);
/* sandbox_id (may be NULL) filters; page/page_size 0 = server default. */
OSBC_API int osbc_snapshot_list(osbc_client *c, const char *sandbox_id, int page, int page_size,
                                char **json, struct osbc_error *err);
OSBC_API int osbc_snapshot_get(osbc_client *c, const char *id, char **json, struct osbc_error *err);
OSBC_API int osbc_snapshot_delete(osbc_client *c, const char *id, struct osbc_error *err);
/* Polls until the snapshot is Ready (0) or Failed (OSBC_E_REMOTE), or timeout_ms (0: 5 min). */
OSBC_API int osbc_snapshot_wait_ready(osbc_client *c, const char *id, long timeout_ms, char **json,
                                      struct osbc_error *err);

/* ------------------------------------------------------------ pools, batch, images */

/* body_json: {name, template, capacitySpec} as docs/pools.md. */
OSBC_API int osbc_pool_create(osbc_client *c, const char *body_json, char **json,
                              struct osbc_error *err);
OSBC_API int osbc_pool_list(osbc_client *c, char **json, struct osbc_error *err);
OSBC_API int osbc_pool_get(osbc_client *c, const char *name, char **json, struct osbc_error *err);
/* body_json: {capacitySpec} (and optionally template). */
OSBC_API int osbc_pool_update(osbc_client *c, const char *name, const char *body_json, char **json,
                              struct osbc_error *err);
OSBC_API int osbc_pool_delete(osbc_client *c, const char *name, struct osbc_error *err);

/* POST /v1/sandboxes/batch: body_json as docs/server.md "Batch create". */
OSBC_API int osbc_batch_create(osbc_client *c, const char *body_json, char **json,
                               struct osbc_error *err);

/* The server's image store (docs/images.md). */
OSBC_API int osbc_image_pull(osbc_client *c, const char *ref, const char *username,
                             const char *password, char **json, struct osbc_error *err);
OSBC_API int osbc_image_list(osbc_client *c, char **json, struct osbc_error *err);
OSBC_API int osbc_image_delete(osbc_client *c, const char *name, struct osbc_error *err);

/* ------------------------------------------------------------ egress */

/* The sandbox's egress API (endpoint port 18080): GET /policy. */
OSBC_API int osbc_egress_get(osbc_client *c, const char *id, char **json, struct osbc_error *err);
/* PATCH /policy with rules_json: [{"action":"allow"|"deny","target":"..."}]. */
OSBC_API int osbc_egress_patch(osbc_client *c, const char *id, const char *rules_json, char **json,
                               struct osbc_error *err);

/* The sandbox's credential vault (docs/credential-vault.md), on the same
 * endpoint; answers are the server's sanitized JSON (never a value). what:
 * NULL (the whole state), "credentials", "bindings", "credentials/NAME" or
 * "bindings/NAME". create and patch take the request body as JSON text (it
 * holds the secrets: read it from a file, never from a command line); the
 * server accepts writes over loopback only (426 otherwise). */
OSBC_API int osbc_vault_get(osbc_client *c, const char *id, const char *what, char **json,
                            struct osbc_error *err);
OSBC_API int osbc_vault_create(osbc_client *c, const char *id, const char *body_json, char **json,
                               struct osbc_error *err);
OSBC_API int osbc_vault_patch(osbc_client *c, const char *id, const char *body_json, char **json,
                              struct osbc_error *err);
OSBC_API int osbc_vault_delete(osbc_client *c, const char *id, struct osbc_error *err);

/* ------------------------------------------------------------ commands and code */

/* Streaming callbacks of a command, session or code run; each may be NULL.
 * A stream's read timeout is the client's request timeout but at least 10 s
 * (execd sends a keep-alive ping every 3 s while a command is quiet).
 * text is one event's text (a line of output without its newline, as execd
 * sends it), not NUL-terminated beyond len. A non-zero return from any
 * callback stops the run: the client interrupts it remotely and the call
 * returns OSBC_E_CANCELLED. */
struct osbc_exec_cbs {
    int (*on_init)(void *ud, const char *execution_id);
    int (*on_stdout)(void *ud, const char *text, size_t len);
    int (*on_stderr)(void *ud, const char *text, size_t len);
    int (*on_result)(void *ud,
                     const char *results_json);        /* code: {"text": ..., "image/png": ...} */
    int (*on_event)(void *ud, const char *event_json); /* every event, raw */
    void *ud;
};

struct osbc_exec_result {
    int exit_code;          /* 0 on success; the command's exit code; -1 when unknown */
    char *execution_id;     /* from the init event */
    char *error_name;       /* error event: ename ("CommandExecError", "NameError", ...); a
                          session run's timeout: execd's code ("RUNTIME_ERROR"), exit -1 */
    char *error_value;      /* evalue, or that timeout's message */
    char *traceback;        /* traceback lines joined with '\n' */
    long execution_time_ms; /* from execution_complete, or -1 */
    int complete;           /* 1 when execution_complete arrived */
};
/* Frees the strings of r (not r itself) and zeroes it. */
OSBC_API void osbc_exec_result_clear(struct osbc_exec_result *r);

struct osbc_run_opts {
    const char *cwd;
    long timeout_ms; /* 0: none */
    int background;  /* returns after init; output is read with osbc_command_logs */
    const struct osbc_kv *env;
    size_t n_env;
    long uid; /* > 0: run as this uid; 0: the sandbox's default user */
    long gid; /* > 0 (with uid): this gid; 0: execd's choice for uid */
};

/* POST /command. A command that exits non-zero returns 0 with
 * r->exit_code set (the call worked; the command failed). result may be NULL. */
OSBC_API int osbc_command_run(osbc_client *c, const char *id, const char *command,
                              const struct osbc_run_opts *o, const struct osbc_exec_cbs *cbs,
                              struct osbc_exec_result *result, struct osbc_error *err);
OSBC_API int osbc_command_interrupt(osbc_client *c, const char *id, const char *execution_id,
                                    struct osbc_error *err);
OSBC_API int osbc_command_status(osbc_client *c, const char *id, const char *execution_id,
                                 char **json, struct osbc_error *err);
/* Background output from byte offset cursor; *next_cursor gets the offset to
 * ask next. text is NUL-terminated; *len (may be NULL) its length. */
OSBC_API int osbc_command_logs(osbc_client *c, const char *id, const char *execution_id,
                               long long cursor, char **text, size_t *len, long long *next_cursor,
                               struct osbc_error *err);

OSBC_API int osbc_session_create(osbc_client *c, const char *id, const char *cwd, char **session_id,
                                 struct osbc_error *err);
/* o: only cwd and timeout_ms apply. A callback's stop closes the stream,
 * which ends the run in our execd; no DELETE is sent (execd's interrupt of
 * a session id would close the whole session). */
OSBC_API int osbc_session_run(osbc_client *c, const char *id, const char *session_id,
                              const char *command, const struct osbc_run_opts *o,
                              const struct osbc_exec_cbs *cbs, struct osbc_exec_result *result,
                              struct osbc_error *err);
OSBC_API int osbc_session_delete(osbc_client *c, const char *id, const char *session_id,
                                 struct osbc_error *err);

/* Code contexts: language is python, bash, javascript, typescript, java, go. */
OSBC_API int osbc_code_context_create(osbc_client *c, const char *id, const char *language,
                                      const char *cwd, char **context_id, struct osbc_error *err);
/* language may be NULL (all). json: [{"id","language"}]. */
OSBC_API int osbc_code_context_list(osbc_client *c, const char *id, const char *language,
                                    char **json, struct osbc_error *err);
OSBC_API int osbc_code_context_delete(osbc_client *c, const char *id, const char *context_id,
                                      struct osbc_error *err);
/* Runs code in context_id, or (context_id NULL) in the language's default
 * context. An exception in the code returns 0 with error_name set and
 * exit_code 1. */
OSBC_API int osbc_code_run(osbc_client *c, const char *id, const char *context_id,
                           const char *language, const char *code, const struct osbc_exec_cbs *cbs,
                           struct osbc_exec_result *result, struct osbc_error *err);
OSBC_API int osbc_code_interrupt(osbc_client *c, const char *id, const char *context_id,
                                 struct osbc_error *err);

/* ------------------------------------------------------------ files */

/* mode: permission bits as a number (0644, up to 07777), or -1 to leave the
 * default (mode 0 cannot be asked for: the wire's 0 means "no chmod");
 * owner/group: names or NULL. */
struct osbc_file_attrs {
    int mode;
    const char *owner;
    const char *group;
};

/* Progress of a transfer: done bytes of total (-1 when unknown). Non-zero stops it. */
typedef int (*osbc_progress_cb)(void *ud, long long done, long long total);

/* Whole-file read into memory (for small files; see osbc_file_download). */
OSBC_API int osbc_file_read(osbc_client *c, const char *id, const char *path, char **data,
                            size_t *len, struct osbc_error *err);
/* Reads length bytes from offset (length < 0: to the end) into memory; a
 * range past the end is OSBC_E_HTTP with status 416. */
OSBC_API int osbc_file_read_range(osbc_client *c, const char *id, const char *path,
                                  long long offset, long long length, char **data, size_t *len,
                                  struct osbc_error *err);
/* Writes data (replacing the file, parents created). attrs may be NULL. */
OSBC_API int osbc_file_write(osbc_client *c, const char *id, const char *path, const void *data,
                             size_t len, const struct osbc_file_attrs *attrs,
                             struct osbc_error *err);
/* Streams the descriptor's bytes to path (a regular file's size is sent up
 * front; a pipe is sent chunked). The fd is read from its current offset. */
OSBC_API int osbc_file_upload(osbc_client *c, const char *id, const char *path, int fd,
                              const struct osbc_file_attrs *attrs, osbc_progress_cb progress,
                              void *ud, struct osbc_error *err);
/* Streams path's bytes into fd. */
OSBC_API int osbc_file_download(osbc_client *c, const char *id, const char *path, int fd,
                                osbc_progress_cb progress, void *ud, struct osbc_error *err);
/* json: {"<path>": FileInfo, ...}. */
OSBC_API int osbc_file_info(osbc_client *c, const char *id, const char *const *paths, size_t n,
                            char **json, struct osbc_error *err);
/* Removes files (a missing one is not an error). */
OSBC_API int osbc_file_remove(osbc_client *c, const char *id, const char *const *paths, size_t n,
                              struct osbc_error *err);
OSBC_API int osbc_file_move(osbc_client *c, const char *id, const char *src, const char *dest,
                            struct osbc_error *err);
OSBC_API int osbc_file_chmod(osbc_client *c, const char *id, const char *path,
                             const struct osbc_file_attrs *attrs, struct osbc_error *err);
/* Replaces every occurrence of old_text; *count (may be NULL) gets how many. */
OSBC_API int osbc_file_replace(osbc_client *c, const char *id, const char *path,
                               const char *old_text, const char *new_text, long *count,
                               struct osbc_error *err);
/* json: [FileInfo] of files under path whose base name matches the glob. */
OSBC_API int osbc_file_search(osbc_client *c, const char *id, const char *path, const char *pattern,
                              char **json, struct osbc_error *err);
/* mkdir -p each path; attrs (may be NULL) apply to the directories made. */
OSBC_API int osbc_dir_create(osbc_client *c, const char *id, const char *const *paths, size_t n,
                             const struct osbc_file_attrs *attrs, struct osbc_error *err);
/* rm -rf each path. */
OSBC_API int osbc_dir_remove(osbc_client *c, const char *id, const char *const *paths, size_t n,
                             struct osbc_error *err);
/* json: [FileInfo] to depth (1: direct children; 0 is taken as 1). */
OSBC_API int osbc_dir_list(osbc_client *c, const char *id, const char *path, int depth, char **json,
                           struct osbc_error *err);

/* ------------------------------------------------------------ interactive terminals */

typedef struct osbc_pty osbc_pty;

/* POST /pty: a session running command (NULL: an interactive bash) in cwd. */
OSBC_API int osbc_pty_create(osbc_client *c, const char *id, const char *cwd, const char *command,
                             char **session_id, struct osbc_error *err);
OSBC_API int osbc_pty_delete(osbc_client *c, const char *id, const char *session_id,
                             struct osbc_error *err);

struct osbc_pty_opts {
    int cols, rows;  /* initial size; 0 leaves execd's 80x24 */
    int takeover;    /* evict another attached client */
    long long since; /* replay output from this byte offset; -1: no replay */
};
/* Opens the session's WebSocket. The handle owns one socket (osbc_pty_fd) for
 * poll(); it does not depend on c after this call returns. */
OSBC_API int osbc_pty_attach(osbc_client *c, const char *id, const char *session_id,
                             const struct osbc_pty_opts *o, osbc_pty **out, struct osbc_error *err);
OSBC_API int osbc_pty_fd(const osbc_pty *p);
OSBC_API int osbc_pty_write(osbc_pty *p, const void *data, size_t len, struct osbc_error *err);
OSBC_API int osbc_pty_resize(osbc_pty *p, int cols, int rows, struct osbc_error *err);
/* sig: "SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT" or "SIGHUP". */
OSBC_API int osbc_pty_signal(osbc_pty *p, const char *sig, struct osbc_error *err);

struct osbc_pty_event {
    enum { OSBC_PTY_NONE, OSBC_PTY_OUTPUT, OSBC_PTY_STDERR, OSBC_PTY_EXIT, OSBC_PTY_CLOSED } type;
    const char *data; /* OUTPUT/STDERR: bytes, valid until the next read */
    size_t len;
    int exit_code; /* EXIT */
};
/* Returns the next event, waiting up to timeout_ms for one (0 = don't
 * wait, -1 = forever). NONE: nothing within the time; reading with 0 until
 * NONE drains what is buffered, so poll() on osbc_pty_fd is then accurate.
 * CLOSED: the connection ended (after EXIT; or dropped: the call returns
 * OSBC_E_CONNECT/OSBC_E_PROTOCOL with the reason; or closed by execd with a
 * code other than 1000/1001, e.g. 4001 TAKEN_OVER: OSBC_E_REMOTE). An error
 * frame from execd (a failed stdin write, ...) returns OSBC_E_REMOTE with
 * its code in server_code, and the session goes on. */
OSBC_API int osbc_pty_read(osbc_pty *p, int timeout_ms, struct osbc_pty_event *ev,
                           struct osbc_error *err);
OSBC_API void osbc_pty_close(osbc_pty *p);

#ifdef __cplusplus
}
#endif
#endif
