/*
 * The entry of a non-blocking or persistent call (mca_coll_loom_start): its request made, the
 * arguments kept, the call taken through the pipeline (loom_decide, coll_loom_call.c), and then
 * made the caller's request - launched (coll_loom_request_progress.c), inactive until MPI_Start
 * for a persistent one, or handed on: to the previous component's function, which makes the
 * request, or for device buffers on host copies under loom's own request.
 */
#include "coll_loom_call.h"
#include "coll_loom_neighbours.h"
#include "coll_loom_report.h"
#include "coll_loom_request.h"
#include "coll_loom_run.h"
#include "coll_loom_segment.h"

#include <stdlib.h>
#include <string.h>

/* The count, displacement and datatype arrays of r's call, copied (keep_arguments). */
static int keep_arrays(loom_request_t *r, struct ompi_communicator_t *comm)
{
    /* The arrays' lengths: a count per rank, or for a neighbourhood collective per source (the
     * receive side) and per destination (the send side). Without a process topology such a call
     * is handed on with the caller's own arrays: none is read here. */
    size_t recv_n = (size_t)ompi_comm_size(comm), send_n = recv_n;
    if (LOOM_COUNTS_per_neighbour == loom_coll_row(r->mpi.coll)->counts) {
        const char *why = NULL;
        const loom_neighbourhood_t *n = mca_coll_loom_neighbourhood(comm, r->module, &why);
        recv_n = NULL != n ? (size_t)n->indegree : 0;
        send_n = NULL != n ? (size_t)n->outdegree : 0;
    }
    /* The arrays significant on this rank: a gatherv's receive side and a scatterv's send side
     * are the root's alone (elsewhere they may be anything, even too short to read). */
    const int rooted_v = loom_coll_counts_at_root_only(r->mpi.coll), root = ompi_comm_rank(comm) == r->mpi.root;
    const int significant = !rooted_v || root;
    /* Every array into one block, each at a multiple of 8 bytes; an array's entries are int or,
     * on 6.0 for a large-count call, 64-bit (the version layer's accessors say which). */
#define KEPT_BYTES(field, kind, n) \
    (significant && loom_##kind##_given(r->mpi.field) ? (((n) * loom_##kind##_elem_bytes(r->mpi.field) + 7) & ~(size_t)7) : 0)
#define KEEP(field, kind, n)                                                                                       \
    if (significant && loom_##kind##_given(r->mpi.field)) {                                                     \
        const size_t bytes_ = (n) * loom_##kind##_elem_bytes(r->mpi.field);                                       \
        r->mpi.field = loom_##kind##_over(r->mpi.field, memcpy(a, loom_##kind##_data(r->mpi.field), bytes_));    \
        a += (bytes_ + 7) & ~(size_t)7;                                                                           \
    }
    const size_t need = KEPT_BYTES(counts, counts, recv_n) + KEPT_BYTES(displs, displs, recv_n) +
                        KEPT_BYTES(scounts, counts, send_n) + KEPT_BYTES(sdispls, displs, send_n) +
                        KEPT_BYTES(adispls, adispls, recv_n) + KEPT_BYTES(sadispls, adispls, send_n);
    if (need > 0) {
        char *a = need <= sizeof(r->inline_arrays) ? (char *)r->inline_arrays : malloc(need);
        if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
        r->arrays = a;
        KEEP(counts, counts, recv_n)
        KEEP(displs, displs, recv_n)
        KEEP(scounts, counts, send_n)
        KEEP(sdispls, displs, send_n)
        KEEP(adispls, adispls, recv_n)
        KEEP(sadispls, adispls, send_n)
    }
#undef KEEP
#undef KEPT_BYTES
    if (NULL != r->mpi.sdtypes || NULL != r->mpi.rdtypes) { /* alltoallw: a datatype per peer and side */
        struct ompi_datatype_t **t = malloc((send_n + recv_n + 1) * sizeof(*t));
        if (NULL == t) return OMPI_ERR_OUT_OF_RESOURCE;
        for (size_t i = 0; i < send_n; ++i) t[i] = NULL != r->mpi.sdtypes ? r->mpi.sdtypes[i] : NULL;
        for (size_t i = 0; i < recv_n; ++i) t[send_n + i] = NULL != r->mpi.rdtypes ? r->mpi.rdtypes[i] : NULL;
        for (size_t i = 0; i < send_n + recv_n; ++i)
            if (NULL != t[i] && !ompi_datatype_is_predefined(t[i])) OBJ_RETAIN(t[i]);
        r->type_arrays = t;
        r->type_count = (int)(send_n + recv_n);
        if (NULL != r->mpi.sdtypes) r->mpi.sdtypes = t;
        if (NULL != r->mpi.rdtypes) r->mpi.rdtypes = t + send_n;
    }
    return OMPI_SUCCESS;
}

/* An application may free or reuse a non-blocking call's arrays, datatypes and op once the call
 * returns (MPI forbids it until completion, but Open MPI's libnbc copies or retains them when the
 * call is made, and bindings rely on it: mpi4py frees MPI_Iallgatherv's counts at once), and a
 * persistent request's once the init returns. So the request keeps what it reads later: its own
 * copy of the count and displacement arrays (r->mpi points at it) and a reference to each
 * user-defined datatype and op (predefined ones are never freed). Called before the call is
 * described, so everything after reads the request's copies. */
static int keep_arguments(loom_request_t *r, struct ompi_communicator_t *comm)
{
    /* Most calls have no array: they read no length (the communicator's size and rank, the row, a
     * neighbourhood's degrees), which cost a non-blocking call's path about 50 instructions
     * (callgrind: tools/dev/call-instructions --collective iallreduce). */
    const loom_mpi_call_t *m = &r->mpi;
    if (loom_counts_given(m->counts) || loom_displs_given(m->displs) || loom_counts_given(m->scounts) ||
        loom_displs_given(m->sdispls) || NULL != m->sdtypes || NULL != m->rdtypes || loom_adispls_given(m->sadispls) ||
        loom_adispls_given(m->adispls)) {
        const int rc = keep_arrays(r, comm);
        if (OMPI_SUCCESS != rc) return rc;
    }
    struct ompi_datatype_t *types[2] = {r->mpi.dtype, r->mpi.sdtype};
    for (int i = 0; i < 2; ++i)
        if (NULL != types[i] && !ompi_datatype_is_predefined(types[i]) && (0 == i || types[1] != types[0])) {
            OBJ_RETAIN(types[i]);
            r->held[i] = types[i];
        }
    if (NULL != r->mpi.op && !ompi_op_is_intrinsic(r->mpi.op)) {
        OBJ_RETAIN(r->mpi.op);
        r->held[2] = r->mpi.op;
    }
    return OMPI_SUCCESS;
}

/* r, described and decided, becomes the caller's request: running, or inactive until
 * MPI_Start for a persistent one. */
static int start_served(loom_request_t *r, struct ompi_communicator_t *comm, bool persistent)
{
    /* A persistent request keeps the tuning parameters of its init. */
    loom_apply_tuning(&r->call.core);
    r->tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    *r->mpi.request = &r->super.super;
    if (persistent) return OMPI_SUCCESS;
    const int rc = loom_request_launch(r);
    if (OMPI_SUCCESS != rc) {
        *r->mpi.request = MPI_REQUEST_NULL;
        loom_request_release(r);
    }
    return rc;
}

/* Starts setting comm's segment up inside a non-blocking call, as an operation of its own that
 * takes the segment's first turn: the pipeline decided so (loom_decision_t.begin_setup) and made
 * the state PENDING. Its tag, turn and place in the queue come before those of the call that
 * started it, on every rank. If memory runs out the segment is NONE here and the call fails. */
static int begin_segment(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    loom_request_t *r = loom_request_new(comm, 0);
    uint64_t turn;
    if (NULL == r || LOOM_SUCCESS != loom_shm_begin_setup(&module->shm, &turn)) {
        if (NULL != r) {
            loom_call_start(&r->call, &r->mpi);
            loom_request_release(r);
        }
        loom_segment_lost(module);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    r->module = module;
    r->setup = 1;
    r->freed = 1; /* no caller holds it: released when it ends */
    memset(&r->call, 0, sizeof(r->call));
    r->call.counts = r->call.inline_counts;
    r->call.dense = 1;
    r->algorithm = "(the segment's set-up)";
    r->tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    return loom_request_launch(r);
}

int mca_coll_loom_start(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat)
{
    const bool persistent = LOOM_PERSISTENT == mpi->kind;
    loom_request_t *r = loom_request_new(comm, persistent);
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
    r->mpi = *mpi;
    r->module = module;
    int rc = keep_arguments(r, comm);
    if (OMPI_SUCCESS != rc) {
        loom_call_start(&r->call, &r->mpi);
        loom_request_release(r);
        return rc;
    }
    loom_decision_t d;
    rc = loom_decide(&r->call, &r->mpi, 0, comm, module, repeat, &d);
    if (NULL != d.own_segment) r->own_shm = d.own_segment; /* loom_request_new set it NULL */
    if (OMPI_SUCCESS == rc && d.begin_setup) rc = begin_segment(comm, module);
    if (OMPI_SUCCESS != rc) {
        loom_request_release(r);
        return rc;
    }
    if (NULL == d.algorithm && !d.device) {
        loom_request_release(r);
        return mca_coll_loom_hand_on(mpi, comm, module);
    }
    if (d.device) {
        /* The operation, or the next component, runs on host copies of the device buffers. */
        rc = loom_host_copies_make(&r->call);
        if (OMPI_SUCCESS != rc) {
            loom_request_release(r);
            return rc;
        }
        r->extras = EXTRA_HOST_COPIES;
        r->call.core.memory = LOOM_MEMORY_HOST; /* where it runs; the rules saw memory=cuda */
    }
    if (NULL == d.algorithm) {
        /* Handed on, on the host copies, under loom's request. */
        r->inner_call = *r->call.mpi;
        r->inner_call.request = &r->inner;
        *mpi->request = &r->super.super;
        rc = persistent ? mca_coll_loom_hand_on(&r->inner_call, comm, module) : loom_request_launch(r);
        if (OMPI_SUCCESS != rc) {
            *mpi->request = MPI_REQUEST_NULL;
            loom_request_release(r);
        }
        return rc;
    }
    r->algorithm = d.algorithm;
    r->rule = d.rule;
    loom_allocate_as_open_mpi(&r->call.core, comm);
    return start_served(r, comm, persistent);
}
