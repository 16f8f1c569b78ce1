/*
 * Non-blocking and persistent collectives (MPI_Iallreduce, MPI_Allreduce_init, ...): the
 * call's life as a request.
 *
 *   start    described and decided once by the pipeline every call takes (loom_decide,
 *            coll_loom_call.c); this file is its step 4 for operations. A call loom hands on
 *            goes to the previous component's non-blocking or persistent function (libnbc),
 *            which makes the request;
 *   run      loom's algorithm, unchanged, as a resumable operation (algorithms/resumable.cpp):
 *            a fiber that pauses wherever the blocking path would wait. It runs until its
 *            first wait inside the call that starts it, then inside Open MPI's progress engine:
 *            loom registers a progress function (opal_progress_register, as libnbc does), so
 *            every MPI call that progresses - MPI_Test, MPI_Wait*, point-to-point, other
 *            collectives - advances every running operation. No helper thread;
 *   finish   dense views emptied, counters and verbose lines, the request completed.
 *
 * The shared segment: operations on one communicator may overlap each other and blocking
 * calls, while the segment serves one call at a time. So the calls that use it take turns
 * (ShmTurns, algorithms/shm_turns.hpp): an operation takes its turn when its MPI call is
 * made (launch), a blocking call when it runs, and each runs once the calls before it on the
 * segment have ended - an operation yields meanwhile, a blocking call progresses Open MPI,
 * which runs the operations. Every rank takes its turns in the same order (MPI's rule for
 * collectives on a communicator), so the segment's phases agree, and every waiting call
 * progresses every operation, so completing them in any order cannot deadlock. A
 * non-blocking call cannot wait for the segment's set-up, which ends at different times on
 * different ranks: it starts the set-up as an operation of its own holding the segment's first
 * turn (begin_segment, below). Persistent requests take no turns: ranks may start
 * them in different orders (MPI 4.0 section 6.13), so one served on shared memory runs on a
 * segment of its own, made in its init (nonlocal; coll_loom_call.c), used by nothing else.
 * No single copy for operations. Each
 * operation has its own tag from the communicator's non-blocking tag
 * space (ompi_coll_base_nbc_reserve_tags, shared with libnbc, which gets the calls loom hands
 * on), so overlapping operations never take each other's messages. MPI requires every rank
 * to start collectives on a communicator in the same order, so every rank draws the same tag
 * for the same operation, and completing them in any order cannot deadlock: every running
 * operation advances whenever any MPI call progresses.
 *
 * What an application may free once the call returns - count and displacement arrays,
 * user-defined datatypes and ops - the request copies or holds (keep_arguments), as libnbc does.
 *
 * Persistent requests keep their decision, their described call (buffers, counts, datatype
 * plan), their tag and their own segment (if any) from init, and their operation with its scratch memory from one start
 * to the next (loom_resumable_restart; a new fiber on a pooled stack each start).
 *
 * Bound: at most coll_loom_nonblocking_max operations run at once per process; a later one
 * waits in a FIFO and starts when a running one ends. Memory per running operation: its fiber
 * stack (256 KiB of virtual memory, mapped on demand; at most 64 KiB resident in the unit
 * test), the request (1.7 KiB) and the operation (1.5 KiB).
 *
 * Device buffers (CUDA): the operation runs on whole host copies of them, filled from the
 * device when it starts (a synchronous copy in the starting call: local work, as MPI allows)
 * and copied back when it ends, in whichever MPI call completes it. The rules see
 * memory=cuda, as for a blocking call. A call loom hands on goes to the next component on the
 * host copies too, since this Open MPI cannot read device memory: loom keeps its own request,
 * whose "operation" is the next component's request (`inner`), and copies back once that
 * completes. Such handed-on operations are started at once, never queued: the next component
 * takes its tag when the call is made, and it must do so in the same order on every rank.
 * Not the blocking path's segmented pipeline: a start copies everything in at once.
 */
#include "coll_loom_call.h"
#include "coll_loom_trace.h"
#include "coll_loom_segment.h"

