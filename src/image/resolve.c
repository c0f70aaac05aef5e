#include "image/resolve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "image/ref.h"

/* Snapshots stack on their base image, which may itself be a snapshot. */
#define MAX_IMAGE_CHAIN 32

static void add_layer(struct osb_image_res *r, size_t *n, const char *dir)
{
    r->layers = osb_xrealloc(r->layers, (*n + 2) * sizeof *r->layers);
    r->layers[(*n)++] = osb_xstrdup(dir);
    r->layers[*n] = NULL;
}

/* One image of the chain: its layers (stored bottom first) top first;
 * *next gets its base ("" at the bottom). */
static int add_image(struct osb_istore *s, const char *name, int depth, struct osb_image_res *r,
                     size_t *n, char *next, size_t next_n, struct osb_err *err)
{
    struct osb_image im;
    if (osb_istore_get(s, name, &im, err) < 0)
        return -1;
    size_t k = 0;
    while (im.layers && im.layers[k])
        k++;
    for (size_t i = k; i-- > 0;)
        add_layer(r, n, im.layers[i]);
    snprintf(next, next_n, "%s", im.base);
    if (depth == 0) {
        free(r->name);
        r->name = osb_xstrdup(im.name);
        r->config = im;
    } else {
        osb_image_free(&im);
    }
    return 0;
}

static int walk(struct osb_istore *s, char *name, size_t name_n, struct osb_image_res *r,
                struct osb_err *err)
{
    size_t n = 0;
    for (int depth = 0; depth < MAX_IMAGE_CHAIN; depth++) {
        if (strcmp(name, OSB_IMAGE_HOST) == 0) {
            r->host = true;
            return 0;
        }
        if (add_image(s, name, depth, r, &n, name, name_n, err) < 0)
            return -1;
        if (!name[0])
            return 0;
    }
    return osb_err_set(err, OSB_E_INVALID, "image `%s`: its chain of bases is longer than %d",
                       r->name, MAX_IMAGE_CHAIN);
}

int osb_image_resolve(struct osb_istore *s, const char *name, struct osb_image_res *out,
                      struct osb_err *err)
{
    *out = (struct osb_image_res){0};
    char cur[256];
    snprintf(cur, sizeof cur, "%s", name ? name : OSB_IMAGE_HOST);
    struct osb_ref ref;
    if (strcmp(cur, OSB_IMAGE_HOST) != 0 && osb_istore_name_check(cur, NULL) < 0 &&
        osb_ref_parse(cur, &ref, NULL) < 0)
        return osb_err_set(err, OSB_E_INVALID, "`%.200s` is not an image name or reference", cur);
    out->name = osb_xstrdup(cur);
    out->layers = osb_xcalloc(1, sizeof *out->layers);
    if (walk(s, cur, sizeof cur, out, err) < 0) {
        osb_image_res_free(out);
        return -1;
    }
    return 0;
}

void osb_image_res_free(struct osb_image_res *r)
{
    for (size_t i = 0; r->layers && r->layers[i]; i++)
        free(r->layers[i]);
    free(r->layers);
    free(r->name);
    osb_image_free(&r->config);
    *r = (struct osb_image_res){0};
}
