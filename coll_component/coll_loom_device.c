/*
 * Device (CUDA) buffers in the collective entry points: which way a call is served, and the
 * collectives run on host copies of their device buffers. See coll_loom_device.h.
 */
#include "coll_loom_device.h"

#include "loom_device.h"

#include <stdlib.h>

/* 1 while a collective runs on host copies of device buffers (a thread's calls nest once). */
static _Thread_local int on_copies;

static int is_buffer(const void *p) { return NULL != p && MPI_IN_PLACE != p; }

loom_dev_mode_t loom_device_mode(const void *a, struct ompi_datatype_t *ta, const void *b,
                                 struct ompi_datatype_t *tb)
{
    if (on_copies) return LOOM_DEV_DIRECT;
    const int device = (is_buffer(a) && LOOM_MEMORY_CUDA == loom_device_memory_kind(a)) ||
                       (is_buffer(b) && LOOM_MEMORY_CUDA == loom_device_memory_kind(b));
    if (!device) return LOOM_DEV_HOST;
    const char *why;
    if (NULL == loom_device_copier(&why)) return LOOM_DEV_HAND_ON;
    /* A type whose buffer is MPI_IN_PLACE is ignored (MPI lets it be anything). */
    if ((is_buffer(a) && NULL != ta && !loom_dense_instances(ta)) ||
        (is_buffer(b) && NULL != tb && !loom_dense_instances(tb)))
        return LOOM_DEV_COPIES;
    return LOOM_DEV_DIRECT;
}

void loom_device_prepare(loom_call_t *call, loom_dev_mode_t mode)
{
    if (LOOM_DEV_DIRECT != mode) return;
    call->memory = LOOM_MEMORY_CUDA;
    call->copier = loom_device_copier(NULL);
    call->staging_bytes = loom_device_staging_bytes();
}

int loom_device_decline_on_copies(loom_dev_mode_t mode)
{
    return LOOM_DEV_DIRECT == mode && !on_copies;
}

/* ---- host copies of device buffers ---- */

/* A host copy of the bytes that n instances of dtype at buf span. `view` stands for buf. */
typedef struct span {
    void *user;   /* the user's buffer (NULL: nothing staged) */
    char *host;   /* malloc'd copy of [user + start, user + start + bytes) */
    ptrdiff_t start;
    size_t bytes;
    void *view;
} span_t;

/* The bytes [start, start + bytes) relative to buf that blocks of counts[i] instances at
 * displacements displs[i] (in extents) cover; displs NULL: one block of counts[0] at 0. */
static void extent_of(struct ompi_datatype_t *dtype, int n, const int *counts, const int *displs,
                      ptrdiff_t *start, size_t *bytes)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    ptrdiff_t lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < n; ++i) {
        if (counts[i] <= 0) continue;
        const ptrdiff_t first = (NULL != displs ? (ptrdiff_t) displs[i] * extent : 0) + true_lb;
        const ptrdiff_t last = first + true_extent + (ptrdiff_t) (counts[i] - 1) * extent;
        if (!any || first < lo) lo = first;
        if (!any || last > hi) hi = last;
        any = 1;
    }
    *start = lo;
    *bytes = any ? (size_t) (hi - lo) : 0;
}

/* Copies the span in (the output spans too: their holes must keep their contents). */
static int span_in(span_t *s, const void *buf, struct ompi_datatype_t *dtype, int n,
                   const int *counts, const int *displs)
{
    s->user = NULL;
    s->host = NULL;
    s->view = (void *) buf;
    if (!is_buffer(buf)) return OMPI_SUCCESS;
    extent_of(dtype, n, counts, displs, &s->start, &s->bytes);
    s->host = malloc(s->bytes > 0 ? s->bytes : 1);
    if (NULL == s->host) return OMPI_ERR_OUT_OF_RESOURCE;
    s->user = (void *) buf;
    s->view = s->host - s->start;
    return 0 == loom_device_copy(s->host, (const char *) buf + s->start, s->bytes) ? OMPI_SUCCESS
                                                                                   : OMPI_ERROR;
}

static int span_out(const span_t *s)
{
    if (NULL == s->user) return OMPI_SUCCESS;
    return 0 == loom_device_copy((char *) s->user + s->start, s->host, s->bytes) ? OMPI_SUCCESS
                                                                                  : OMPI_ERROR;
}

static void span_fini(span_t *s)
{
    free(s->host);
    s->host = NULL;
}