#include "loom_device.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include "opal/runtime/opal_progress.h"

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
    loom_resumable_t *op;       /* while running */
    loom_resumable_t *kept;     /* persistent: the operation of the last start, and its scratch */
    int queued;                 /* waiting for a place among the running operations */
    int freed;                  /* MPI let go of the request before it ended: release it then */
    int extras;                 /* EXTRA_* bits: what launch and finish do beyond the common path */
    loom_trace_event_t *trace;  /* timeline: the event its completion ends (non-blocking), or the
                                   model of its starts' events (persistent) */
    loom_trace_event_t *trace_start; /* persistent: the event of the start running now */
    loom_mpi_call_t inner_call; /* handed on, on host copies: the call made to the next component */
    ompi_request_t *inner;      /* ... and its request (persistent: from init to free) */
    int inner_running;          /* inner is started and not yet seen complete */
    int setup;                  /* the operation sets up the segment (begin_segment) */
    void *own_shm;              /* persistent: its own segment (loom_decision_t.own_segment), or NULL */
    int has_turn;               /* runs on the communicator's segment, in the turn below */
    uint64_t segment_turn;      /* taken at the MPI call (MPI_I..., MPI_Start): loom_shm_take_turn */
    /* The call's own copies of its count and displacement arrays (mpi points at them), and the
     * user-defined datatypes and op it holds a reference to (NULL: none or predefined): see
     * keep_arguments. */
    int *arrays;
    int inline_arrays[2 * 32];
    void *held[3];
    /* alltoallw: its own copy of the two datatype arrays (mpi points at it), each user-defined
     * datatype in them held once per entry; NULL: none. */
    struct ompi_datatype_t **type_arrays;
} loom_request_t;

OBJ_CLASS_DECLARATION(loom_request_t);

/* loom_request_t.extras: device buffers (the call runs on host copies of them), and the timeline
 * (coll_loom_trace). One test of them on the common path, in launch and in finish. */
enum { EXTRA_HOST_COPIES = 1, EXTRA_TRACE = 2 };

/* The running operations and the queue, and whether the progress function is registered.
 * Requests come from a free list, as libnbc's do: the MPI layer may read a request after its
 * free function returned (ompi_coll_base's free_objs_callback), so its memory stays ours. */
static opal_mutex_t lock;
static opal_free_list_t request_pool;
static loom_request_t *running, *queue_head, *queue_tail;
static int running_count, progressing, registered, idle_polls;
/* Device calls handed on, on host copies, whose next component's request is running. */
static loom_request_t *handed_on;
static int handed_on_count;

/* ---- the request ---- */

/* An application may free or reuse a non-blocking call's arrays, datatypes and op once the call
 * returns (MPI forbids it until completion, but Open MPI's libnbc copies or retains them when the
 * call is made, and bindings rely on it: mpi4py frees MPI_Iallgatherv's counts at once), and a
 * persistent request's once the init returns. So the request keeps what it reads later: its own
 * copy of the count and displacement arrays (r->mpi points at it) and a reference to each
 * user-defined datatype and op (predefined ones are never freed). Called before the call is
 * described, so everything after reads the request's copies. */
static int keep_arguments(loom_request_t *r, int size, int rank)
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

static void release(loom_request_t *r)
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

/* The segment's set-up ended: its outcome for the glue to read (loom_settle_segment),
 * and for the verbose output; nobody waits for its request. */
static void finish_setup(loom_request_t *r, int rc)
{
    /* An error here is the PML's, which Open MPI reports; the state says what the calls after
     * it find (a set-up that threw ended with no segment). */
    (void)rc;
    (void)loom_pml_transport_fini(&r->transport);
    loom_resumable_free(r->op);
    r->op = NULL;
    loom_note_segment(r->comm, r->module, loom_shm_verdict(r->module->shm), 0,
                      "by a non-blocking call's set-up operation, ");
    __atomic_store_n(&r->module->setup_done, 1, __ATOMIC_RELEASE);
    release(r);
}

