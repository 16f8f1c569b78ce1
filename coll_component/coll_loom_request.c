/*
 * The life of loom's request (coll_loom_request.h): made from a free list, as libnbc's requests
 * are - the MPI layer may read a request after its free function returned (ompi_coll_base's
 * free_objs_callback), so its memory stays ours -, and released with what it holds (the
 * arguments it keeps are taken at its start: coll_loom_request_start.c). How its operation runs
 * is the progress engine's (coll_loom_request_progress.c), and so are Open MPI's start and free
 * callbacks, which meet the running operations; cancel is here.
 */
#include "coll_loom_request.h"
#include "coll_loom_segment.h"

#include <stdlib.h>

/* The requests' free list (component open to close). */
static opal_free_list_t request_pool;

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
        for (int i = 0; i < r->type_count; ++i)
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
    r->type_count = 0;
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
