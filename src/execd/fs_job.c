#include "execd/fs_job.h"

#include <stdlib.h>
#include <uv.h>

#include "common/xalloc.h"
#include "execd/errmap.h"

struct osb_fs_job {
    uv_work_t work;
    struct osb_http_req *req; /* NULL once the client is gone */
    osb_fs_job_fn run;
    void *ud;
    void (*free_ud)(void *ud);
    json_t *result;
    bool failed;
    struct osb_err err;
};

static void on_gone(struct osb_http_req *req, void *ud)
{
    (void)req;
    struct osb_fs_job *job = ud;
    job->req = NULL;
}

static void work_cb(uv_work_t *w)
{
    struct osb_fs_job *job = w->data;
    job->failed = job->run(job, job->ud, &job->err) < 0;
}

static void after_cb(uv_work_t *w, int status)
{
    struct osb_fs_job *job = w->data;
    (void)status;
    if (job->req) {
        osb_http_req_on_close(job->req, NULL, NULL);
        if (job->failed)
            osb_execd_respond_err(job->req, &job->err);
        else if (job->result)
            osb_http_respond_json(job->req, 200, json_incref(job->result));
        else
            osb_http_respond_empty(job->req, 200);
    }
    json_decref(job->result);
    if (job->free_ud)
        job->free_ud(job->ud);
    free(job);
}

void osb_fs_job_run(uv_loop_t *loop, struct osb_http_req *req, osb_fs_job_fn run, void *ud,
                    void (*free_ud)(void *ud))
{
    struct osb_fs_job *job = osb_xcalloc(1, sizeof *job);
    job->req = req;
    job->run = run;
    job->ud = ud;
    job->free_ud = free_ud;
    job->work.data = job;
    osb_http_req_on_close(req, on_gone, job);
    if (uv_queue_work(loop, &job->work, work_cb, after_cb) < 0) {
        job->failed = true;
        osb_err_set(&job->err, OSB_E_INTERNAL, "cannot queue the file operation");
        after_cb(&job->work, 0);
    }
}

void osb_fs_job_result(struct osb_fs_job *job, json_t *j)
{
    json_decref(job->result);
    job->result = j;
}
