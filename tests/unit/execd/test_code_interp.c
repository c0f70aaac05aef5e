/* Code-context interpreter lookup and language names (code_interp.h). */
#include <stdlib.h>
#include <string.h>

#include "execd/code_drivers.h"
#include "execd/code_interp.h"
#include "tap.h"

static void test_lang(void)
{
    IS_INT(osb_code_lang_parse("python"), OSB_CODE_PYTHON, "python");
    IS_INT(osb_code_lang_parse("javascript"), OSB_CODE_JAVASCRIPT, "javascript");
    IS_INT(osb_code_lang_parse("bash"), OSB_CODE_BASH, "bash");
    IS_INT(osb_code_lang_parse("command"), -1, "command has no interpreter");
    IS_INT(osb_code_lang_parse("Python"), -1, "names are case-sensitive");
    IS_INT(osb_code_lang_parse(NULL), -1, "NULL");
    IS_STR(osb_code_lang_name(OSB_CODE_JAVASCRIPT), "javascript", "name of javascript");
    IS_INT(osb_code_lang_parse("java"), OSB_CODE_JAVA, "java");
    IS_INT(osb_code_lang_parse("typescript"), OSB_CODE_TYPESCRIPT, "typescript");
    IS_INT(osb_code_lang_parse("sql"), -1, "sql has no interpreter");
}

static void test_find(void)
{
    struct osb_execd x = {0}; /* nothing hidden from children */
    struct osb_err err = {0};
    struct osb_interp_prog prog = {0};
    setenv("EXECD_BASH_BIN", "/bin/sh", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_BASH, &prog, &err), 0, "override names the binary");
    IS_STR(prog.bin, "/bin/sh", "override path returned as is");
    OK(prog.module == NULL, "no module for bash");
    osb_interp_prog_free(&prog);
    setenv("EXECD_PYTHON_BIN", "/nonexistent/python3", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_PYTHON, &prog, &err), -1,
           "override to a missing file fails");
    IS_INT(err.code, OSB_E_INVALID, "a missing interpreter is the caller's error (400)");
    IS_STR(err.msg, "python: EXECD_PYTHON_BIN=/nonexistent/python3 is not an executable file",
           "message names the language and the variable");
    unsetenv("EXECD_PYTHON_BIN");
    unsetenv("EXECD_BASH_BIN");
    setenv("PATH", "/nonexistent:/also-missing", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_JAVASCRIPT, &prog, &err), -1, "nothing in PATH");
    IS_STR(err.msg, "javascript: node or nodejs not found in PATH (/nonexistent:/also-missing)",
           "message lists the candidates and the PATH");
    IS_INT(osb_interp_find(&x, OSB_CODE_JAVA, &prog, &err), -1, "no jshell in PATH");
    IS_STR(err.msg, "java: jshell not found in PATH (/nonexistent:/also-missing)",
           "java needs jshell (a JDK)");
    setenv("PATH", "/usr/bin:/bin", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_BASH, &prog, &err), 0, "bash found in PATH");
    OK(prog.bin && prog.bin[0] == '/' && strstr(prog.bin, "bash"), "absolute path to bash");
    osb_interp_prog_free(&prog);
    setenv("EXECD_TYPESCRIPT_MODULE", "/nonexistent/typescript.js", 1);
    setenv("EXECD_NODE_BIN", "/bin/sh", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_TYPESCRIPT, &prog, &err), -1, "typescript module override");
    IS_STR(err.msg,
           "typescript: EXECD_TYPESCRIPT_MODULE=/nonexistent/typescript.js is not a readable file",
           "message names the module variable");
    OK(prog.bin == NULL, "nothing returned on failure");
    setenv("EXECD_TYPESCRIPT_MODULE", "/bin/sh", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_TYPESCRIPT, &prog, &err), 0, "typescript: node and module");
    IS_STR(prog.module, "/bin/sh", "module path returned as is");
    osb_interp_prog_free(&prog);
    unsetenv("EXECD_TYPESCRIPT_MODULE");
    unsetenv("EXECD_NODE_BIN");
}

static void test_drivers(void)
{
    OK(strstr(osb_code_driver_python, "{'ready': True}"), "python driver announces ready");
    OK(strstr(osb_code_driver_javascript, "ready: true"), "javascript driver announces ready");
    OK(strstr(osb_code_driver_bash, "{\"ready\":true}"), "bash driver announces ready");
    OK(strstr(osb_code_driver_java, "{\\\"ready\\\":true}"), "java driver announces ready");
}

static void test_go(void)
{
    struct osb_execd x = {0};
    struct osb_err err = {0};
    struct osb_interp_prog prog = {0};
    IS_INT(osb_code_lang_parse("go"), OSB_CODE_GO, "go");
    IS_STR(osb_code_lang_name(OSB_CODE_GO), "go", "name of go");
    setenv("PATH", "/nonexistent", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_GO, &prog, &err), -1, "no go in PATH");
    OK(err.code == OSB_E_INVALID && strstr(err.msg, "go: go not found in PATH"),
       "a missing go is the request's problem (400), named in the message");
    setenv("EXECD_GO_BIN", "/bin/sh", 1);
    IS_INT(osb_interp_find(&x, OSB_CODE_GO, &prog, &err), 0, "EXECD_GO_BIN names the binary");
    IS_STR(prog.bin, "/bin/sh", "EXECD_GO_BIN path returned as is");
    osb_interp_prog_free(&prog);
    unsetenv("EXECD_GO_BIN");
    char a[OSB_CODE_DRIVER_GO_KEY], b[OSB_CODE_DRIVER_GO_KEY];
    osb_code_driver_go_key(a);
    osb_code_driver_go_key(b);
    OK(strlen(a) == OSB_CODE_DRIVER_GO_KEY - 1 && strspn(a, "0123456789abcdef") == strlen(a),
       "the driver's cache key is hex");
    IS_STR(a, b, "the key is a function of the source");
    OK(strstr(osb_code_driver_go, "\"ready\": true") && strstr(osb_code_driver_go, "package main"),
       "go driver announces ready");
    OK(strstr(osb_code_driver_go_sh, "exec \"$d/driver\""), "the go script execs the driver");
}

int main(void)
{
    test_lang();
    test_find();
    test_drivers();
    test_go();
    return tap_done();
}
