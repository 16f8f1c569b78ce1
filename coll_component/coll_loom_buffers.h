/*
 * The glue's record of one call (loom_glue_call_t) and the functions of its buffers
 * (coll_loom_buffers.c): the description, dense views, host copies of device buffers. Private to
 * coll_component/.
 */
#ifndef COLL_LOOM_BUFFERS_H
#define COLL_LOOM_BUFFERS_H

#include "coll_loom.h"
#include "loom_device.h"

#include <stdlib.h>

BEGIN_C_DECLS

/* A dense view of a buffer, what an algorithm sees: the user's memory itself, or a scratch
 * copy (owned) that is filled from it before the run and emptied into it after. */
typedef struct loom_view {
    char *data;
    char *scratch;
} loom_view_t;

/* A host copy of the memory a device buffer's blocks span (device buffers whose datatypes
 * need host-side copies, and device calls handed on). */
typedef struct loom_host_copy {
    void *user; /* NULL: none */
    char *host;
    ptrdiff_t start;
    size_t bytes;
} loom_host_copy_t;

/* The glue's whole record of a call. */
typedef struct loom_glue_call {
    const loom_mpi_call_t *mpi; /* as received, or on_host once host copies are made */
    loom_mpi_call_t on_host;    /* the call on the host copies of its device buffers */
    loom_call_t core;           /* what the core sees */
    const loom_neighbourhood_t *neighbours; /* the neighbourhood collectives' only: the
                                               communicator's (the pipeline sets it before
                                               loom_describe, their descriptors read it) */
    int dense;                  /* 1: every buffer is used where it is, no dense copy (core's buffers
                             are set by loom_describe) */
    loom_buffer_t send, recv;
    size_t result_count; /* reductions: elements of the result in recv (reduce_scatter: this
                             rank's block; in place the buffer holds more) */
    loom_reduce_plan_t plan;
    size_t inline_counts[64];
    size_t *counts;       /* core.counts' storage (inline_counts, or malloc'd) */
    loom_view_t views[2]; /* send, recv */
    loom_host_copy_t copies[2];
} loom_glue_call_t;

/* ---- the call's buffers (coll_loom_buffers.c) ---- */

/* What every record starts from: mpi, no counts of its own, no dense views, no host copies
 * (then loom_call_fini frees nothing). */
static inline void loom_call_start(loom_glue_call_t *c, const loom_mpi_call_t *mpi)
{
    c->mpi = mpi;
    c->counts = c->inline_counts;
    c->views[0] = c->views[1] = (loom_view_t){NULL, NULL};
    c->copies[0].user = c->copies[1].user = NULL;
    c->copies[0].host = c->copies[1].host = NULL;
}
/* c->counts with room for n counts: the inline ones, or allocated. */
static inline int loom_call_counts(loom_glue_call_t *c, int n)
{
    if ((size_t)n > sizeof(c->inline_counts) / sizeof(c->inline_counts[0])) {
        c->counts = malloc((size_t)n * sizeof(size_t));
        if (NULL == c->counts) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    c->core.counts = c->counts;
    return OMPI_SUCCESS;
}
/* 1 if the buffer's blocks lie end to end as one contiguous run of its data: a data movement's
 * description asks (coll_loom_layouts.c), and its dense views. */
int loom_dense_in_place(const loom_buffer_t *b);
/* Where a dense buffer's data starts. */
static inline char *loom_dense_start(const loom_buffer_t *b)
{
    if (NULL == b->user) return NULL;
    if (NULL != b->dtypes) return (char *)b->user; /* loom_dense_in_place: the blocks start at user */
    ptrdiff_t true_lb, true_extent;
    loom_type_true_extent(b->dtype, &true_lb, &true_extent);
    return (char *)b->user + true_lb;
}
/* Describes mpi, whose collective's row is row (loom_coll_row: the caller's, read once), on comm
 * into c: core call, buffers, reduction plan. Returns NULL, or why loom cannot serve it (the same
 * on every rank); *rc an error code if memory ran out. Release with loom_call_fini. */
const char *loom_describe(loom_glue_call_t *c, const loom_mpi_call_t *mpi, const loom_coll_row_t *row,
                          struct ompi_communicator_t *comm, int *rc);
/* loom_describe and the decision for mpi, a repeat of the served call s (its key matched,
 * loom_repeat_of_args): c is s with mpi's buffers. Returns an error code (memory). */
int loom_describe_repeat(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                         const loom_served_repeat_t *s);
void loom_call_free(loom_glue_call_t *c);
static inline void loom_call_fini(loom_glue_call_t *c)
{
    /* Most calls allocate nothing: one test instead of five calls of free(NULL). */
    if (NULL != c->views[0].scratch || NULL != c->views[1].scratch || NULL != c->copies[0].host ||
        NULL != c->copies[1].host || c->counts != c->inline_counts)
        loom_call_free(c);
}

/* Host copies of the device buffers (their blocks' whole span, holes included), and the
 * call's buffers pointed at them; loom_host_copies_out copies the written ones back.
 * loom_host_copies_in is make (allocate; the call's buffers, its MPI call and a dense call's
 * core buffers pointed at the copies) then fill (device -> host); a persistent request makes
 * them once and fills them at every start. */
int loom_host_copies_in(loom_glue_call_t *c);
int loom_host_copies_make(loom_glue_call_t *c);
int loom_host_copies_fill(const loom_glue_call_t *c);
int loom_host_copies_out(loom_glue_call_t *c);

/* Where c->dense is 0: the dense views of the buffers, set into c->core's buffers;
 * loom_views_out empties the written ones into the user's buffers after the run. */
int loom_views_in(loom_glue_call_t *c);
int loom_views_out(loom_glue_call_t *c);
/* Frees the scratch copies of a dense view (before making them again: a persistent request). */
void loom_views_free(loom_glue_call_t *c);

/* 1 if p is device (CUDA) memory. */
static inline int loom_is_device(const void *p)
{
    return NULL != p && !__atomic_load_n(&loom_device_host_only, __ATOMIC_RELAXED) &&
           LOOM_MEMORY_CUDA == loom_device_memory_kind(p);
}
/* 1: sbuf is MPI_IN_PLACE; 2: the send buffer is the receive buffer; 4: rbuf is MPI_IN_PLACE (a
 * scatter's root); 0: none of these. */
static inline int loom_in_place_of(const void *sbuf, const void *rbuf)
{
    return (MPI_IN_PLACE == sbuf ? 1 : 0) | (NULL != sbuf && sbuf == rbuf ? 2 : 0) | (MPI_IN_PLACE == rbuf ? 4 : 0);
}

END_C_DECLS

#endif /* COLL_LOOM_BUFFERS_H */
