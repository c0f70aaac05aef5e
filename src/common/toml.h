/* A TOML 1.0 parser for configuration files (DESIGN.md section 4: Debian
 * has no C TOML library). The document becomes a jansson tree: tables are
 * objects, arrays arrays, strings strings, integers integers, floats reals,
 * booleans booleans. Supported: comments; [table], [a.b] and [[array of
 * tables]] headers; bare, quoted and dotted keys; basic strings with every
 * escape (\uXXXX, \UXXXXXXXX), literal strings and both multi-line forms;
 * decimal, hex (0x), octal (0o) and binary (0b) integers with underscores;
 * floats; booleans; arrays (nested, mixed, multi-line, trailing comma);
 * inline tables. Not supported, each with a clear error: dates and times,
 * inf and nan (JSON has no such numbers) and strings holding U+0000.
 * Duplicate keys and tables are errors. Errors read
 * "line 12, column 5: expected '=' after key" (columns count characters). */
#ifndef OSB_TOML_H
#define OSB_TOML_H
#include <jansson.h>
#include <stddef.h>

#include "common/err.h"

/* Nesting of arrays and inline tables accepted; deeper input is an attack. */
#define OSB_TOML_MAX_DEPTH 64

/* Parse text[0..len). On success *out gets the document (a new object the
 * caller json_decref()s) and, when lines is not NULL, *lines gets an object
 * mapping every key's path to the line (1-based) where it was defined: a
 * path joins the keys with '.' ("server.port"), an element of an array of
 * tables is "name[0]" ("servers[1].host"), a table header maps its own path.
 * On failure nothing is returned and err (OSB_E_INVALID) says where. */
OSB_MUST_CHECK int osb_toml_parse(const char *text, size_t len, json_t **out, json_t **lines,
                                  struct osb_err *err);

/* The line recorded for path in a lines object, or 0 if unknown. */
int osb_toml_line(const json_t *lines, const char *path);
#endif
