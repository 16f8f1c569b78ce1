/*
 * One collective call inside the glue: its record, and what the files that take it through
 * the pipeline (coll_loom_call.c) and run it share. Private to coll_component/; its README
 * maps the files and the order they call each other in.
 */
#ifndef COLL_LOOM_CALL_H
#define COLL_LOOM_CALL_H

#include "coll_loom.h"
#include "loom_device.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/runtime/mpiruntime.h" /* ompi_mpi_thread_multiple */

BEGIN_C_DECLS

/* loom_buffer_t.read: which blocks of a buffer the call reads on this rank. */
enum { LOOM_READ_NONE = -1, LOOM_READ_ALL = -2 /* >= 0: that block only */ };

/* One buffer of a call on this rank, as MPI describes it: `blocks` blocks, block i being
 * counts[i] (or `count`) instances of dtype at user + displs[i] (or i x count) extents. */
typedef struct loom_buffer {
    void *user; /* the user's buffer, or its host copy; NULL: none on this rank */
    struct ompi_datatype_t *dtype;
    int blocks;
    size_t count;
    const int *counts; /* NULL: `count` instances in every block */
    const int *displs; /* NULL: block i at i x count */
    struct ompi_datatype_t *const *dtypes; /* alltoallw: block i's datatype (dtype unused), and
                                              displs in bytes; NULL: dtype for every block */
    int read;          /* LOOM_READ_* or a block index */
    int written;       /* 1: the call writes it */
} loom_buffer_t;

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
/* Describes mpi on comm into c: core call, buffers, reduction plan. Returns NULL, or why loom
 * cannot serve it (the same on every rank); *rc an error code if memory ran out. Release with
 * loom_call_fini. */
const char *loom_describe(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, int *rc);
struct loom_served_repeat;
/* loom_describe and the decision for mpi, a repeat of the served call s (its key matched,
 * loom_repeat_of_args): c is s with mpi's buffers. Returns an error code (memory). */
int loom_describe_repeat(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                         const struct loom_served_repeat *s);
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

/* ---- the pipeline (coll_loom_call.c) ---- */

/* A served call kept for its repeats (loom_repeat_t.served, coll_loom_repeat.c): loom_describe's
 * result and the chooser's decision, less what changes from call to call - the buffers'
 * addresses. Only calls whose every buffer is used in place (dense, host memory) and whose
 * counts are the same for every rank are kept, so a repeat needs only its addresses filled in. */
typedef struct loom_served_repeat {
    loom_call_t core;           /* as chosen, before loom_apply_tuning; sbuf, rbuf, counts unset */
    loom_buffer_t send, recv;   /* user unset */
    int send_used, recv_used;   /* 1: send.user is the call's sbuf (recv.user its rbuf), else NULL */
    ptrdiff_t send_lb, recv_lb; /* core.sbuf - send.user, core.rbuf - recv.user */
    int has_counts;             /* 1: core.counts has comm size entries, each each_count */
    size_t each_count;
    size_t result_count;
    loom_reduce_plan_t plan;
    const char *algorithm, *rule;
} loom_served_repeat_t;

/* What the pipeline decided for a call: served by `algorithm` (chosen by `rule`), or handed on
 * (algorithm NULL) for `why`, already counted as such. */
typedef struct loom_decision {
    const char *algorithm, *rule, *why;
    /* A blocking repeat served from the kept call as it is, with no record made (the record
     * given to loom_decide is untouched): run it with loom_repeat_core. */
    const loom_served_repeat_t *kept;
    int device;        /* device buffers: a blocking call's algorithm is staged (the core's copier),
                          an operation runs on host copies; handed on, on host copies */
    int begin_setup;   /* non-blocking: the call starts the set-up of the communicator's segment, as
                          an operation launched before its own (the segment is PENDING) */
    void *own_segment; /* persistent: the segment of its own its algorithm runs on, or NULL */
    void *tune;        /* online tuning: the class whose trial this call is (step 4 times it), or NULL */
    int tune_candidate;
    long long tune_entry_ns; /* online tuning: when the call entered the pipeline (CLOCK_MONOTONIC) */
} loom_decision_t;

