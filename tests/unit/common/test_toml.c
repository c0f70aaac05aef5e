/* src/common/toml: valid documents become the expected JSON; every error
 * path gives its message with line and column. */
#include <stdlib.h>
#include <string.h>

#include "common/toml.h"
#include "tap.h"

/* Parse text and compare with the expected document written as JSON. */
static void same(const char *text, const char *want_json, const char *what)
{
    json_t *doc = NULL;
    struct osb_err e = {0};
    int rc = osb_toml_parse(text, strlen(text), &doc, NULL, &e);
    if (rc < 0)
        printf("# %s: %s\n", what, e.msg);
    json_error_t je;
    json_t *want = json_loads(want_json, JSON_DECODE_ANY, &je);
    if (!want)
        printf("# bad expected JSON in test: %s\n", je.text);
    int eq = rc == 0 && want && json_equal(doc, want);
    if (rc == 0 && !eq) {
        char *got = json_dumps(doc, JSON_SORT_KEYS);
        printf("# %s: got %s\n", what, got);
        free(got);
    }
    OK(eq, what);
    json_decref(doc);
    json_decref(want);
}

/* Parse must fail with exactly this message. */
static void fails_n(const char *text, size_t len, const char *msg, const char *what)
{
    json_t *doc = (json_t *)1;
    struct osb_err e = {0};
    int rc = osb_toml_parse(text, len, &doc, NULL, &e);
    OK(rc < 0 && doc == (json_t *)1, what);
    IS_STR(e.msg, msg, what);
    IS_INT(e.code, OSB_E_INVALID, what);
}

static void fails(const char *text, const char *msg, const char *what)
{
    fails_n(text, strlen(text), msg, what);
}

static void test_basics(void)
{
    same("", "{}", "empty document");
    same("# only a comment\n\n   \n\t# another\r\n", "{}", "comments and blank lines");
    same("a = 1\nb = \"x\"\nc = true\nd = false\ne = 1.5",
         "{\"a\":1,\"b\":\"x\",\"c\":true,"
         "\"d\":false,\"e\":1.5}",
         "scalars, no final newline");
    same("a=1 # trailing comment\r\nb\t=\t2\n", "{\"a\":1,\"b\":2}", "CRLF, tabs, comments");
    same("\xEF\xBB\xBF"
         "a = 1\n",
         "{\"a\":1}", "byte order mark skipped");
    same("bare-key_1 = 1\n\"quoted key\" = 2\n'literal \"key\"' = 3\n\"\" = 4\n1234 = 5\n",
         "{\"bare-key_1\":1,\"quoted key\":2,\"literal \\\"key\\\"\":3,\"\":4,\"1234\":5}",
         "bare, quoted, literal, empty and numeric keys");
    same("a.b.c = 1\na . b . d = 2\na.\"x.y\" = 3\n", "{\"a\":{\"b\":{\"c\":1,\"d\":2},\"x.y\":3}}",
         "dotted keys");
    same("# comment with é and \xF0\x9F\x98\x80\nk = 'v' # ünïcode\n", "{\"k\":\"v\"}",
         "UTF-8 in comments");
}

