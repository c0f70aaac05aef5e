/* Persisting a sandbox record (and its event): shared by the lifecycle,
 * the API handlers and the network glue, so none of them needs another. */
#include "common/log.h"
#include "server/server.h"

int osb_sbx_save(struct osb_server *srv, struct osb_sbx *s, const char *ev_type, const char *ev_msg,
                 struct osb_apierr *e)
{
    struct osb_err err = {0};
    if (osb_store_put(srv->store, s, ev_type, ev_msg, &err) == 0)
        return 0;
    osb_err_log("store sandbox %s: %s", s->id, err.msg);
    if (e)
        osb_apierr(e, "SANDBOX::STORE_FAILED", "Could not record sandbox %s: %s", s->id, err.msg);
    return -1;
}

void osb_sbx_record(struct osb_server *srv, struct osb_sbx *s, const char *ev_type,
                    const char *ev_msg)
{
    if (osb_sbx_save(srv, s, ev_type, ev_msg, NULL) < 0)
        osb_debug("sandbox %s: the change (%s) lives in memory only", s->id,
                  ev_type ? ev_type : "record");
}
