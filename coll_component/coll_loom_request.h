/*
 * loom's request, shared by the three files of a non-blocking or persistent call's life:
 *
 *   coll_loom_request.c           the request's life: made from a free list, released; the
 *                                 cancel callback;
 *   coll_loom_request_progress.c  the progress engine: launch (run, or queue behind
 *                                 coll_loom_nonblocking_max), mca_coll_loom_progress, completion;
 *                                 Open MPI's start and free callbacks, which meet the running
 *                                 operations under the engine's lock;
 *   coll_loom_request_start.c     the entry: mca_coll_loom_start keeps the arguments an
 *                                 application may free, takes the call through the pipeline
 *                                 and makes it the caller's request.
 *
 * Each calls only the files above it in this list. Private to coll_component/;
 * coll_loom_request_progress.c says how operations run.
 */
#ifndef COLL_LOOM_REQUEST_H
#define COLL_LOOM_REQUEST_H

#include "coll_loom_buffers.h"
#include "coll_loom_trace.h"

#include "ompi/mca/coll/base/coll_base_util.h"

BEGIN_C_DECLS

/* A request Open MPI can treat as its non-blocking collectives' (ompi_coll_base_nbc_request_t):
 * the MPI layer keeps a user's datatypes and ops alive through it while the operation runs
 * (ompi_coll_base_retain_op writes the fields after ompi_request_t). */
typedef struct loom_request_t {
    ompi_coll_base_nbc_request_t super;
    struct loom_request_t *next; /* in the running list or the waiting queue */
    struct ompi_communicator_t *comm;
    mca_coll_loom_module_t *module;
    loom_mpi_call_t mpi;
    loom_glue_call_t call;
    const char *algorithm, *rule;
    int tag;
    loom_pml_transport_t transport;
    loom_resumable_t *op;            /* while running */
    loom_resumable_t *kept;          /* persistent: the operation of the last start, and its scratch */
    int queued;                      /* waiting for a place among the running operations */
    int freed;                       /* MPI let go of the request before it ended: release it then */
    int extras;                      /* EXTRA_* bits: what launch and finish do beyond the common path */
    loom_trace_event_t *trace;       /* timeline: the event its completion ends (non-blocking), or the
                                   model of its starts' events (persistent) */
    loom_trace_event_t *trace_start; /* persistent: the event of the start running now */
    loom_mpi_call_t inner_call;      /* handed on, on host copies: the call made to the next component */
    ompi_request_t *inner;           /* ... and its request (persistent: from init to free) */
    int inner_running;               /* inner is started and not yet seen complete */
    int setup;                       /* the operation sets up the segment (begin_segment) */
    void *own_shm;                   /* persistent: its own segment (loom_decision_t.own_segment), or NULL */
    int has_turn;                    /* runs on the communicator's segment, in the turn below */
    uint64_t segment_turn;           /* taken at the MPI call (MPI_I..., MPI_Start): loom_shm_take_turn */
    /* The call's own copies of its count and displacement arrays (mpi points at them), and the
     * user-defined datatypes and op it holds a reference to (NULL: none or predefined): see
     * keep_arguments, coll_loom_request_start.c. */
    void *arrays;
    uint64_t inline_arrays[32];
    void *held[3];
    /* alltoallw: its own copy of the two datatype arrays (mpi points at it), each user-defined
     * datatype in them held once per entry, type_count entries; NULL: none. */
    struct ompi_datatype_t **type_arrays;
    int type_count;
} loom_request_t;

OBJ_CLASS_DECLARATION(loom_request_t);

/* loom_request_t.extras: device buffers (the call runs on host copies of them), and the timeline
 * (coll_loom_trace). One test of them on the common path, in launch and in finish. */
enum { EXTRA_HOST_COPIES = 1, EXTRA_TRACE = 2 };

/* ---- the request's life (coll_loom_request.c) ---- */

/* A request from the free list, as new, on comm (retained), with Open MPI's start and free
 * callbacks (the progress engine's); NULL if memory ran out. */
loom_request_t *loom_request_alloc(struct ompi_communicator_t *comm, int persistent, ompi_request_start_fn_t start,
                                   ompi_request_free_fn_t free_fn);
/* Gives back everything the request holds, and the request to the free list. */
void loom_request_release(loom_request_t *r);
/* The free list, made at component open and freed at close. */
void loom_request_pool_init(void);
void loom_request_pool_fini(void);

/* ---- the progress engine (coll_loom_request_progress.c) ---- */

/* Runs r (to its first wait), or queues it behind coll_loom_nonblocking_max running
 * operations; a device call handed on starts the next component's request. MPI_I... and
 * MPI_Start. */
int loom_request_launch(loom_request_t *r);
/* Open MPI's start (MPI_Start, MPI_Startall) and free callbacks of loom's requests. */
int loom_request_on_start(size_t count, ompi_request_t **requests);
int loom_request_on_free(ompi_request_t **request);
/* A request of loom's (loom_request_alloc with the engine's callbacks). Inline: a call of its own
 * would cost every MPI_I... a few instructions. */
static inline loom_request_t *loom_request_new(struct ompi_communicator_t *comm, int persistent)
{
    return loom_request_alloc(comm, persistent, loom_request_on_start, loom_request_on_free);
}

END_C_DECLS

#endif /* COLL_LOOM_REQUEST_H */