/* Runs `body` (a call of the collective on the views) between staging in and out. */
#define ON_COPIES(n_spans, spans, outputs, body)                                               \
    do {                                                                                       \
        int rc_ = OMPI_SUCCESS;                                                                \
        for (int i_ = 0; i_ < (n_spans) && OMPI_SUCCESS == rc_; ++i_) rc_ = spans[i_].rc;      \
        if (OMPI_SUCCESS == rc_) {                                                             \
            on_copies = 1;                                                                     \
            rc_ = (body);                                                                      \
            on_copies = 0;                                                                     \
        }                                                                                      \
        for (int i_ = 0; i_ < (n_spans); ++i_) {                                               \
            if (OMPI_SUCCESS == rc_ && (outputs)[i_]) rc_ = span_out(&spans[i_].s);            \
        }                                                                                      \
        for (int i_ = 0; i_ < (n_spans); ++i_) span_fini(&spans[i_].s);                        \
        return rc_;                                                                            \
    } while (0)

typedef struct {
    span_t s;
    int rc;
} staged_t;

static int ints_total(const int *v, int n)
{
    int t = 0;
    for (int i = 0; i < n; ++i) t += v[i];
    return t;
}

int loom_device_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf == rbuf ? NULL : sbuf, dtype, 1, &count, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, dtype, 1, &count, NULL);
    const int out[2] = {0, 1};
    const void *s = sbuf == rbuf ? b[1].s.view : b[0].s.view;
    ON_COPIES(2, b, out, mca_coll_loom_allreduce(s, b[1].s.view, count, dtype, op, comm, module));
}

int loom_device_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       mca_coll_base_module_t *module)
{
    const int is_root = ompi_comm_rank(comm) == root;
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, is_root && sbuf == rbuf ? NULL : sbuf, dtype, 1, &count, NULL);
    b[1].rc = span_in(&b[1].s, is_root ? rbuf : NULL, dtype, 1, &count, NULL);
    const int out[2] = {0, is_root};
    const void *s = is_root && sbuf == rbuf ? b[1].s.view : b[0].s.view;
    ON_COPIES(2, b, out,
              mca_coll_loom_reduce(s, is_root ? b[1].s.view : rbuf, count, dtype, op, root, comm,
                                   module));
}

int loom_device_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    const int total = ints_total(rcounts, ompi_comm_size(comm));
    const int mine = rcounts[ompi_comm_rank(comm)];
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf, dtype, 1, &total, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, dtype, 1, MPI_IN_PLACE == sbuf ? &total : &mine, NULL);
    const int out[2] = {0, 1};
    ON_COPIES(2, b, out,
              mca_coll_loom_reduce_scatter(b[0].s.view, b[1].s.view, rcounts, dtype, op, comm, module));
}

int loom_device_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *module)
{
    const int total = rcount * ompi_comm_size(comm);
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf, dtype, 1, &total, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, dtype, 1, MPI_IN_PLACE == sbuf ? &total : &rcount, NULL);
    const int out[2] = {0, 1};
    ON_COPIES(2, b, out,
              mca_coll_loom_reduce_scatter_block(b[0].s.view, b[1].s.view, rcount, dtype, op, comm,
                                                 module));
}

int loom_device_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    const int total = rcount * ompi_comm_size(comm);
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf, sdtype, 1, &scount, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, rdtype, 1, &total, NULL);
    const int out[2] = {0, 1};
    ON_COPIES(2, b, out,
              mca_coll_loom_allgather(b[0].s.view, scount, sdtype, b[1].s.view, rcount, rdtype, comm,
                                      module));
}

int loom_device_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf, sdtype, 1, &scount, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, rdtype, ompi_comm_size(comm), rcounts, displs);
    const int out[2] = {0, 1};
    ON_COPIES(2, b, out,
              mca_coll_loom_allgatherv(b[0].s.view, scount, sdtype, b[1].s.view, rcounts, displs,
                                       rdtype, comm, module));
}

int loom_device_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    staged_t b[1];
    b[0].rc = span_in(&b[0].s, buf, dtype, 1, &count, NULL);
    const int out[1] = {ompi_comm_rank(comm) != root};
    ON_COPIES(1, b, out, mca_coll_loom_bcast(b[0].s.view, count, dtype, root, comm, module));
}

int loom_device_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    const int size = ompi_comm_size(comm);
    const int stotal = scount * size, rtotal = rcount * size;
    staged_t b[2];
    b[0].rc = span_in(&b[0].s, sbuf, sdtype, 1, &stotal, NULL);
    b[1].rc = span_in(&b[1].s, rbuf, rdtype, 1, &rtotal, NULL);
    const int out[2] = {0, 1};
    ON_COPIES(2, b, out,
              mca_coll_loom_alltoall(b[0].s.view, scount, sdtype, b[1].s.view, rcount, rdtype, comm,
                                     module));
}