static void test_strings(void)
{
    same("s = \"tab\\there \\\"q\\\" back\\\\slash \\b\\f\\n\\r\"",
         "{\"s\":\"tab\\there \\\"q\\\" back\\\\slash \\b\\f\\n\\r\"}", "basic escapes");
    same("s = \"\\u00e9\\u20AC \\U0001F600\"", "{\"s\":\"\xC3\xA9\xE2\x82\xAC \xF0\x9F\x98\x80\"}",
         "\\u and \\U escapes");
    same("s = 'C:\\Users\\x \"no\" escapes'", "{\"s\":\"C:\\\\Users\\\\x \\\"no\\\" escapes\"}",
         "literal string");
    same("s = \"\"\"\nline1\nline2\"\"\"", "{\"s\":\"line1\\nline2\"}",
         "multi-line basic trims the first newline");
    same("s = \"\"\"\r\nline1\r\nline2\r\n\"\"\"", "{\"s\":\"line1\\nline2\\n\"}",
         "multi-line basic normalizes CRLF");
    same("s = \"\"\"a \\\n    b \\   \n\n   c\"\"\"", "{\"s\":\"a b c\"}",
         "line-ending backslash swallows whitespace and newlines");
    same("s = \"\"\"one \"quoted\" and \"\" two\"\"\"",
         "{\"s\":\"one \\\"quoted\\\" and \\\"\\\" two\"}", "quotes inside multi-line basic");
    same("s = \"\"\"x\"\"\"\"\"", "{\"s\":\"x\\\"\\\"\"}", "two quotes before the closing three");
    same("s = \"\"\"\"x\"\"\"\"", "{\"s\":\"\\\"x\\\"\"}", "quote right after the opening");
    same("s = '''\nC:\\raw\\ 'x' ''\n'''", "{\"s\":\"C:\\\\raw\\\\ 'x' ''\\n\"}",
         "multi-line literal");
    same("s = ''''x'''''", "{\"s\":\"'x''\"}", "quotes at both ends of multi-line literal");
    same("s = \"\"\"\\u0041\\tB\"\"\"", "{\"s\":\"A\\tB\"}", "escapes in multi-line basic");
    same("s = \"\"\n", "{\"s\":\"\"}", "empty string");
    same("s = ''''''", "{\"s\":\"\"}", "empty multi-line literal");
    same("s = \"a\tb\"", "{\"s\":\"a\\tb\"}", "a raw tab inside a string");
}

static void test_numbers(void)
{
    same("a = 0\nb = +42\nc = -17\nd = 1_000_000\ne = -0\nf = 9223372036854775807\n"
         "g = -9223372036854775808",
         "{\"a\":0,\"b\":42,\"c\":-17,\"d\":1000000,\"e\":0,\"f\":9223372036854775807,"
         "\"g\":-9223372036854775808}",
         "decimal integers");
    same("h = 0xDEAD_beef\no = 0o755\nb = 0b1101\nz = 0x0\nm = 0x7FFFFFFFFFFFFFFF",
         "{\"h\":3735928559,\"o\":493,\"b\":13,\"z\":0,\"m\":9223372036854775807}",
         "hex, octal, binary");
    same("a = 1.5\nb = -0.25\nc = 1e3\nd = 2E-2\ne = 6.626e-34\nf = 1_000.5\ng = 0.0\nh = +1.5e+2",
         "{\"a\":1.5,\"b\":-0.25,\"c\":1000.0,\"d\":0.02,\"e\":6.626e-34,\"f\":1000.5,\"g\":0.0,"
         "\"h\":150.0}",
         "floats");
}

static void test_arrays_tables(void)
{
    same("a = [1, 2, 3]\nb = []\nc = [ [1, 2], ['x'], [] ]\nd = [1, \"two\", 3.0, true]",
         "{\"a\":[1,2,3],\"b\":[],\"c\":[[1,2],[\"x\"],[]],\"d\":[1,\"two\",3.0,true]}",
         "arrays, nested and mixed");
    same("a = [\n  1, # one\n  2,\n\n  # comment line\n  3,\n]\n", "{\"a\":[1,2,3]}",
         "multi-line array with comments and a trailing comma");
    same(
        "p = { x = 1, y = \"two\", z.w = true }\nq = {}\nr = [{a = 1}, {b = [2]}]",
        "{\"p\":{\"x\":1,\"y\":\"two\",\"z\":{\"w\":true}},\"q\":{},\"r\":[{\"a\":1},{\"b\":[2]}]}",
        "inline tables");
    same("[server]\nhost = \"h\"\n[server.tls]\ncert = \"c\"\n[other]\n",
         "{\"server\":{\"host\":\"h\",\"tls\":{\"cert\":\"c\"}},\"other\":{}}", "tables");
    same("[ a . \"b c\" . 'd' ]\nk = 1", "{\"a\":{\"b c\":{\"d\":{\"k\":1}}}}",
         "header with spaces and quoted parts");
    same("[x.y.z]\n[x]\nq = 1\n", "{\"x\":{\"y\":{\"z\":{}},\"q\":1}}",
         "a super-table defined after its sub-table");
    same("[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n",
         "{\"fruit\":{\"apple\":{\"color\":\"red\",\"texture\":{\"smooth\":true}}}}",
         "sub-table of a dotted-key table");
    same("[[p]]\nn = 1\n[[p]]\nn = 2\n[p.sub]\nv = 3\n[[p.list]]\nx = 1\n",
         "{\"p\":[{\"n\":1},{\"n\":2,\"sub\":{\"v\":3},\"list\":[{\"x\":1}]}]}",
         "arrays of tables");
    same("[[a.b]]\n[[a.b]]\n", "{\"a\":{\"b\":[{},{}]}}", "dotted array of tables");
    same("a.b = 1\n[c]\nd.e = 2\nd.f = 3\n", "{\"a\":{\"b\":1},\"c\":{\"d\":{\"e\":2,\"f\":3}}}",
         "dotted keys in root and table");
}

