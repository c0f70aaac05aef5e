/* Glob matcher of /files/search: doublestar semantics (cases taken from the
 * behaviour of the reference execd's matcher). */
#include <stdio.h>

#include "execd/fs_glob.h"
#include "tap.h"

static void match(const char *pattern, const char *name, int want)
{
    struct osb_err err = {0};
    struct osb_fs_glob *g = osb_fs_glob_new(pattern, &err);
    char what[256];
    snprintf(what, sizeof what, "'%s' %s '%s'", pattern, want ? "matches" : "does not match", name);
    if (!g) {
        printf("# compile failed: %s\n", err.msg);
        OK(0, what);
        return;
    }
    OK(osb_fs_glob_match(g, name) == want, what);
    osb_fs_glob_free(g);
}

static void bad(const char *pattern)
{
    struct osb_err err = {0};
    struct osb_fs_glob *g = osb_fs_glob_new(pattern, &err);
    char what[256];
    snprintf(what, sizeof what, "'%s' is rejected", pattern);
    OK(!g && err.code == OSB_E_INVALID, what);
    osb_fs_glob_free(g);
}

static void basics(void)
{
    match("", "", 1);
    match("*", "", 1);
    match("abc", "abc", 1);
    match("*", "abc", 1);
    match("*c", "abc", 1);
    match("a*", "a", 1);
    match("a*", "abc", 1);
    match("a*b*c*d*e*", "axbxcxdxe", 1);
    match("a*b?c*x", "abxbbxdbxebxczzx", 1);
    match("a*b?c*x", "abxbbxdbxebxczzy", 0);
    match("*.txt", "notes.txt", 1);
    match("*.txt", "notes.txt.bak", 0);
    match("*x", "xxx", 1);
    match("abc", "abd", 0);
    match("abc", "ab", 0);
    match("ab", "abc", 0);
}

static void classes(void)
{
    match("ab[c]", "abc", 1);
    match("ab[b-d]", "abc", 1);
    match("ab[e-g]", "abc", 0);
    match("ab[^c]", "abc", 0);
    match("ab[^b-d]", "abc", 0);
    match("ab[^e-g]", "abc", 1);
    match("ab[!e-g]", "abc", 1);
    match("a?b",
          "a\xe2\x98\xba"
          "b",
          1); /* one rune, three bytes */
    match("a???b",
          "a\xe2\x98\xba"
          "b",
          0);
    match("a[^a]b",
          "a\xe2\x98\xba"
          "b",
          1);
    match("[a-\xce\xb6]*", "\xce\xb1", 1);
    match("*[a-\xce\xb6]", "A", 0);
    match("[\\]a]", "]", 1);
    match("[\\-]", "-", 1);
    match("[x\\-]", "x", 1);
    match("[x\\-]", "-", 1);
    match("[x\\-]", "z", 0);
    match("[-]", "-", 1);
    match("[x-]", "-", 1);
    match("[-x]", "a", 0);
    match("[a-b-d]", "-", 1);
    match("[a-b-d]", "c", 0);
    match("[abc]", "b", 1);
}

static void escapes_and_braces(void)
{
    match("a\\*b", "ab", 0);
    match("a\\*b", "a*b", 1);
    match("*\\}", "}", 1);
    match("ab{c,d}", "abc", 1);
    match("ab{c,d,*}", "abcde", 1);
    match("a{,bc}", "a", 1);
    match("a{,bc}", "abc", 1);
    match("*.{js,ts}", "app.ts", 1);
    match("*.{js,ts}", "app.py", 0);
    match("{a,b}{c,d}", "bd", 1);
    match("e]", "e]", 1);
}

static void doublestar(void)
{
    match("**", "", 1);
    match("**", "anything.c", 1);
    match("**/c", "c", 1);
    match("**/abc", "abc", 1);
    match("**/c", "abcd", 0);
    match("**/*.txt", "\xc3\x9ftest\xc3\x9f.txt", 1);
    match("**/{a,b}", "b", 1);
    match("**.c", "x.c", 1); /* not a whole segment: a plain star */
    match("a/**", "a/b/c", 1);
    match("a/**/d", "a/b/c/d", 1);
    match("a*b", "a/b", 0);
    match("a?b", "a/b", 0);
}

static void invalid(void)
{
    bad("[]a]");
    bad("\\");
    bad("[");
    bad("[^");
    bad("[^bc");
    bad("a[");
    bad("ab{c,d}[");
    bad("{a,b");
    /* Brace bombs are refused instead of expanding exponentially. */
    bad("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}");
}

int main(void)
{
    basics();
    classes();
    escapes_and_braces();
    doublestar();
    invalid();
    return tap_done();
}
