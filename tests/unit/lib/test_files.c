/* The pure parts of file transfers: modes on the wire (octal digits as a
 * decimal number), Permission objects, and an upload's multipart framing
 * byte for byte (so head + file + tail is the exact Content-Length). */
#include <stdlib.h>

#include "files.h"
#include "tap.h"

static void test_modes(void)
{
    IS_INT(osbcl_mode_wire(0644), 644, "0644 is 644");
    IS_INT(osbcl_mode_wire(0755), 755, "0755 is 755");
    IS_INT(osbcl_mode_wire(0600), 600, "0600 is 600");
    IS_INT(osbcl_mode_wire(07), 7, "07 is 7");
    IS_INT(osbcl_mode_wire(04711), 4711, "setuid kept for the server to judge");
    IS_INT(osbcl_mode_wire(0), 0, "0 is 0");

    struct osbc_file_attrs a = {.mode = 0640, .owner = "alice", .group = "staff"};
    json_t *j = osbcl_perm_json(&a, -1);
    char *s = osbcl_json_dump(j);
    IS_STR(s, "{\"mode\":640,\"owner\":\"alice\",\"group\":\"staff\"}", "a whole Permission");
    free(s);
    json_decref(j);
    struct osbc_file_attrs d = {.mode = -1, .owner = "", .group = NULL};
    j = osbcl_perm_json(&d, 0755);
    s = osbcl_json_dump(j);
    IS_STR(s, "{\"mode\":755}", "mode -1 takes the default; empty names are left out");
    free(s);
    json_decref(j);
    j = osbcl_perm_json(NULL, -1);
    s = osbcl_json_dump(j);
    IS_STR(s, "{}", "no attributes, no default: nothing");
    free(s);
    json_decref(j);
    struct osbc_file_attrs u = {.mode = 0644, .owner = "\xff"};
    OK(osbcl_perm_json(&u, -1) == NULL, "a name that is not UTF-8 is refused");
}

static void test_frame(void)
{
    struct osbcl_upload_frame f;
    struct osbc_file_attrs a = {.mode = 0600, .owner = "nobody"};
    IS_INT(osbcl_upload_frame(&f, "BND", "/w/dir/a \"b\".txt", &a), 0, "framing built");
    IS_STR(f.head,
           "--BND\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
           "Content-Type: application/json\r\n\r\n"
           "{\"mode\":600,\"owner\":\"nobody\",\"path\":\"/w/dir/a \\\"b\\\".txt\"}\r\n"
           "--BND\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a _b_.txt\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n",
           "head: metadata as a file part, then the file part's header (quotes made safe)");
    IS_STR(f.tail, "\r\n--BND--\r\n", "tail: the closing boundary");
    IS_INT(f.head_len, strlen(f.head), "head length");
    IS_INT(f.tail_len, strlen(f.tail), "tail length");
    osbcl_upload_frame_free(&f);

    IS_INT(osbcl_upload_frame(&f, "X", "/dir/", NULL), 0, "a path ending in /");
    OK(strstr(f.head, "{\"path\":\"/dir/\"}") && strstr(f.head, "filename=\"file\""),
       "no attributes: only the path; a stand-in file name");
    osbcl_upload_frame_free(&f);

    IS_INT(osbcl_upload_frame(&f, "X", "/a\r\nb", NULL), 0, "a line break in the name");
    OK(strstr(f.head, "\"/a\\r\\nb\"") && strstr(f.head, "filename=\"a__b\""),
       "escaped in JSON, replaced in the header");
    osbcl_upload_frame_free(&f);

    IS_INT(osbcl_upload_frame(&f, "X", "/bad\xff", NULL), OSBC_E_ARG,
           "a path that is not UTF-8 is refused");
    OK(!f.head && !f.tail, "nothing left allocated");
}

int main(void)
{
    test_modes();
    test_frame();
    return tap_done();
}