static void test_lines(void)
{
    const char *t = "# c\n[server]\nport = 1\n\nhost = \"\"\"\nx\n\"\"\"\nafter = 2\n"
                    "a.b = 3\n[[arr]]\nk = 1\n[[arr]]\nk = { z = 2 }\n";
    json_t *doc, *lines = NULL;
    struct osb_err e = {0};
    OK(osb_toml_parse(t, strlen(t), &doc, &lines, &e) == 0, "lines document parses");
    IS_INT(osb_toml_line(lines, "server"), 2, "header line");
    IS_INT(osb_toml_line(lines, "server.port"), 3, "key line");
    IS_INT(osb_toml_line(lines, "server.host"), 5, "multi-line value: line of its key");
    IS_INT(osb_toml_line(lines, "server.after"), 8, "lines counted through a multi-line string");
    IS_INT(osb_toml_line(lines, "server.a.b"), 9, "dotted key line");
    IS_INT(osb_toml_line(lines, "server.a"), 9, "implicit dotted table line");
    IS_INT(osb_toml_line(lines, "arr[0].k"), 11, "array of tables element key");
    IS_INT(osb_toml_line(lines, "arr[1].k.z"), 13, "inline table key");
    IS_INT(osb_toml_line(lines, "arr"), 10, "array of tables line");
    IS_INT(osb_toml_line(lines, "nope"), 0, "unknown path is 0");
    json_decref(doc);
    json_decref(lines);
}

static void test_errors_lexical(void)
{
    fails_n("a = 1\n\x01", 7,
            "line 2, column 1: control character U+0001 is not allowed "
            "(use an escape in a string)",
            "control character");
    fails("a = \"x\x7f\"",
          "line 1, column 7: control character U+007F is not allowed "
          "(use an escape in a string)",
          "DEL");
    fails_n("a = \"x\0\"", 8,
            "line 1, column 7: control character U+0000 is not allowed "
            "(use an escape in a string)",
            "NUL byte");
    fails("a = 1\rb = 2", "line 1, column 6: a carriage return must be followed by a newline",
          "lone CR");
    fails("a = \"\xC3\"", "line 1, column 6: invalid UTF-8", "truncated UTF-8");
    fails("é = 1\nb = \"\xED\xA0\x80\"", "line 2, column 6: invalid UTF-8", "encoded surrogate");
    fails("a = \"\xC0\xAF\"", "line 1, column 6: invalid UTF-8", "overlong UTF-8");
    fails("a = 1 b = 2",
          "line 1, column 7: unexpected 'b' after the value (expected a newline "
          "or a comment)",
          "two pairs on a line");
    fails("[t] x",
          "line 1, column 5: unexpected 'x' after the table header (expected a "
          "newline or a comment)",
          "text after a header");
    fails("a", "line 1, column 2: expected '=' after key, found end of file", "key only");
    fails("\n\n  port 8080", "line 3, column 8: expected '=' after key, found '8'",
          "missing equals: line and column");
    fails("a = ", "line 1, column 5: expected a value, found end of file", "missing value");
    fails("a =\nb = 1", "line 1, column 4: expected a value, found a newline",
          "value on the next line");
    fails("= 1", "line 1, column 1: expected a key, found '='", "missing key");
    fails("a. = 1", "line 1, column 4: expected a key, found '='", "dangling dot");
    fails("\"\"\"k\"\"\" = 1", "line 1, column 1: a multi-line string cannot be a key",
          "multi-line key");
    fails("é = 1", "line 1, column 1: expected a key, found U+00E9", "non-ASCII bare key");
    char deep[64 * 2 + 16] = "";
    size_t dl = 0;
    for (int i = 0; i < 65; i++)
        dl += (size_t)snprintf(deep + dl, sizeof deep - dl, "%s", i ? ".a" : "a");
    snprintf(deep + dl, sizeof deep - dl, " = 1");
    fails(deep, "line 1, column 129: a dotted key has more than 64 parts", "too many key parts");
}

