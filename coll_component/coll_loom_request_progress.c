/*
 * Non-blocking and persistent collectives (MPI_Iallreduce, MPI_Allreduce_init, ...): the
 * progress engine that runs a request's operation (coll_loom_request.h names the other two
 * files of its life).
 *
 *   start    described and decided once by the pipeline every call takes (loom_decide,
 *            coll_loom_call.c; coll_loom_request_start.c). A call loom hands on goes to the
 *            previous component's non-blocking or persistent function (libnbc), which makes
 *            the request;
 *   launch   the copies in (coll_loom_run.c), a turn on the segment, a place among the running
 *            operations or in the queue;
 *   run      loom's algorithm, unchanged, as a resumable operation (algorithms/resumable.cpp):
 *            a fiber that pauses wherever the blocking path would wait. It runs until its
 *            first wait inside the call that starts it, then inside Open MPI's progress engine:
 *            loom registers a progress function (opal_progress_register, as libnbc does), so
 *            every MPI call that progresses - MPI_Test, MPI_Wait*, point-to-point, other
 *            collectives - advances every running operation. No helper thread;
 *   finish   the copies out (coll_loom_run.c), counters and verbose lines, the request
 *            completed.
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
 * turn (begin_segment, coll_loom_request_start.c). Persistent requests take no turns: ranks may start
 * them in different orders (MPI 4.0 section 6.13), so one served on shared memory runs on a
 * segment of its own, made in its init (nonlocal; coll_loom_call.c), used by nothing else.
 * No single copy for operations. Each operation has its own tag from the communicator's
 * non-blocking tag space (ompi_coll_base_nbc_reserve_tags, shared with libnbc, which gets the calls loom hands
 * on), so overlapping operations never take each other's messages. MPI requires every rank
 * to start collectives on a communicator in the same order, so every rank draws the same tag
 * for the same operation, and completing them in any order cannot deadlock: every running
 * operation advances whenever any MPI call progresses.
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
#include "coll_loom_request.h"
#include "coll_loom_report.h"
#include "coll_loom_run.h"

#include "opal/runtime/opal_progress.h"

/* The engine's state, all under `lock` (but idle_polls, a count of empty polls written racily:
 * at worst loom stays registered a little longer): running operations (list and number, against
 * coll_loom_nonblocking_max), the FIFO of those waiting, device calls handed on whose next
 * component's request runs, whether the progress function is registered and a thread is in it;
 * and a request's op, queued, inner_running and freed, which loom_request_on_free reads against them. */
static opal_mutex_t lock;
static loom_request_t *running, *queue_head, *queue_tail, *handed_on;
static int running_count, progressing, registered, idle_polls;

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
    loom_request_release(r);
}

/* finish's extras, under one test of them: the host copies out (if rc is success), the
 * timeline's event ended with what ran. rc, or the copies' error. Not inlined: finish would then
 * keep its locals in registers it must save (4 instructions a call). */
__attribute__((noinline)) static int finish_extras(loom_request_t *r, int rc, int stood_in)
{
    rc = loom_run_out(&r->call, 0, 0 != (r->extras & EXTRA_HOST_COPIES) ? LOOM_COPIES_FILL : LOOM_COPIES_NONE, rc);
    loom_trace_event_t **event = r->super.super.req_persistent ? &r->trace_start : &r->trace;
    if (0 == (r->extras & EXTRA_TRACE) || NULL == *event) return rc;
    loom_call_t ran = r->call.core;
    const char *algorithm = stood_in ? loom_call_as_stand_in(&ran) : r->algorithm;
    loom_trace_complete(*event, &ran, algorithm, stood_in ? "the rules without a segment (a stand-in)" : r->rule);
    *event = NULL;
    return rc;
}

