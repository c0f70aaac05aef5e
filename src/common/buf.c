#include "common/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void osb_buf_init(struct osb_buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void osb_buf_free(struct osb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void osb_buf_reset(struct osb_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Room for `more` bytes after the current ones (and the NUL). */
static int grow(struct osb_buf *b, size_t more)
{
    if (more > b->max - b->len || b->len + more == SIZE_MAX)
        return -1;
    size_t need = b->len + more;
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    if (b->max < SIZE_MAX && cap > b->max + 1)
        cap = b->max + 1;
    b->data = osb_xrealloc(b->data, cap);
    b->cap = cap;
    return 0;
}

int osb_buf_add(struct osb_buf *b, const void *data, size_t len)
{
    if (grow(b, len) < 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int osb_buf_adds(struct osb_buf *b, const char *s)
{
    return osb_buf_add(b, s, strlen(s));
}

int osb_buf_addf(struct osb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void osb_buf_consume(struct osb_buf *b, size_t n)
{
    if (n >= b->len) {
        osb_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *osb_buf_steal(struct osb_buf *b, size_t *len)
{
    /* Cannot fail: len never exceeds max, and NUL room is always granted. */
    if (!b->data) {
        b->data = osb_xmalloc(1);
        b->data[0] = '\0';
    }
    char *d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}