static void test_errors_strings(void)
{
    fails("a = \"abc", "line 1, column 5: unterminated string (a basic string ends on its line)",
          "unterminated basic string");
    fails("a = \"abc\nb = 1",
          "line 1, column 5: unterminated string (a basic string ends on its "
          "line)",
          "basic string across lines");
    fails("a = 'abc", "line 1, column 5: unterminated string (a literal string ends on its line)",
          "unterminated literal string");
    fails("a = \"\"\"abc\n", "line 1, column 5: unterminated multi-line string",
          "unterminated multi-line basic");
    fails("a = '''abc''", "line 1, column 5: unterminated multi-line string",
          "unterminated multi-line literal");
    fails("a = \"\"\"x\"\"\"\"\"\"",
          "line 1, column 14: too many quotes at the end of a "
          "multi-line string",
          "six closing quotes");
    fails("a = \"x\\", "line 1, column 5: unterminated string", "backslash at end of input");
    fails("a = \"\\q\"", "line 1, column 6: invalid escape sequence: backslash followed by 'q'",
          "unknown escape");
    fails("a = \"\\ \"", "line 1, column 6: invalid escape sequence: backslash followed by ' '",
          "backslash space in a basic string");
    fails("a = \"\\u12\"", "line 1, column 6: \\u escape needs 4 hex digits", "short \\u");
    fails("a = \"\\U0001F60\"", "line 1, column 6: \\U escape needs 8 hex digits", "short \\U");
    fails("a = \"\\uD800\"", "line 1, column 6: escape \\uD800 is not a Unicode scalar value",
          "surrogate escape");
    fails("a = \"\\U00110000\"",
          "line 1, column 6: escape \\U00110000 is not a Unicode scalar "
          "value",
          "escape above U+10FFFF");
    fails("a = \"\\u0000\"", "line 1, column 6: strings cannot contain U+0000", "NUL escape");
    fails("a = \"\"\"\\e\"\"\"",
          "line 1, column 8: invalid escape sequence: backslash followed "
          "by 'e'",
          "bad escape in multi-line basic");
    size_t big = 16 * 1024 * 1024 + 16;
    char *t = malloc(big + 8);
    memcpy(t, "a = '", 5);
    memset(t + 5, 'x', big);
    t[5 + big] = '\'';
    fails_n(t, big + 6, "line 1, column 5: string longer than 16777216 bytes", "huge string");
    free(t);
}

