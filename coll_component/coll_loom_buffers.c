/*
 * A call's buffers, from MPI's description to what an algorithm sees.
 *
 * loom_describe turns the MPI arguments into the core's call (loom_call_t: counts in
 * elements for reductions, in bytes for data movement) and into at most two buffers (send,
 * receive), each some blocks of instances of a datatype. Then two kinds of copies, each only
 * where it is needed:
 *
 *   dense views   an algorithm sees dense memory. A buffer whose data is one contiguous run
 *                 is used where it is; otherwise it is copied: packed into bytes for the
 *                 data-movement collectives (ranks may use different datatypes of the same
 *                 type signature), copied in its own layout for reductions (the op works on
 *                 the datatype's instances; holes are zeroed and never written back).
 *   host copies   device buffers (CUDA) whose dense view would need a copy are first copied
 *                 whole to host memory (their blocks' span, holes included, so the holes
 *                 keep their contents), as are the buffers of a device call loom hands on:
 *                 this Open MPI cannot read device memory.
 *
 * A device call whose views are all in place runs on the device memory itself; its
 * algorithm is staged through host buffers by the core (algorithms/staging.hpp). Every
 * decision here depends only on counts, datatypes' layouts and the op, which every rank
 * shares (data-movement datatypes only through their sizes), except whether a copy is made,
 * which is local and invisible to the other ranks.
 */
#include "coll_loom_layouts.h"
#include "coll_loom_buffers.h"
#include "coll_loom_repeat.h"

#include "loom_device.h"

#include <stdlib.h>
#include <string.h>

static size_t block_count(const loom_buffer_t *b, int i)
{
    return loom_counts_given(b->counts) ? (size_t)loom_count_at(b->counts, i) : b->count;
}

static ptrdiff_t block_displ(const loom_buffer_t *b, int i)
{
    return loom_displs_given(b->displs) ? loom_displ_at(b->displs, i) : (ptrdiff_t)i * (ptrdiff_t)b->count;
}

static size_t total_instances(const loom_buffer_t *b)
{
    size_t n = 0;
    for (int i = 0; i < b->blocks; ++i) n += (size_t)block_count(b, i);
    return n;
}

/* Block i's datatype, where it starts (bytes from b->user) and its data's bytes: alltoallw's
 * blocks each have their own datatype and a displacement in bytes. */
static struct ompi_datatype_t *block_type(const loom_buffer_t *b, int i)
{
    return NULL != b->dtypes ? b->dtypes[i] : b->dtype;
}
static ptrdiff_t block_offset(const loom_buffer_t *b, int i)
{
    if (loom_adispls_given(b->adispls)) return loom_adispl_at(b->adispls, i);
    return NULL != b->dtypes ? loom_displ_at(b->displs, i) : block_displ(b, i) * loom_type_extent(b->dtype);
}
static size_t block_bytes(const loom_buffer_t *b, int i) { return block_count(b, i) * loom_type_size(block_type(b, i)); }

/* 1 if the buffer's blocks lie end to end as one contiguous run of its data. */
int loom_dense_in_place(const loom_buffer_t *b)
{
    if (NULL == b->user) return 1;
    if (NULL != b->dtypes) { /* each block one dense run of its datatype, end to end from user */
        size_t at = 0;
        for (int i = 0; i < b->blocks; ++i) {
            const size_t n = block_count(b, i);
            if (0 == n) continue;
            ptrdiff_t true_lb, true_extent;
            loom_type_true_extent(block_type(b, i), &true_lb, &true_extent);
            if (0 != true_lb || block_offset(b, i) != (ptrdiff_t)at || !loom_dense_run(block_type(b, i), n)) return 0;
            at += block_bytes(b, i);
        }
        return 1;
    }
    ptrdiff_t next = 0;
    for (int i = 0; i < b->blocks; ++i) {
        if (block_displ(b, i) != next) return 0;
        next += (ptrdiff_t)block_count(b, i);
    }
    return loom_dense_run(b->dtype, total_instances(b));
}

/* ---- describing a call ---- */

/* By the collective's layout: its descriptor (coll_loom_layouts.c) describes the call whole,
 * op plan or dense views included. */
