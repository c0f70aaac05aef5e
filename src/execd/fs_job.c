#include "execd/fs_job.h"

#include <stdlib.h>
#include <uv.h>

#include "common/xalloc.h"

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

static void status_of(const struct osb_err *err, int *status, const char **code)
{
    switch (err->code) {
    case OSB_E_INVALID:
        *status = 400, *code = "INVALID_REQUEST_BODY";
        break;
    case OSB_E_NOTFOUND:
        *status = 404, *code = "FILE_NOT_FOUND";
        break;
    default:
        *status = 500, *code = "RUNTIME_ERROR";
        break;
    }
}

void osb_fs_respond_err(struct osb_http_req *req, const struct osb_err *err)
{
    int status;
    const char *code;
    status_of(err, &status, &code);
    osb_http_respond_error(req, status, code, "%s", err->msg);
}

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
            osb_fs_respond_err(job->req, &job->err);
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

void osb_fs_job_run(struct osb_http_req *req, osb_fs_job_fn run, void *ud,
                    void (*free_ud)(void *ud))
{
    struct osb_fs_job *job = osb_xcalloc(1, sizeof *job);
    job->req = req;
    job->run = run;
    job->ud = ud;
    job->free_ud = free_ud;
    job->work.data = job;
    osb_http_req_on_close(req, on_gone, job);
    uv_queue_work(uv_default_loop(), &job->work, work_cb, after_cb);
}

void osb_fs_job_result(struct osb_fs_job *job, json_t *j)
{
    json_decref(job->result);
    job->result = j;
}