/* finish's extras: host copies emptied back (if rc is success), the timeline's event ended. */
/* Not inlined: finish would then keep its locals in registers it must save (4 instructions a call). */
__attribute__((noinline)) static int finish_extras(loom_request_t *r, int rc, int stood_in)
{
    if (OMPI_SUCCESS == rc && 0 != (r->extras & EXTRA_HOST_COPIES)) rc = loom_host_copies_out(&r->call);
    if (0 == (r->extras & EXTRA_TRACE)) return rc;
    loom_trace_event_t **event = r->super.super.req_persistent ? &r->trace_start : &r->trace;
    if (NULL == *event) return rc;
    loom_call_t ran = r->call.core;
    const char *algorithm = stood_in ? loom_call_as_stand_in(&ran) : r->algorithm;
    loom_trace_complete(*event, &ran, algorithm,
                        stood_in ? "the rules without a segment (a stand-in)" : r->rule);
    *event = NULL;
    return rc;
}

/* The operation ended with rc (a loom code): views out, counters, the request completed. */
static void finish(loom_request_t *r, int rc)
{
    if (r->setup) {
        finish_setup(r, rc);
        return;
    }
    rc = loom_to_ompi_error(rc);
    int stood_in = 0;
    if (NULL != r->op) {
        stood_in = loom_resumable_stood_in(r->op);
        if (stood_in) loom_count_call(&mca_coll_loom_component.stand_ins);
        const int fini_rc = loom_pml_transport_fini(&r->transport);
        if (OMPI_SUCCESS == rc) rc = fini_rc;
        if (OMPI_SUCCESS == rc && !r->call.dense) rc = loom_views_out(&r->call);
        /* A persistent request keeps its operation, and with it its scratch memory. */
        if (r->super.super.req_persistent && NULL == r->kept)
            r->kept = r->op;
        else
            loom_resumable_free(r->op);
        r->op = NULL;
    }
    if (r->extras) rc = finish_extras(r, rc, stood_in);
    if (OMPI_SUCCESS == rc && NULL != r->algorithm && !stood_in)
        loom_note_served(r->mpi.kind, &r->call.core, r->comm, r->module, r->algorithm, r->rule);
    if (OMPI_SUCCESS == rc && stood_in) { /* verbose output names what ran */
        loom_call_t ran = r->call.core;
        const char *name = loom_call_as_stand_in(&ran);
        loom_note_served(r->mpi.kind, &ran, r->comm, r->module, name,
                         "the rules without a segment (a stand-in: the segment could not be set up)");
    }
    r->super.super.req_status.MPI_ERROR = rc;
    /* Completion runs the MPI layer's callbacks (releasing the datatypes and op it kept). */
    const int freed = r->freed;
    ompi_request_complete(&r->super.super, true);
    if (freed) release(r);
}

/* Makes r's operation and runs it to its first wait. 1 if it ended already. */
static int run_first(loom_request_t *r, int *rc)
{
    loom_pml_transport_init(&r->transport, r->comm, r->module, r->tag);
    loom_pml_transport_resumable(&r->transport);
    if (r->has_turn || r->setup) r->transport.ops.shared_state = &r->module->shm;
    if (NULL != r->own_shm) r->transport.ops.shared_state = &r->own_shm;
    if (r->has_turn) r->transport.ops.segment_turn = &r->segment_turn;
    if (r->setup) {
        r->op = loom_resumable_create_setup(&r->transport.ops, mca_coll_loom_component.single_copy);
    } else if (NULL != r->kept && LOOM_SUCCESS == loom_resumable_restart(r->kept, &r->transport.ops, &r->call.core)) {
        r->op = r->kept;
        r->kept = NULL;
    } else {
        loom_resumable_free(r->kept);
        r->kept = NULL;
        r->op = loom_resumable_create(&r->transport.ops, &r->call.core);
    }
    if (NULL == r->op) {
        (void)loom_pml_transport_fini(&r->transport);
        if (r->has_turn) loom_shm_abandon_turn(&r->module->shm, r->segment_turn);
        *rc = LOOM_ERR_NO_MEMORY;
        return 1;
    }
    return loom_resumable_resume(r->op, rc);
}