/* The pipeline: describes mpi on comm into c, finds its memory kind, chooses, remembers; the
 * same on every rank. repeat: the kept decision the entry point found for mpi
 * (loom_repeat_of_args; NULL: none). An error code (memory); then c is to be released with
 * loom_call_fini, as it is after a decision that is not d->kept. */
int loom_decide_call(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                     mca_coll_loom_module_t *module, const loom_repeat_t *repeat, loom_decision_t *d);
/* loom_decide_call, with the decision for a repeat of a served call inline (unless it was
 * handed back from below): a blocking one without per-rank counts runs from the kept record
 * itself (d->kept), any other is described from it (loom_describe_repeat). Inline, so that the
 * forms' tests of the decision fold away on a repeat: a repeat is an application's usual call
 * (tools/dev/call-instructions). blocking: 1 if mpi->kind is LOOM_BLOCKING (a constant of the
 * form's code, so that these tests fold too). */
static inline int loom_decide(loom_glue_call_t *c, const loom_mpi_call_t *mpi, int blocking,
                              struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                              const loom_repeat_t *repeat, loom_decision_t *d)
{
    if (NULL == repeat || !repeat->is_served || (blocking && 0 != (module->handing_on & (1u << mpi->coll))))
        return loom_decide_call(c, mpi, comm, module, repeat, d);
    const struct loom_served_repeat *s = repeat->served;
    if (blocking && !s->has_counts) {
        d->kept = s;
        return OMPI_SUCCESS;
    }
    const int rc = loom_describe_repeat(c, mpi, comm, s);
    /* Set after the call, so that a compiler sees what the form then tests. */
    *d = (loom_decision_t){.algorithm = s->algorithm, .rule = s->rule};
    return rc;
}

/* A served repeat's core call for mpi (into *core): s's, with mpi's buffers at the kept offsets;
 * *send_user and *recv_user get the user buffers the kept call used (NULL where it used none).
 * The reduction plan is copied into *plan, which the core call's op then reads (Open MPI's op
 * adapter reads its plan through the reduction's context): s may change while the call runs (a
 * collective the run makes on the communicator, the topology's at verbose >= 1, can overwrite
 * it). For loom_describe_repeat and a blocking call's d->kept. */
static inline void loom_repeat_core(const loom_served_repeat_t *s, const loom_mpi_call_t *mpi, loom_call_t *core,
                                    loom_reduce_plan_t *plan, void **send_user, void **recv_user)
{
    *core = s->core;
    *send_user = s->send_used ? (void *)mpi->sbuf : NULL;
    *recv_user = s->recv_used ? mpi->rbuf : NULL;
    core->sbuf = NULL != *send_user ? (const char *)*send_user + s->send_lb : NULL;
    core->rbuf = NULL != *recv_user ? (char *)*recv_user + s->recv_lb : NULL;
    *plan = s->plan;
    if (s->core.op.ctx == &s->plan) core->op.ctx = plan->reduction.ctx = plan;
}

/* Open MPI's tag for each blocking collective (collectives.def's tag): a blocking call's
 * messages, and a segment's set-up inside a call. A collective Open MPI gives no tag of its own
 * (tag none: the neighbourhood collectives) takes the first of Open MPI's neighbourhood tags. */