static void test_errors_numbers(void)
{
    fails("a = 01", "line 1, column 5: leading zeros are not allowed in '01'", "leading zero");
    fails("a = +007", "line 1, column 5: leading zeros are not allowed in '+007'",
          "signed leading zeros");
    fails("a = 1__0", "line 1, column 5: invalid value '1__0'", "double underscore");
    fails("a = _1", "line 1, column 5: invalid value '_1'", "leading underscore");
    fails("a = 1_", "line 1, column 5: invalid value '1_'", "trailing underscore");
    fails("a = 12abc", "line 1, column 5: invalid value '12abc'", "letters after digits");
    fails("a = +", "line 1, column 5: invalid value '+'", "sign alone");
    fails("a = -", "line 1, column 5: invalid value '-'", "minus alone");
    fails("a = yes", "line 1, column 5: invalid value 'yes'", "bare word");
    fails("a = TRUE", "line 1, column 5: invalid value 'TRUE'", "booleans are lower case");
    fails("a = 9223372036854775808",
          "line 1, column 5: integer '9223372036854775808' does not "
          "fit in 64 bits",
          "integer overflow");
    fails("a = -9223372036854775809",
          "line 1, column 5: integer '-9223372036854775809' does "
          "not fit in 64 bits",
          "integer underflow");
    char longint[200] = "a = ";
    memset(longint + 4, '1', 150);
    fails(longint,
          "line 1, column 5: integer '1111111111111111111111111111111111111111...' "
          "does not fit in 64 bits",
          "very long integer");
    fails("a = 0x", "line 1, column 5: invalid value '0x'", "hex without digits");
    fails("a = 0xG1", "line 1, column 5: invalid integer '0xG1'", "bad hex digit");
    fails("a = 0o8", "line 1, column 5: invalid integer '0o8'", "bad octal digit");
    fails("a = 0b102", "line 1, column 5: invalid integer '0b102'", "bad binary digit");
    fails("a = 0x_1", "line 1, column 5: invalid integer '0x_1'", "underscore after prefix");
    fails("a = -0x1", "line 1, column 5: invalid value '-0x1'", "signed hex");
    fails("a = 0x8000000000000000",
          "line 1, column 5: integer '0x8000000000000000' does not "
          "fit in 64 bits",
          "hex overflow");
    fails("a = 1.", "line 1, column 5: invalid number '1.'", "float without fraction");
    fails("a = .5", "line 1, column 5: invalid value '.5'", "float without integer part");
    fails("a = 1e", "line 1, column 5: invalid number '1e'", "float without exponent digits");
    fails("a = 1.2.3", "line 1, column 5: invalid number '1.2.3'", "two dots");
    fails("a = 03.14", "line 1, column 5: leading zeros are not allowed in '03.14'",
          "float leading zero");
    fails("a = 1e999", "line 1, column 5: number '1e999' is out of range", "float overflow");
    fails("a = 1._5", "line 1, column 5: invalid number '1._5'", "underscore after dot");
    char longf[300] = "a = 1.";
    memset(longf + 6, '5', 260);
    fails(longf,
          "line 1, column 5: number '1.55555555555555555555555555555555555555...' is too "
          "long",
          "very long float");
    fails("a = inf", "line 1, column 5: inf and nan are not supported", "inf");
    fails("a = -nan", "line 1, column 5: inf and nan are not supported", "nan");
    fails("a = 1979-05-27", "line 1, column 5: dates and times are not supported (quote the value)",
          "date");
    fails("a = 07:32:00", "line 1, column 5: dates and times are not supported (quote the value)",
          "time");
}

static void test_errors_compound(void)
{
    fails("a = [1, 2", "line 1, column 5: unterminated array", "unterminated array");
    fails("a = [1 2]", "line 1, column 8: expected ',' or ']' after an array element, found '2'",
          "missing comma in array");
    fails("a = [,]", "line 1, column 6: expected a value, found ','", "leading comma in array");
    fails("a = [1,,2]", "line 1, column 8: expected a value, found ','", "double comma");
    fails("a = {x = 1,}", "line 1, column 11: a trailing comma is not allowed in an inline table",
          "inline trailing comma");
    fails("a = {x = 1\n}",
          "line 1, column 11: expected ',' or '}' in an inline table, found a "
          "newline (an inline table must be on one line)",
          "newline in inline table");
    fails("a = {\nx = 1}",
          "line 1, column 6: expected a key in an inline table, found a "
          "newline (an inline table must be on one line)",
          "newline after inline brace");
    fails("a = {x = 1 y = 2}",
          "line 1, column 12: expected ',' or '}' in an inline table, "
          "found 'y'",
          "missing comma in inline table");
    fails("a = {x = 1, x = 2}", "line 1, column 13: duplicate key 'a.x'",
          "duplicate key in inline table");
    fails("a = {",
          "line 1, column 6: expected a key in an inline table, found end of file "
          "(an inline table must be on one line)",
          "unterminated inline table");
    char deep[200] = "a = ";
    memset(deep + 4, '[', 65);
    fails(deep, "line 1, column 69: arrays and inline tables nested deeper than 64",
          "nesting limit");
    char ok[400] = "a = ";
    memset(ok + 4, '[', 64);
    memset(ok + 4 + 64, ']', 64);
    json_t *doc;
    struct osb_err e = {0};
    OK(osb_toml_parse(ok, strlen(ok), &doc, NULL, &e) == 0, "64 levels are accepted");
    json_decref(doc);
}