static int max_running(void)
{
    return mca_coll_loom_component.nonblocking_max > 0 ? mca_coll_loom_component.nonblocking_max : 1;
}

/* Called with the lock held. */
static void register_progress(void)
{
    if (!registered) {
        registered = 1;
        opal_progress_register(mca_coll_loom_progress);
    }
}

/* A device call handed on: its host copies filled, the next component's request started
 * (made, for a non-persistent one), and watched by the progress function. */
static int launch_handed_on(loom_request_t *r)
{
    int rc = loom_host_copies_fill(&r->call);
    if (0 != (r->extras & EXTRA_TRACE) && r->super.super.req_persistent)
        r->trace_start = loom_trace_begin_start(r->trace);
    if (OMPI_SUCCESS == rc && NULL != r->inner)
        rc = r->inner->req_start(1, &r->inner);
    else if (OMPI_SUCCESS == rc)
        rc = mca_coll_loom_hand_on(&r->inner_call, r->comm, r->module);
    if (OMPI_SUCCESS != rc) return rc;
    OPAL_THREAD_LOCK(&lock);
    register_progress();
    r->inner_running = 1;
    r->next = handed_on;
    handed_on = r;
    ++handed_on_count;
    OPAL_THREAD_UNLOCK(&lock);
    return OMPI_SUCCESS;
}

