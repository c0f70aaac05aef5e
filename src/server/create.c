/* The create pipeline (create.h) as a job, so that the POST handler and
 * the server's own creators (batch, pools) share one path. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/random.h"
#include "common/xalloc.h"
#include "server/admit.h"
#include "server/complete.h"
#include "server/create.h"
#include "server/pull.h"
#include "server/metrics.h"
#include "server/server.h"
#include "server/snapshots.h"
#include "server/volumes.h"

struct osb_create_job {
    struct osb_server *srv;
    struct osb_create_spec spec; /* while pulling or making claims */
    osb_create_done done;        /* NULL once detached */
    void *ud;
    void (*on_detach)(void *); /* a pool claim's: leave its queue at once */
    void *detach_ud;
    bool starting; /* inside osb_create_start: finish must not free */
    bool finished;
    uint64_t t0;               /* uv_hrtime at the start: create-to-ready */
    struct osb_admit_slot adm; /* admission (admit.h) */
};

static void job_free(struct osb_create_job *job)
{
    osb_spec_release(&job->spec);
    free(job);
}

void osb_create_finish(struct osb_create_job *job, struct osb_sbx *s, const struct osb_apierr *e)
{
    osb_create_done done = job->done;
    job->done = NULL;
    job->finished = true;
    osb_metrics_create(job->srv->metrics,
                       e   ? e->code
                       : s ? NULL
                           : "cancelled",
                       (double)(uv_hrtime() - job->t0) / 1e9);
    osb_admit_leave(job->srv, &job->adm);
    if (done)
        done(job->ud, s, e);
    if (!job->starting) /* else osb_create_start frees it */
        job_free(job);
}

bool osb_create_detached(const struct osb_create_job *job)
{
    return !job->done;
}

void osb_create_detach(struct osb_create_job *job)
{
    if (job->adm.state == OSB_ADMIT_QUEUED) {
        /* Not started: nothing exists yet, and its place goes at once. */
        osb_admit_leave(job->srv, &job->adm);
        job_free(job);
        return;
    }
    /* A pull or claim in flight sees it when it calls back; the lifecycle
     * finishes the job without an answer. */
    job->done = NULL;
    if (job->on_detach)
        job->on_detach(job->detach_ud); /* may finish the job */
}

void osb_create_on_detach(struct osb_create_job *job, void (*fn)(void *), void *ud)
{
    job->on_detach = fn;
    job->detach_ud = ud;
}

/* A failure before the record exists: logged once, answered, job over. */
static void fail(struct osb_create_job *job, const char *phase, const struct osb_apierr *e)
{
    osb_lc_create_failed(job->spec.id, phase, e->status, e->code, e->msg);
    osb_create_finish(job, NULL, e);
}

static void with_claims(struct osb_create_job *job);

static void lc_done(void *ud, struct osb_sbx *s, const struct osb_apierr *e)
{
    osb_create_finish(ud, s, e);
}

static void on_claims(void *ud, const struct osb_apierr *e)
{
    struct osb_create_job *job = ud;
    if (e)
        fail(job, "volumes", e);
    else if (!job->done)
        osb_create_finish(job, NULL, NULL); /* detached: nothing was created */
    else
        with_claims(job);
}

/* Claims to make or mount are done on the thread pool first; the check is
 * repeated after, and the create starts in the turn it passes. */
static void with_claims(struct osb_create_job *job)
{
    struct osb_apierr e;
    int rc = osb_vol_check(job->srv, &job->spec, &e);
    if (rc < 0) {
        fail(job, "volumes", &e);
        return;
    }
    if (rc > 0) {
        osb_vol_ensure(job->srv, &job->spec, on_claims, job);
        return;
    }
    osb_lc_create(job->srv, &job->spec, lc_done, job);
}

static void complete(struct osb_create_job *job)
{
    osb_spec_complete(&job->spec, job->spec.runtime);
    if (job->spec.pool_member && job->srv->pool_member_prepare) /* a pool's refill */
        job->srv->pool_member_prepare(job->srv, &job->spec);
    with_claims(job);
}

/* After a pull (or for a snapshot): the one lookup of the
 * image this create makes, then complete the spec with it. */
static void resolve(struct osb_create_job *job)
{
    struct osb_err err = {0};
    struct osb_create_spec *spec = &job->spec;
    if (osb_spec_resolve(job->srv->images, spec, &err) < 0) {
        struct osb_apierr e;
        osb_pull_apierr(&err, spec->snapshot_id ? spec->snapshot_id : spec->image, &e);
        fail(job, "image", &e);
        return;
    }
    complete(job);
}

