/* The ordered pool writer used by uploads: order, batching, close after
 * data, error reporting, and freeing while a job runs. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "execd/fs_writer.h"
#include "tap.h"

static int progress;

static void on_progress(void *ud)
{
    (void)ud;
    progress++;
}

static void drain(struct osb_fs_writer *w)
{
    while (!osb_fs_writer_idle(w))
        uv_run(uv_default_loop(), UV_RUN_ONCE);
}

static int open_tmp(char *path)
{
    strcpy(path, "/tmp/osb-writer-XXXXXX");
    return mkstemp(path);
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void ordered_writes(void)
{
    char a[64], b[64];
    int fa = open_tmp(a), fb = open_tmp(b);
    struct osb_fs_writer *w = osb_fs_writer_new(uv_default_loop(), on_progress, NULL);
    static char big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(i * 7);
    /* Interleave two files, in pieces of odd sizes. */
    for (size_t off = 0; off < sizeof big; off += 4099) {
        size_t n = sizeof big - off < 4099 ? sizeof big - off : 4099;
        osb_fs_writer_write(w, fa, big + off, n);
        if (off % (4099 * 64) == 0)
            osb_fs_writer_write(w, fb, "b", 1);
    }
    OK(osb_fs_writer_pending(w) > 0, "bytes pending before the loop runs");
    osb_fs_writer_close(w, fa);
    osb_fs_writer_close(w, fb);
    drain(w);
    OK(progress > 0, "progress reported");
    IS_INT(osb_fs_writer_pending(w), 0, "nothing pending when idle");
    IS_INT(osb_fs_writer_error(w), 0, "no error");
    IS_INT(size_of(a), sizeof big, "file a complete");
    FILE *f = fopen(a, "rb");
    static char back[1 << 20];
    size_t got = fread(back, 1, sizeof back, f);
    fclose(f);
    OK(got == sizeof big && memcmp(back, big, sizeof big) == 0, "file a in order");
    IS_INT(size_of(b), 4, "file b got its 4 bytes");
    OK(fcntl(fa, F_GETFD) < 0 && fcntl(fb, F_GETFD) < 0, "descriptors closed after the data");
    osb_fs_writer_free(w);
    unlink(a);
    unlink(b);
}

static void write_error(void)
{
    char a[64];
    int fd = open_tmp(a);
    int ro = open(a, O_RDONLY);
    close(fd);
    struct osb_fs_writer *w = osb_fs_writer_new(uv_default_loop(), on_progress, NULL);
    osb_fs_writer_write(w, ro, "x", 1);
    osb_fs_writer_close(w, ro);
    drain(w);
    OK(osb_fs_writer_error(w) != 0, "write to a read-only fd reports an error");
    OK(fcntl(ro, F_GETFD) < 0, "its descriptor is still closed");
    osb_fs_writer_write(w, 1, "ignored", 7);
    OK(osb_fs_writer_idle(w), "later writes are dropped after an error");
    osb_fs_writer_free(w);
    unlink(a);
}

static void free_while_running(void)
{
    char a[64];
    int fd = open_tmp(a);
    struct osb_fs_writer *w = osb_fs_writer_new(uv_default_loop(), on_progress, NULL);
    static char big[1 << 20];
    for (int i = 0; i < 8; i++)
        osb_fs_writer_write(w, fd, big, sizeof big);
    osb_fs_writer_close(w, fd);
    int before = progress;
    osb_fs_writer_free(w);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    IS_INT(progress, before, "no progress callback after free");
    OK(fcntl(fd, F_GETFD) < 0, "handed-over descriptor closed on free");
    unlink(a);
}

int main(void)
{
    ordered_writes();
    write_error();
    free_while_running();
    return tap_done();
}