/* The operation ended with rc (a loom code): the copies out, counters, the request completed. */
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
        rc = loom_run_out(&r->call, !r->call.dense, LOOM_COPIES_NONE, rc); /* the views it ran on (launch) */
        /* A persistent request keeps its operation, and with it its scratch memory. */
        if (r->super.super.req_persistent && NULL == r->kept)
            r->kept = r->op;
        else
            loom_resumable_free(r->op);
        r->op = NULL;
    }
    if (0 != r->extras) rc = finish_extras(r, rc, stood_in);
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
    if (freed) loom_request_release(r);
}

/* Makes r's operation and runs it to its first wait. 1 if it ended already. */
static int run_first(loom_request_t *r, int *rc)
{
    void **shared = NULL != r->own_shm ? &r->own_shm : r->has_turn || r->setup ? &r->module->shm : NULL;
    loom_run_transport(&r->transport, r->comm, r->module, r->tag, shared);
    loom_pml_transport_resumable(&r->transport);
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
    int rc = loom_run_in(&r->call, 0, LOOM_COPIES_FILL);
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
    OPAL_THREAD_UNLOCK(&lock);
    return OMPI_SUCCESS;
}

/* Runs r, or queues it behind coll_loom_nonblocking_max running operations. */
int loom_request_launch(loom_request_t *r)
{
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_complete = REQUEST_PENDING;
    r->super.super.req_status.MPI_ERROR = OMPI_SUCCESS;
    r->super.super.req_status._cancelled = 0;
    r->next = NULL;
    if (NULL == r->algorithm) return launch_handed_on(r);
    /* The extras under one test: loom_run_in then tests the views alone (fewer instructions). */
    int copies = LOOM_COPIES_NONE;
    if (0 != r->extras) {
        if (0 != (r->extras & EXTRA_TRACE) && r->super.super.req_persistent)
            r->trace_start = loom_trace_begin_start(r->trace);
        if (0 != (r->extras & EXTRA_HOST_COPIES)) copies = LOOM_COPIES_FILL;
    }
    const int rc = loom_run_in(&r->call, !r->call.dense, copies);
    if (OMPI_SUCCESS != rc) return rc;
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
    int run_rc = LOOM_SUCCESS;
    const int ended = run_first(r, &run_rc);
    OPAL_THREAD_LOCK(&lock);
    if (ended) {
        --running_count;
    } else {
        r->next = running;
        running = r;
    }
    OPAL_THREAD_UNLOCK(&lock);
    if (ended) finish(r, run_rc);
    return OMPI_SUCCESS;
}

/* ---- Open MPI's callbacks of loom's requests (loom_request_new) ---- */

/* MPI_Start, MPI_Startall. */
int loom_request_on_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        const int rc = loom_request_launch((loom_request_t *)requests[i]);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

/* MPI_Request_free, or MPI_Wait* on a completed non-persistent request. A request still
 * running (freed by the application, which MPI allows loom to support) ends in the background
 * and is released then. */
int loom_request_on_free(ompi_request_t **request)
{
    loom_request_t *r = (loom_request_t *)*request;
    OPAL_THREAD_LOCK(&lock);
    const int active = NULL != r->op || r->queued || r->inner_running;
    if (active) r->freed = 1;
    OPAL_THREAD_UNLOCK(&lock);
    if (!active) loom_request_release(r);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
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
    if (registered && 0 == running_count && NULL == queue_head && NULL == handed_on && !progressing) {
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
    if (0 == running_count && NULL == queue_head && NULL == handed_on) return idle();
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
    loom_request_pool_init();
}

void mca_coll_loom_requests_fini(void)
{
    if (registered) opal_progress_unregister(mca_coll_loom_progress);
    registered = 0;
    loom_request_pool_fini();
    OBJ_DESTRUCT(&lock);
}

/* ---- the timeline ---- */

int mca_coll_loom_request_trace(ompi_request_t *request, loom_trace_event_t *event)
{
    if (NULL == request || MPI_REQUEST_NULL == request || loom_request_on_free != request->req_free) return 0;
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
