/* Who uses an image: answered from the sandbox records (the runtime keeps
 * no image knowledge). A record holds its image until its runtime state
 * is gone: an ended sandbox (Terminated, Failed) keeps only its log. */
#include <stdio.h>
#include <string.h>

#include "server/server.h"

static bool holds_state(const struct osb_sbx *s)
{
    return s->state == OSB_ST_PENDING || s->state == OSB_ST_RUNNING || s->state == OSB_ST_PAUSED ||
           s->state == OSB_ST_STOPPING;
}

bool osb_images_used_by(const struct osb_sbx_index *reg, const char *name, char *by, size_t n)
{
    if (n)
        by[0] = '\0';
    size_t k = osb_reg_count(reg);
    for (size_t i = 0; i < k; i++) {
        const struct osb_sbx *s = osb_reg_at(reg, i);
        if (holds_state(s) && s->image[0] && strcmp(s->image, name) == 0) {
            if (n)
                snprintf(by, n, "%s", s->id);
            return true;
        }
    }
    return false;
}

bool osb_images_in_use_cb(void *ud, const char *name)
{
    return osb_images_used_by(ud, name, NULL, 0);
}
