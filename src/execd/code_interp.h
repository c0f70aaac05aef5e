/* One persistent interpreter process behind a code context: Python, Node,
 * bash, a JVM (jshell) or a Go program running an embedded driver
 * (code_drivers.c, code_driver_go.c). The driver takes code
 * over a private socket and answers there; the program's own stdout and
 * stderr are separate pipes, so user output can never forge a reply.
 * docs/internals/code.md describes the protocol. */
#ifndef OSB_EXECD_CODE_INTERP_H
#define OSB_EXECD_CODE_INTERP_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/err.h"
#include "execd/execd.h"

enum osb_code_lang {
    OSB_CODE_PYTHON,
    OSB_CODE_JAVASCRIPT,
    OSB_CODE_BASH,
    OSB_CODE_JAVA,
    OSB_CODE_TYPESCRIPT,
    OSB_CODE_GO,
    OSB_CODE_NLANGS /* the number of languages */
};

struct osb_interp;

/* Every callback may call osb_interp_free on the interpreter it gets. */
struct osb_interp_cbs {
    /* The driver is ready (err NULL), or died / timed out first (err set;
     * the interpreter is dead and only osb_interp_free remains). */
    void (*on_ready)(struct osb_interp *ip, const struct osb_err *err, void *ud);
    /* A chunk of program output: stream 1 stdout, 2 stderr. Valid UTF-8
     * (invalid bytes become U+FFFD; a sequence split across reads is kept
     * for the next chunk). Output arrives whether or not a run is active. */
    void (*on_output)(struct osb_interp *ip, int stream, const char *data, size_t len, void *ud);
    /* The run finished; all of its output was delivered before this. reply
     * is the driver's JSON object (borrowed). */
    void (*on_done)(struct osb_interp *ip, json_t *reply, void *ud);
    /* The process exited after it was ready (wait status). Remaining output
     * was delivered first. The interpreter is dead; free it. */
    void (*on_exit)(struct osb_interp *ip, int wstatus, void *ud);
};

/* Language name ("python", "javascript", "bash", "java", "typescript",
 * "go") <->
 * enum; -1 if unknown. */
int osb_code_lang_parse(const char *name);
const char *osb_code_lang_name(enum osb_code_lang lang);

/* What runs a language: the interpreter binary, and for typescript the
 * `typescript` node module. */
struct osb_interp_prog {
    char *bin;
    char *module; /* NULL unless typescript */
};

/* Find what runs `lang`, from execd's environment merged with
 * /opt/opensandbox/.env: $EXECD_PYTHON_BIN / $EXECD_NODE_BIN /
 * $EXECD_BASH_BIN / $EXECD_JAVA_BIN / $EXECD_GO_BIN when set, else
 * python3|python, node|nodejs, bash, go searched in PATH, and for java the `java` next to the
 * `jshell` found in PATH (a JDK, not just a JRE). typescript also needs the
 * module: $EXECD_TYPESCRIPT_MODULE, else `typescript` in $NODE_PATH or the
 * usual global module directories. Fails with OSB_E_INVALID and a message
 * naming the language and the missing program ("java: jshell not found in
 * PATH (...)"). */
OSB_MUST_CHECK int osb_interp_find(const struct osb_execd *x, enum osb_code_lang lang,
                                   struct osb_interp_prog *out, struct osb_err *err);
void osb_interp_prog_free(struct osb_interp_prog *p);

/* Start the interpreter in cwd (NULL: execd's). The callbacks start after
 * this returns; on_ready comes once. */
OSB_MUST_CHECK int osb_interp_start(struct osb_execd *x, enum osb_code_lang lang, const char *cwd,
                                    const struct osb_interp_cbs *cbs, void *ud,
                                    struct osb_interp **out, struct osb_err *err);
/* Send code to run; only after on_ready, one run at a time. */
OSB_MUST_CHECK int osb_interp_run(struct osb_interp *ip, const char *code, size_t len,
                                  struct osb_err *err);
/* SIGINT to the interpreter's process group (KeyboardInterrupt). */
void osb_interp_interrupt(struct osb_interp *ip);
/* Stop/resume reading program output (backpressure from a slow client). */
void osb_interp_pause_output(struct osb_interp *ip, bool paused);
pid_t osb_interp_pid(const struct osb_interp *ip);
/* Hand the interpreter to a new owner (a warm spare adopted by a context). */
void osb_interp_set_owner(struct osb_interp *ip, const struct osb_interp_cbs *cbs, void *ud);
/* Kill the process group (SIGKILL) and release everything. No callback runs
 * after this; safe inside a callback. NULL is a no-op. */
void osb_interp_free(struct osb_interp *ip);
#endif
