#include "execd/fs_lines.h"

#include <string.h>

void osb_fs_lines_init(struct osb_fs_lines *l, int64_t offset, int64_t limit)
{
    *l = (struct osb_fs_lines){.first = offset, .line = 1};
    l->last = limit > INT64_MAX - offset ? INT64_MAX : offset + limit - 1;
}

static bool selected(const struct osb_fs_lines *l)
{
    return l->line >= l->first && l->line <= l->last;
}

/* Begin the current line in the output: a "\n" separates it from the
 * previous selected line. */
static void open_line(struct osb_fs_lines *l, struct osb_buf *out)
{
    if (l->opened)
        return;
    if (l->emitted++ > 0 && osb_buf_add(out, "\n", 1) < 0)
        l->failed = true;
    l->opened = true;
}

static void emit(struct osb_fs_lines *l, struct osb_buf *out, const char *d, size_t n)
{
    if (!selected(l) || n == 0)
        return;
    open_line(l, out);
    if (osb_buf_add(out, d, n) < 0)
        l->failed = true;
}

/* Content bytes of the current line (no '\n' among them). A '\r' at the
 * end is held back: it is a terminator if a '\n' follows. */
static void content(struct osb_fs_lines *l, const char *p, size_t n, bool terminated,
                    struct osb_buf *out)
{
    if (l->cr) {
        emit(l, out, "\r", 1);
        l->cr = false;
    }
    l->started = true;
    if (p[n - 1] == '\r') {
        n--;
        l->cr = !terminated;
    }
    emit(l, out, p, n);
}

bool osb_fs_lines_feed(struct osb_fs_lines *l, const char *data, size_t len, struct osb_buf *out)
{
    const char *p = data, *end = data + len;
    while (l->line <= l->last && !l->failed) {
        if (p == end)
            return false;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *seg_end = nl ? nl : end;
        if (seg_end > p)
            content(l, p, (size_t)(seg_end - p), nl != NULL, out);
        if (!nl)
            return false;
        l->cr = false;
        if (selected(l))
            open_line(l, out);
        l->line++;
        l->opened = l->started = false;
        p = nl + 1;
    }
    return true;
}

void osb_fs_lines_finish(struct osb_fs_lines *l, struct osb_buf *out)
{
    /* A last line without terminator still counts; a lone trailing '\r'
     * is dropped, as Go's bufio.ScanLines does at EOF. */
    if (l->line <= l->last && l->started && selected(l))
        open_line(l, out);
    l->cr = false;
}
