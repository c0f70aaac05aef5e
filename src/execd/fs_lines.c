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
static int open_line(struct osb_fs_lines *l, struct osb_buf *out)
{
    if (l->opened)
        return 0;
    if (l->emitted++ > 0 && osb_buf_add(out, "\n", 1) < 0)
        return -1;
    l->opened = true;
    return 0;
}

static int emit(struct osb_fs_lines *l, struct osb_buf *out, const char *d, size_t n)
{
    if (!selected(l) || n == 0)
        return 0;
    if (open_line(l, out) < 0)
        return -1;
    return osb_buf_add(out, d, n);
}

/* Content bytes of the current line (no '\n' among them). A '\r' at the
 * end is held back: it is a terminator if a '\n' follows. */
static int content(struct osb_fs_lines *l, const char *p, size_t n, bool terminated,
                   struct osb_buf *out)
{
    if (l->cr) {
        if (emit(l, out, "\r", 1) < 0)
            return -1;
        l->cr = false;
    }
    l->started = true;
    if (p[n - 1] == '\r') {
        n--;
        l->cr = !terminated;
    }
    return emit(l, out, p, n);
}

int osb_fs_lines_feed(struct osb_fs_lines *l, const char *data, size_t len, struct osb_buf *out)
{
    const char *p = data, *end = data + len;
    while (l->line <= l->last) {
        if (p == end)
            return 0;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *seg_end = nl ? nl : end;
        if (seg_end > p && content(l, p, (size_t)(seg_end - p), nl != NULL, out) < 0)
            return -1;
        if (!nl)
            return 0;
        l->cr = false;
        if (selected(l) && open_line(l, out) < 0)
            return -1;
        l->line++;
        l->opened = l->started = false;
        p = nl + 1;
    }
    return 1;
}

int osb_fs_lines_finish(struct osb_fs_lines *l, struct osb_buf *out)
{
    /* A last line without terminator still counts; a lone trailing '\r'
     * is dropped, as Go's bufio.ScanLines does at EOF. */
    l->cr = false;
    if (l->line <= l->last && l->started && selected(l))
        return open_line(l, out);
    return 0;
}
