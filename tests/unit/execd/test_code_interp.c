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
}

static void test_find(void)
{
    struct osb_err err = {0};
    char *path = NULL;
    setenv("EXECD_BASH_BIN", "/bin/sh", 1);
    IS_INT(osb_interp_find(OSB_CODE_BASH, &path, &err), 0, "override names the binary");
    IS_STR(path, "/bin/sh", "override path returned as is");
    free(path);
    setenv("EXECD_PYTHON_BIN", "/nonexistent/python3", 1);
    IS_INT(osb_interp_find(OSB_CODE_PYTHON, &path, &err), -1, "override to a missing file fails");
    OK(strstr(err.msg, "python interpreter not found") && strstr(err.msg, "EXECD_PYTHON_BIN"),
       "message names the language and the variable");
    unsetenv("EXECD_PYTHON_BIN");
    unsetenv("EXECD_BASH_BIN");
    setenv("PATH", "/nonexistent:/also-missing", 1);
    IS_INT(osb_interp_find(OSB_CODE_JAVASCRIPT, &path, &err), -1, "nothing in PATH");
    OK(strstr(err.msg, "javascript interpreter not found: no node or nodejs in PATH"),
       "message lists the candidates");
    setenv("PATH", "/usr/bin:/bin", 1);
    path = NULL;
    IS_INT(osb_interp_find(OSB_CODE_BASH, &path, &err), 0, "bash found in PATH");
    OK(path && path[0] == '/' && strstr(path, "bash"), "absolute path to bash");
    free(path);
}

static void test_drivers(void)
{
    OK(strstr(osb_code_driver_python, "{'ready': True}"), "python driver announces ready");
    OK(strstr(osb_code_driver_javascript, "ready: true"), "javascript driver announces ready");
    OK(strstr(osb_code_driver_bash, "{\"ready\":true}"), "bash driver announces ready");
}

static void test_go(void)
{
    struct osb_err err = {0};
    char *path = NULL;
    IS_INT(osb_code_lang_parse("go"), OSB_CODE_GO, "go");
    IS_STR(osb_code_lang_name(OSB_CODE_GO), "go", "name of go");
    setenv("PATH", "/nonexistent", 1);
    IS_INT(osb_interp_find(OSB_CODE_GO, &path, &err), -1, "no go in PATH");
    OK(err.code == OSB_E_INVALID && strstr(err.msg, "go interpreter not found: no go in PATH"),
       "a missing go is the request's problem (400), named in the message");
    setenv("EXECD_GO_BIN", "/bin/sh", 1);
    IS_INT(osb_interp_find(OSB_CODE_GO, &path, &err), 0, "EXECD_GO_BIN names the binary");
    IS_STR(path, "/bin/sh", "EXECD_GO_BIN path returned as is");
    free(path);
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