static struct osb_create_job *job_of(struct osb_admit_slot *slot)
{
    return (struct osb_create_job *)((char *)slot - offsetof(struct osb_create_job, adm));
}

/* A create slot again after the pull (admit.h): resolve. */
static void on_resumed(struct osb_admit_slot *slot, const struct osb_apierr *e)
{
    struct osb_create_job *job = job_of(slot);
    osb_metrics_admission_wait(job->srv->metrics, (double)(uv_hrtime() - job->t0) / 1e9);
    if (e)
        fail(job, "admission", e); /* only at shutdown */
    else
        resolve(job);
}

static void on_pulled(void *ud, const struct osb_err *err)
{
    struct osb_create_job *job = ud;
    if (err) {
        struct osb_apierr e;
        osb_pull_apierr(err, job->spec.image, &e);
        fail(job, "image", &e);
    } else if (!job->done) {
        osb_create_finish(job, NULL, NULL);
    } else {
        osb_admit_resume(job->srv, &job->adm, on_resumed);
    }
}

/* Returns false when the job is over (done called). */
static bool choose_backend(struct osb_create_job *job)
{
    struct osb_apierr e;
    struct osb_create_spec *spec = &job->spec;
    /* The backend first: a refused one must not cost a pull or a lookup. */
    struct osb_rt *rt = osb_backend_choose(job->srv, spec->runtime_req, &e);
    if (!rt) {
        fail(job, "request", &e);
        return false;
    }
    spec->runtime = osb_rt_name(rt);
    if (spec->snapshot_id) {
        char image[256];
        if (osb_snaps_image_for(job->srv, spec->snapshot_id, image, sizeof image, &e) < 0) {
            fail(job, "snapshot", &e);
            return false;
        }
        free(spec->image);
        spec->image = osb_xstrdup(image);
    }
    return true;
}

/* A claim from a pool (server/pools.h): no backend choice, no image work. */
static void claim(struct osb_create_job *job)
{
    if (job->srv->pool_claim) {
        job->srv->pool_claim(job->srv, &job->spec, job);
        return;
    }
    struct osb_apierr e;
    osb_apierr(&e, "SANDBOX::POOL_NOT_FOUND", "Pool %s not found (this server has no pools).",
               job->spec.pool_ref);
    fail(job, "request", &e);
}

static void run(struct osb_create_job *job)
{
    /* The image is resolved once; only one not in the store (nor a
     * snapshot's) is pulled first, and resolved after the pull. Docker
     * provisions inside the request (protocol.md 1.4): so do we. */
    struct osb_err ierr = {0};
    if (job->spec.snapshot_id)
        resolve(job);
    else if (osb_spec_resolve(job->srv->images, &job->spec, &ierr) == 0)
        complete(job);
    else {
        /* the pull is the network's time: its create slot goes to another */
        osb_admit_suspend(job->srv, &job->adm);
        osb_pull_ensure(job->srv, &job->spec, on_pulled, job);
    }
}

bool osb_create_queued(const struct osb_create_job *job)
{
    return job->adm.state == OSB_ADMIT_QUEUED;
}

/* Admitted: the pipeline starts; or refused (429): the job is over. */
static void on_admit(struct osb_admit_slot *slot, const struct osb_apierr *e)
{
    struct osb_create_job *job = job_of(slot);
    osb_metrics_admission_wait(job->srv->metrics, (double)(uv_hrtime() - job->t0) / 1e9);
    if (e)
        fail(job, "admission", e);
    else if (choose_backend(job))
        run(job);
}

struct osb_create_job *osb_create_start(struct osb_server *srv, struct osb_create_spec *spec,
                                        osb_create_done done, void *ud)
{
    struct osb_create_job *job = osb_xcalloc(1, sizeof *job);
    job->srv = srv;
    job->spec = *spec;
    memset(spec, 0, sizeof *spec);
    job->done = done;
    job->ud = ud;
    job->starting = true;
    job->t0 = uv_hrtime();
    if (!job->spec.id[0])
        osb_random_uuid4(job->spec.id);
    if (job->spec.pool_ref)
        claim(job);
    else
        osb_admit(srv, &job->adm, on_admit);
    job->starting = false;
    if (!job->finished)
        return job;
    job_free(job);
    return NULL;
}