const char *loom_describe(loom_glue_call_t *c, const loom_mpi_call_t *mpi, const loom_coll_row_t *row,
                          struct ompi_communicator_t *comm, int *rc)
{
    *rc = OMPI_SUCCESS;
    loom_call_start(c, mpi);
    c->core = (loom_call_t){.coll = mpi->coll};
    c->result_count = 0;
    c->send.user = c->recv.user = NULL; /* until the layout's description sets them */
    return loom_layouts[row->layout].describe(c, mpi, row, comm, rc);
}

int loom_describe_repeat(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                         const loom_served_repeat_t *s)
{
    loom_call_start(c, mpi);
    c->result_count = s->result_count;
    c->dense = 1;
    c->send = s->send;
    c->recv = s->recv;
    loom_repeat_core(s, mpi, &c->core, &c->plan, &c->send.user, &c->recv.user);
    if (!s->has_counts) return OMPI_SUCCESS;
    const int size = ompi_comm_size(comm);
    const int rc = loom_call_counts(c, size);
    for (int i = 0; OMPI_SUCCESS == rc && i < size; ++i) c->counts[i] = s->each_count;
    return rc;
}

void loom_views_free(loom_glue_call_t *c)
{
    for (int i = 0; i < 2; ++i) {
        free(c->views[i].scratch);
        c->views[i] = (loom_view_t){NULL, NULL};
    }
}

void loom_call_free(loom_glue_call_t *c)
{
    loom_views_free(c);
    for (int i = 0; i < 2; ++i) {
        free(c->copies[i].host);
        c->copies[i].host = NULL;
    }
    if (c->counts != c->inline_counts) free(c->counts);
    c->counts = c->inline_counts;
}

/* ---- dense views ---- */

/* The data-movement view of b: the user's memory if it is one dense run, else a scratch
 * buffer holding the read blocks packed at their dense offsets. */
static int movement_view_in(loom_view_t *v, const loom_buffer_t *b)
{
    if (NULL == b->user) return OMPI_SUCCESS;
    if (loom_dense_in_place(b)) {
        v->data = loom_dense_start(b);
        return OMPI_SUCCESS;
    }
    size_t bytes = 0;
    for (int i = 0; i < b->blocks; ++i) bytes += block_bytes(b, i);
    v->data = v->scratch = malloc(bytes > 0 ? bytes : 1);
    if (NULL == v->scratch) return OMPI_ERR_OUT_OF_RESOURCE;
    size_t offset = 0;
    for (int i = 0; i < b->blocks; ++i) {
        /* An empty block is not packed: alltoallw may give it any datatype (even MPI_DATATYPE_NULL). */
        if ((LOOM_READ_ALL == b->read || i == b->read) && 0 != block_count(b, i)) {
            int rc = loom_pack((char *)b->user + block_offset(b, i), block_count(b, i), block_type(b, i), v->data + offset);
            if (OMPI_SUCCESS != rc) return rc;
        }
        offset += block_bytes(b, i);
    }
    return OMPI_SUCCESS;
}

static int movement_view_out(const loom_view_t *v, const loom_buffer_t *b)
{
    if (NULL == v->scratch || !b->written) return OMPI_SUCCESS;
    size_t offset = 0;
    for (int i = 0; i < b->blocks; ++i) {
        if (0 == block_count(b, i)) continue;
        int rc = loom_unpack(v->data + offset, (char *)b->user + block_offset(b, i), block_count(b, i), block_type(b, i));
        if (OMPI_SUCCESS != rc) return rc;
        offset += block_bytes(b, i);
    }
    return OMPI_SUCCESS;
}

int loom_views_in(loom_glue_call_t *c)
{
    if (!loom_coll_reduces(c->mpi->coll)) {
        int rc = movement_view_in(&c->views[0], &c->send);
        if (OMPI_SUCCESS == rc) rc = movement_view_in(&c->views[1], &c->recv);
        c->core.sbuf = c->views[0].data;
        c->core.rbuf = c->views[1].data;
        return rc;
    }
    /* A datatype with holes: the input is copied, in its layout, into one dense buffer
     * (holes zeroed: no undefined byte is sent) and the algorithm runs in place there - or,
     * on a rank with no result (a non-root of reduce), with it as its send buffer. */
    const loom_buffer_t *in = NULL != c->send.user ? &c->send : &c->recv;
    const size_t n = in->count;
    const size_t bytes = n * (size_t)loom_type_extent(in->dtype);
    loom_view_t *v = &c->views[1];
    v->data = v->scratch = calloc(bytes > 0 ? bytes : 1, 1);
    if (NULL == v->scratch) return OMPI_ERR_OUT_OF_RESOURCE;
    const int written = c->recv.written;
    c->core.sbuf = written ? NULL : v->data;
    c->core.rbuf = written ? v->data : NULL;
    return loom_copy_elements(v->data, in->user, n, in->dtype);
}

