/*
 * The life of loom's request (coll_loom_request.h): made from a free list, as libnbc's requests
 * are - the MPI layer may read a request after its free function returned (ompi_coll_base's
 * free_objs_callback), so its memory stays ours -, the arguments an application may free kept,
 * released. How its operation runs is the progress engine's (coll_loom_request_progress.c), and so
 * are Open MPI's start and free callbacks, which meet the running operations; cancel is here.
 */
#include "coll_loom_request.h"
#include "coll_loom_segment.h"

#include <stdlib.h>
#include <string.h>

/* The requests' free list (component open to close). */
static opal_free_list_t request_pool;

/* An application may free or reuse a non-blocking call's arrays, datatypes and op once the call
 * returns (MPI forbids it until completion, but Open MPI's libnbc copies or retains them when the
 * call is made, and bindings rely on it: mpi4py frees MPI_Iallgatherv's counts at once), and a
 * persistent request's once the init returns. So the request keeps what it reads later: its own
 * copy of the count and displacement arrays (r->mpi points at it) and a reference to each
 * user-defined datatype and op (predefined ones are never freed). Called before the call is
 * described, so everything after reads the request's copies. */
int loom_request_keep_arguments(loom_request_t *r, int size, int rank)
{
    const size_t per = (size_t)size;
    /* The arrays significant on this rank: a gatherv's receive side and a scatterv's send side
     * are the root's alone (elsewhere they may be anything, even too short to read). */
    const int rooted_v = loom_coll_counts_at_root_only(r->mpi.coll), root = rank == r->mpi.root;
    const int **arrays[4] = {&r->mpi.counts, &r->mpi.displs, &r->mpi.scounts, &r->mpi.sdispls};
    const int significant = !rooted_v || root;
    size_t need = 0;
    for (int i = 0; i < 4; ++i) need += NULL != *arrays[i] && significant ? per : 0;
    if (need > 0) {
        int *a = need <= sizeof(r->inline_arrays) / sizeof(r->inline_arrays[0]) ? r->inline_arrays
                                                                                : malloc(need * sizeof(int));
        if (NULL == a) return OMPI_ERR_OUT_OF_RESOURCE;
        r->arrays = a;
        for (int i = 0; i < 4; ++i)
            if (NULL != *arrays[i] && significant) {
                memcpy(a, *arrays[i], per * sizeof(int));
                *arrays[i] = a;
                a += per;
            }
    }
    if (NULL != r->mpi.sdtypes || NULL != r->mpi.rdtypes) { /* alltoallw: a datatype per rank and side */
        struct ompi_datatype_t **t = malloc(2 * per * sizeof(*t));
        if (NULL == t) return OMPI_ERR_OUT_OF_RESOURCE;
        for (size_t i = 0; i < per; ++i) {
            t[i] = NULL != r->mpi.sdtypes ? r->mpi.sdtypes[i] : NULL;
            t[per + i] = NULL != r->mpi.rdtypes ? r->mpi.rdtypes[i] : NULL;
        }
        for (size_t i = 0; i < 2 * per; ++i)
            if (NULL != t[i] && !ompi_datatype_is_predefined(t[i])) OBJ_RETAIN(t[i]);
        r->type_arrays = t;
        if (NULL != r->mpi.sdtypes) r->mpi.sdtypes = t;
        if (NULL != r->mpi.rdtypes) r->mpi.rdtypes = t + per;
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

void loom_request_release(loom_request_t *r)
{
    if (NULL != r->own_shm) loom_drop_own_segment(&r->own_shm);
    if (NULL != r->arrays && r->arrays != r->inline_arrays) free(r->arrays);
    r->arrays = NULL;
    for (int i = 0; i < 3; ++i)
        if (NULL != r->held[i]) {
            opal_object_t *held = (opal_object_t *)r->held[i];
            OBJ_RELEASE(held);
            r->held[i] = NULL;
        }
    if (NULL != r->type_arrays) {
        for (int i = 0; i < 2 * ompi_comm_size(r->comm); ++i)
            if (NULL != r->type_arrays[i] && !ompi_datatype_is_predefined(r->type_arrays[i])) {
                opal_object_t *held = (opal_object_t *)r->type_arrays[i];
                OBJ_RELEASE(held);
            }
        free(r->type_arrays);
        r->type_arrays = NULL;
    }
    if (NULL != r->inner) (void)ompi_request_free(&r->inner);
    loom_resumable_free(r->kept);
    r->kept = NULL;
    loom_call_fini(&r->call);
    OBJ_RELEASE(r->comm);
    OMPI_REQUEST_FINI(&r->super.super);
    opal_free_list_return(&request_pool, &r->super.super.super);
}

/* A collective cannot be cancelled (MPI). */
static int request_cancel(ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST;
}

static void request_construct(loom_request_t *r) { r->super.super.req_type = OMPI_REQUEST_COLL; }

OBJ_CLASS_INSTANCE(loom_request_t, ompi_coll_base_nbc_request_t, request_construct, NULL);

/* A request from the free list, as new (a reused one may carry the MPI layer's callbacks). */
loom_request_t *loom_request_alloc(struct ompi_communicator_t *comm, int persistent, ompi_request_start_fn_t start,
                                   ompi_request_free_fn_t free_fn)
{
    loom_request_t *r = (loom_request_t *)opal_free_list_get(&request_pool);
    if (NULL == r) return NULL;
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_status._cancelled = 0;
    r->super.super.req_start = start;
    r->super.super.req_free = free_fn;
    r->super.super.req_cancel = request_cancel;
    r->super.super.req_mpi_object.comm = comm;
    loom_ompi_nbc_request_clear(&r->super);
    r->next = NULL;
    r->op = NULL;
    /* trace and trace_start are read only under EXTRA_TRACE, which sets them. */
    r->queued = r->freed = r->extras = r->inner_running = r->has_turn = r->setup = 0;
    r->inner = NULL;
    r->kept = NULL;
    r->algorithm = r->rule = NULL;
    r->arrays = NULL;
    r->own_shm = NULL;
    r->held[0] = r->held[1] = r->held[2] = NULL;
    r->type_arrays = NULL;
    r->comm = comm;
    OBJ_RETAIN(comm);
    return r;
}

void loom_request_pool_init(void)
{
    OBJ_CONSTRUCT(&request_pool, opal_free_list_t);
    (void)opal_free_list_init(&request_pool, sizeof(loom_request_t), 8, OBJ_CLASS(loom_request_t), 0, 0, 0, -1, 8, NULL,
                              0, NULL, NULL, NULL);
}

void loom_request_pool_fini(void) { OBJ_DESTRUCT(&request_pool); }