static void test_errors_structure(void)
{
    fails("a = 1\na = 2", "line 2, column 1: duplicate key 'a'", "duplicate key");
    fails("[t]\nx = 1\n\"x\" = 2", "line 3, column 1: duplicate key 't.x'",
          "duplicate key quoted differently");
    fails("a.b = 1\na.b.c = 2",
          "line 2, column 1: cannot add keys to 'a.b': it is already "
          "defined as a value",
          "dotted key through a value");
    fails("[a.b]\nx = 1\n[a]\nb.y = 2",
          "line 4, column 1: cannot add keys to 'a.b': it is "
          "already defined as a table elsewhere",
          "dotted key into a header table");
    fails("a = {x = 1}\na.y = 2",
          "line 2, column 1: cannot add keys to 'a': it is already "
          "defined as a table elsewhere",
          "dotted key into an inline table");
    fails("[t]\n[t]", "line 2, column 1: duplicate table [t]", "duplicate table");
    fails("[a.b]\n[a]\n[a]", "line 3, column 1: duplicate table [a]",
          "implicit table defined twice");
    fails("a.b = 1\n[a]", "line 2, column 1: duplicate table [a]", "header over a dotted table");
    fails("[fruit]\napple.color = 1\n[fruit.apple]",
          "line 3, column 1: duplicate table "
          "[fruit.apple]",
          "header over a dotted sub-table");
    fails("a = 1\n[a]", "line 2, column 1: 'a' is already defined as a value, not a table",
          "header over a value");
    fails("a = 1\n[a.b]", "line 2, column 1: 'a' is already defined as a value, not a table",
          "header through a value");
    fails("a = {}\n[a.b]", "line 2, column 1: 'a' is an inline table and cannot be extended",
          "header through an inline table");
    fails("a = {}\n[a]", "line 2, column 1: duplicate table [a]", "header over an inline table");
    fails("a = [1]\n[[a]]",
          "line 2, column 1: [[a]]: 'a' is already defined and is not an "
          "array of tables",
          "[[ ]] over a static array");
    fails("[a]\n[[a]]",
          "line 2, column 1: [[a]]: 'a' is already defined and is not an array of "
          "tables",
          "[[ ]] over a table");
    fails("[[a]]\n[a]", "line 2, column 1: 'a' is already defined as a value, not a table",
          "[ ] over an array of tables");
    fails("[a", "line 1, column 3: expected ']' to close the table header, found end of file",
          "unclosed header");
    fails("[[a]", "line 1, column 5: expected ']]' to close the table header, found end of file",
          "unclosed array header");
    fails("[[a] ]", "line 1, column 5: expected ']]' to close the table header, found ' '",
          "split ]]");
    fails("[]", "line 1, column 2: expected a key, found ']'", "empty header");
    fails("[a]]\n",
          "line 1, column 4: unexpected ']' after the table header (expected a newline "
          "or a comment)",
          "extra bracket");
}

int main(void)
{
    test_basics();
    test_strings();
    test_numbers();
    test_arrays_tables();
    test_lines();
    test_errors_lexical();
    test_errors_strings();
    test_errors_numbers();
    test_errors_compound();
    test_errors_structure();
    return tap_done();
}