int loom_views_out(loom_glue_call_t *c)
{
    if (!loom_coll_reduces(c->mpi->coll)) return movement_view_out(&c->views[1], &c->recv);
    if (!c->recv.written) return OMPI_SUCCESS;
    return loom_copy_elements(c->recv.user, c->views[1].data, c->result_count, c->recv.dtype);
}

/* ---- host copies of device buffers ---- */

/* The bytes [*start, *start + *bytes) relative to b->user that its blocks cover. */
static void span_of(const loom_buffer_t *b, ptrdiff_t *start, size_t *bytes)
{
    ptrdiff_t lo = 0, hi = 0;
    int any = 0;
    for (int i = 0; i < b->blocks; ++i) {
        const size_t n = block_count(b, i);
        if (0 == n) continue;
        const ptrdiff_t extent = loom_type_extent(block_type(b, i));
        ptrdiff_t true_lb, true_extent;
        loom_type_true_extent(block_type(b, i), &true_lb, &true_extent);
        const ptrdiff_t first = block_offset(b, i) + true_lb;
        const ptrdiff_t last = first + true_extent + (ptrdiff_t)(n - 1) * extent;
        if (!any || first < lo) lo = first;
        if (!any || last > hi) hi = last;
        any = 1;
    }
    *start = lo;
    *bytes = any ? (size_t)(hi - lo) : 0;
}

static int host_copy_make(loom_host_copy_t *h, loom_buffer_t *b)
{
    if (NULL == b->user || LOOM_MEMORY_CUDA != loom_device_memory_kind(b->user)) return OMPI_SUCCESS;
    span_of(b, &h->start, &h->bytes);
    h->host = malloc(h->bytes > 0 ? h->bytes : 1);
    if (NULL == h->host) return OMPI_ERR_OUT_OF_RESOURCE;
    h->user = b->user;
    b->user = h->host - h->start;
    return OMPI_SUCCESS;
}

/* A core buffer pointer set into h's device span (a dense call's) moves to the host copy. */
static void *rebased(void *p, const loom_host_copy_t *h)
{
    const char *first = (const char *)h->user + h->start;
    if (NULL == h->user || NULL == p || (const char *)p < first || (const char *)p > first + h->bytes) return p;
    return h->host + ((const char *)p - first);
}

int loom_host_copies_make(loom_glue_call_t *c)
{
    int rc = host_copy_make(&c->copies[0], &c->send);
    if (OMPI_SUCCESS == rc) rc = host_copy_make(&c->copies[1], &c->recv);
    /* The MPI call, for handing on, points at the copies too. */
    c->on_host = *c->mpi;
    if (NULL != c->copies[0].user) c->on_host.sbuf = c->send.user;
    if (NULL != c->copies[1].user) {
        if (c->on_host.sbuf == c->on_host.rbuf) c->on_host.sbuf = c->recv.user; /* allreduce/reduce in place */
        c->on_host.rbuf = c->recv.user;
    }
    c->mpi = &c->on_host;
    /* A dense call's core buffers were set on the user's memory by loom_describe. */
    if (c->dense)
        for (int i = 0; i < 2; ++i) {
            c->core.sbuf = rebased((void *)c->core.sbuf, &c->copies[i]);
            c->core.rbuf = rebased(c->core.rbuf, &c->copies[i]);
        }
    return rc;
}

int loom_host_copies_fill(const loom_glue_call_t *c)
{
    for (int i = 0; i < 2; ++i) {
        const loom_host_copy_t *h = &c->copies[i];
        if (NULL != h->user && 0 != loom_device_copy(h->host, (const char *)h->user + h->start, h->bytes))
            return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

int loom_host_copies_in(loom_glue_call_t *c)
{
    const int rc = loom_host_copies_make(c);
    return OMPI_SUCCESS == rc ? loom_host_copies_fill(c) : rc;
}

int loom_host_copies_out(loom_glue_call_t *c)
{
    const loom_host_copy_t *h = &c->copies[1];
    if (NULL == h->user || !c->recv.written) return OMPI_SUCCESS;
    return 0 == loom_device_copy((char *)h->user + h->start, h->host, h->bytes) ? OMPI_SUCCESS : OMPI_ERROR;
}