/* Runs r, or queues it behind coll_loom_nonblocking_max running operations. */
static int launch(loom_request_t *r)
{
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_status.MPI_ERROR = OMPI_SUCCESS;
    r->super.super.req_status._cancelled = 0;
    r->next = NULL;
    if (NULL == r->algorithm) return launch_handed_on(r);
    if (r->extras) {
        if (0 != (r->extras & EXTRA_TRACE) && r->super.super.req_persistent)
            r->trace_start = loom_trace_begin_start(r->trace);
        const int rc = 0 != (r->extras & EXTRA_HOST_COPIES) ? loom_host_copies_fill(&r->call) : OMPI_SUCCESS;
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (!r->call.dense) {
        loom_views_free(&r->call);
        const int rc = loom_views_in(&r->call);
        if (OMPI_SUCCESS != rc) return rc;
    }
    /* Its turn on the communicator's segment is taken now, in the order of the MPI calls (the
     * same on every rank), even if it waits in the queue below. A persistent request never
     * takes one: it runs on its own segment, if on any. */
    r->has_turn = NULL == r->own_shm && loom_chosen_uses_segment(&r->call.core);
    if (r->has_turn) r->segment_turn = loom_shm_take_turn(&r->module->shm);
    OPAL_THREAD_LOCK(&lock);
    register_progress();
    /* A place among the running operations is taken here, so threads starting at once never
     * run more than the bound. */
    const int room = running_count < max_running();
    if (room) {
        ++running_count;
    } else {
        r->queued = 1;
        if (NULL == queue_tail)
            queue_head = r;
        else
            queue_tail->next = r;
        queue_tail = r;
    }
    OPAL_THREAD_UNLOCK(&lock);
    if (!room) return OMPI_SUCCESS;
    int rc = LOOM_SUCCESS;
    const int ended = run_first(r, &rc);
    OPAL_THREAD_LOCK(&lock);
    if (ended) {
        --running_count;
    } else {
        r->next = running;
        running = r;
    }
    OPAL_THREAD_UNLOCK(&lock);
    if (ended) finish(r, rc);
    return OMPI_SUCCESS;
}

static int request_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        const int rc = launch((loom_request_t *)requests[i]);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

/* MPI_Request_free, or MPI_Wait* on a completed non-persistent request. A request still
 * running (freed by the application, which MPI allows loom to support) ends in the background
 * and is released then. */
static int request_free(ompi_request_t **request)
{
    loom_request_t *r = (loom_request_t *)*request;
    OPAL_THREAD_LOCK(&lock);
    const int active = NULL != r->op || r->queued || r->inner_running;
    if (active) r->freed = 1;
    OPAL_THREAD_UNLOCK(&lock);
    if (!active) release(r);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
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
static loom_request_t *request_alloc(struct ompi_communicator_t *comm, int persistent)
{
    loom_request_t *r = (loom_request_t *)opal_free_list_get(&request_pool);
    if (NULL == r) return NULL;
    OMPI_REQUEST_INIT(&r->super.super, persistent);
    r->super.super.req_type = OMPI_REQUEST_COLL;
    r->super.super.req_status._cancelled = 0;
    r->super.super.req_start = request_start;
    r->super.super.req_free = request_free;
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

/* ---- progress ---- */

/* Called with nothing to do: after kIdlePolls such calls in a row loom leaves Open MPI's
 * progress engine, so that every poll of everything else (libnbc's operations, the PML's
 * waits) stops paying for it; the next operation registers it again. Open MPI's unregister
 * is safe inside opal_progress (it shifts the callbacks atomically), as is register. */
enum { kIdlePolls = 256 };
static int idle(void)
{
    if (++idle_polls < kIdlePolls || 0 != OPAL_THREAD_TRYLOCK(&lock)) return 0;
    if (registered && 0 == running_count && NULL == queue_head && 0 == handed_on_count && !progressing) {
        opal_progress_unregister(mca_coll_loom_progress);
        registered = 0;
    }
    idle_polls = 0;
    OPAL_THREAD_UNLOCK(&lock);
    return 0;
}

/* Resumes every running operation once; starts queued ones as running ones end. One thread
 * at a time, never recursively (an operation's isend may progress the PML, which may call
 * opal_progress): another caller returns at once. */
int mca_coll_loom_progress(void)
{
    if (0 == running_count && NULL == queue_head && 0 == handed_on_count) return idle();
    idle_polls = 0;
    if (0 != OPAL_THREAD_TRYLOCK(&lock)) return 0;
    if (progressing) {
        OPAL_THREAD_UNLOCK(&lock);
        return 0;
    }
    progressing = 1;
    int completed = 0;
    for (loom_request_t **link = &running; NULL != *link;) {
        loom_request_t *r = *link;
        int rc = LOOM_SUCCESS;
        if (!loom_resumable_resume(r->op, &rc)) {
            link = &r->next;
            continue;
        }
        *link = r->next;
        --running_count;
        finish(r, rc);
        ++completed;
    }
    for (loom_request_t **link = &handed_on; NULL != *link;) {
        loom_request_t *r = *link;
        if (!REQUEST_COMPLETE(r->inner)) {
            link = &r->next;
            continue;
        }
        *link = r->next;
        --handed_on_count;
        r->inner_running = 0;
        const int rc = r->inner->req_status.MPI_ERROR;
        if (!r->super.super.req_persistent) (void)ompi_request_free(&r->inner);
        finish(r, rc);
        ++completed;
    }
    while (NULL != queue_head && running_count < max_running()) {
        loom_request_t *r = queue_head;
        queue_head = r->next;
        if (NULL == queue_head) queue_tail = NULL;
        r->queued = 0;
        int rc = LOOM_SUCCESS;
        if (run_first(r, &rc)) {
            finish(r, rc);
            ++completed;
            continue;
        }
        r->next = running;
        running = r;
        ++running_count;
    }
    progressing = 0;
    OPAL_THREAD_UNLOCK(&lock);
    return completed;
}

void mca_coll_loom_requests_init(void)
{
    OBJ_CONSTRUCT(&lock, opal_mutex_t);
    OBJ_CONSTRUCT(&request_pool, opal_free_list_t);
    (void)opal_free_list_init(&request_pool, sizeof(loom_request_t), 8, OBJ_CLASS(loom_request_t), 0, 0, 0, -1, 8, NULL,
                              0, NULL, NULL, NULL);
}

void mca_coll_loom_requests_fini(void)
{
    if (registered) opal_progress_unregister(mca_coll_loom_progress);
    registered = 0;
    OBJ_DESTRUCT(&request_pool);
    OBJ_DESTRUCT(&lock);
}

/* ---- the timeline ---- */

int mca_coll_loom_request_trace(ompi_request_t *request, loom_trace_event_t *event)
{
    if (NULL == request || MPI_REQUEST_NULL == request || request_free != request->req_free) return 0;
    loom_request_t *r = (loom_request_t *)request;
    OPAL_THREAD_LOCK(&lock);
    r->trace = event;
    r->extras |= EXTRA_TRACE;
    /* Still running: its completion ends the event (finish, under the lock in progress). */
    const int running = !r->super.super.req_persistent && (NULL != r->op || r->queued || r->inner_running);
    OPAL_THREAD_UNLOCK(&lock);
    if (r->super.super.req_persistent) { /* the init's event: what its starts will run */
        if (NULL != r->algorithm && NULL != event) loom_trace_complete(event, &r->call.core, r->algorithm, r->rule);
        return 0;
    }
    if (running || NULL == event) return running;
    /* Completed inside the call that made it: it ends now, with what served it. */
    r->trace = NULL;
    loom_trace_complete(event, &r->call.core, r->algorithm, r->rule);
    return 1;
}

/* ---- the call ---- */

/* r, described and decided, becomes the caller's request: running, or inactive until
 * MPI_Start for a persistent one. */
static int start_served(loom_request_t *r, struct ompi_communicator_t *comm, bool persistent)
{
    /* A persistent request keeps the tuning parameters of its init. */
    loom_apply_tuning(&r->call.core);
    r->tag = ompi_coll_base_nbc_reserve_tags(comm, 1);
    *r->mpi.request = &r->super.super;
    if (persistent) return OMPI_SUCCESS;
    const int rc = launch(r);
    if (OMPI_SUCCESS != rc) {
        *r->mpi.request = MPI_REQUEST_NULL;
        release(r);
    }
    return rc;
}

/* Starts setting comm's segment up inside a non-blocking call, as an operation of its own that
 * takes the segment's first turn: the pipeline decided so (loom_decision_t.begin_setup) and made
 * the state PENDING. Its tag, turn and place in the queue come before those of the call that
 * started it, on every rank. If memory runs out the segment is NONE here and the call fails. */
static int begin_segment(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    loom_request_t *r = request_alloc(comm, 0);
    uint64_t turn;
    if (NULL == r || LOOM_SUCCESS != loom_shm_begin_setup(&module->shm, &turn)) {
        if (NULL != r) {
            loom_call_start(&r->call, &r->mpi);
            release(r);
        }
        module->segment = LOOM_SEGMENT_NONE;
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
    return launch(r);
}

int mca_coll_loom_start(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat)
{
    const bool persistent = LOOM_PERSISTENT == mpi->kind;
    loom_request_t *r = request_alloc(comm, persistent);
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
    r->mpi = *mpi;
    r->module = module;
    int rc = keep_arguments(r, ompi_comm_size(comm), ompi_comm_rank(comm));
    if (OMPI_SUCCESS != rc) {
        loom_call_start(&r->call, &r->mpi);
        release(r);
        return rc;
    }
    loom_decision_t d;
    rc = loom_decide(&r->call, &r->mpi, 0, comm, module, repeat, &d);
    if (NULL != d.own_segment) r->own_shm = d.own_segment; /* request_alloc set it NULL */
    if (OMPI_SUCCESS == rc && d.begin_setup) rc = begin_segment(comm, module);
    if (OMPI_SUCCESS != rc) {
        release(r);
        return rc;
    }
    if (NULL == d.algorithm && !d.device) {
        release(r);
        return mca_coll_loom_hand_on(mpi, comm, module);
    }
    if (d.device) {
        /* The operation, or the next component, runs on host copies of the device buffers. */
        rc = loom_host_copies_make(&r->call);
        if (OMPI_SUCCESS != rc) {
            release(r);
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
        rc = persistent ? mca_coll_loom_hand_on(&r->inner_call, comm, module) : launch(r);
        if (OMPI_SUCCESS != rc) {
            *mpi->request = MPI_REQUEST_NULL;
            release(r);
        }
        return rc;
    }
    r->algorithm = d.algorithm;
    r->rule = d.rule;
    loom_allocate_as_open_mpi(&r->call.core, comm);
    return start_served(r, comm, persistent);
}