#define MCA_COLL_BASE_TAG_none MCA_COLL_BASE_TAG_NEIGHBOR_BASE
static inline int loom_blocking_tag(loom_coll_t coll)
{
    static const int tags[LOOM_COLL_COUNT] = {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    [LOOM_COLL_##NAME] = MCA_COLL_BASE_TAG_##tag,
#include "collectives.def"
#undef LOOM_COLLECTIVE
    };
    return tags[coll];
}

/* The tuning parameters a call runs with: a rule's segment=, buffer=, radix= or requests= option,
 * already in the call, else coll_loom_segment_size / _pat_buffer_size / _knomial_radix /
 * _alltoallv_max_requests as they are now (MPI_T may change them between calls). The window's 0
 * (every peer at once) goes to the core as SIZE_MAX, the largest window: the core's 0 is its
 * default. */
static inline void loom_apply_options(size_t *segment_bytes, size_t *buffer_bytes, size_t *radix,
                                      size_t *max_requests)
{
    if (0 == *segment_bytes) *segment_bytes = mca_coll_loom_component.segment_size;
    if (0 == *buffer_bytes) *buffer_bytes = mca_coll_loom_component.pat_buffer_size;
    if (0 == *radix) *radix = mca_coll_loom_component.knomial_radix;
    const size_t window = mca_coll_loom_component.alltoallv_max_requests;
    if (0 == *max_requests) *max_requests = 0 == window ? SIZE_MAX : window;
}
static inline void loom_apply_tuning(loom_call_t *call)
{
    loom_apply_options(&call->segment_bytes, &call->buffer_bytes, &call->radix, &call->max_requests);
    if (NULL != call->stand_in.algorithm)
        loom_apply_options(&call->stand_in.segment_bytes, &call->stand_in.buffer_bytes, &call->stand_in.radix,
                           &call->stand_in.max_requests);
}
/* loom's error codes (LOOM_ERR_*) as Open MPI's. */
static inline int loom_to_ompi_error(int rc)
{
    return LOOM_ERR_NO_MEMORY == rc ? OMPI_ERR_OUT_OF_RESOURCE : LOOM_ERR_INTERNAL == rc ? OMPI_ERROR : rc;
}
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

/* ---- counters and verbose lines (coll_loom_report.c) ---- */

/* "allreduce", "iallreduce" or "allreduce_init": a call's form as MPI names it, for messages
 * (buf holds it for the latter two). */
static inline const char *loom_form_name(loom_kind_t kind, loom_coll_t coll, char *buf, size_t size)
{
    if (LOOM_BLOCKING == kind) return loom_coll_name(coll);
    snprintf(buf, size, LOOM_NONBLOCKING == kind ? "i%s" : "%s_init", loom_coll_name(coll));
    return buf;
}
/* A reduction loom serves, on the full decision path: the C library's allocator left as Open MPI's
 * own algorithm would have left it (coll_loom_allocator.c; coll_loom_allocator_like_open_mpi). */
void loom_allocate_as_open_mpi(const loom_call_t *call, struct ompi_communicator_t *comm);
/* MPI_T counters, verbose lines and timeline events for a call loom served, or handed on (and
 * why; loom_report_declined is loom_note_declined's slow path). */
void loom_note_served(loom_kind_t kind, const loom_call_t *call, struct ompi_communicator_t *comm,
                      mca_coll_loom_module_t *module, const char *algorithm, const char *rule);
void loom_report_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why);
/* The verbose line (rank 0, coll_loom_verbose >= 1) saying how comm's segment set-up ended:
 * `verdict` as loom_shm_setup returns it (0: unavailable), `refused` if the segment was too
 * large to be set up at all; `by` says what set it up ("by a non-blocking call's set-up
 * operation, "; "" for a blocking call). */
void loom_note_segment(struct ompi_communicator_t *comm, const mca_coll_loom_module_t *module, int verdict, int refused,
                       const char *by);
/* A locked add waits for the stores before it to drain - after a shared-memory collective,
 * stores to cache lines the other ranks are reading - which measured as about 15% of an 8-byte
 * shm bcast's time. Only MPI_THREAD_MULTIPLE needs it. */
static inline void loom_count_call(unsigned long long *counter)
{
    if (ompi_mpi_thread_multiple)
        __atomic_fetch_add(counter, 1ULL, __ATOMIC_RELAXED);
    else
        ++*counter;
}
/* Inline, and not even a call unless verbose output or the timeline is on: a handed-on call pays
 * loom's path on top of the next component's (tools/dev/call-instructions). */
static inline void loom_note_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm,
                                      const char *why)
{
    loom_count_call(&mca_coll_loom_component.declined[kind][coll]);
    if (mca_coll_loom_component.noting) loom_report_declined(kind, coll, comm, why);
}

END_C_DECLS

#endif /* COLL_LOOM_CALL_H */
