/*
 * Shared-memory segments, set up where every rank of the communicator is at the same point:
 * the communicator's own inside a blocking call, and a persistent request's own inside its
 * init (both nonlocal). A non-blocking call cannot wait: its set-up runs as an operation of its
 * own (coll_loom_request_start.c), and the first blocking call or persistent init after it waits for
 * it to end (loom_settle_segment). Which call sets a segment up is the chooser's decision
 * (coll_loom_call.c).
 */
#include "coll_loom_segment.h"
#include "coll_loom_report.h"
#include "coll_loom_run.h"

#include "opal/runtime/opal_progress.h"

void loom_segment_init(mca_coll_loom_module_t *module)
{
    module->shm = NULL;
    module->segment = LOOM_SEGMENT_NOT_YET;
    module->segment_wanted = 0;
    module->segment_allowed = 0;
    module->single_copy = LOOM_SINGLE_COPY_OFF;
}

/* The module's segment and single-copy state from a set-up's verdict (loom_shm_setup's bits;
 * 0: none). */
static void adopt_segment(mca_coll_loom_module_t *module, int verdict)
{
    module->segment = 0 != (verdict & LOOM_SHM_SEGMENT) ? LOOM_SEGMENT_READY : LOOM_SEGMENT_NONE;
    module->single_copy = 0 != (verdict & LOOM_SHM_SINGLE_COPY) ? LOOM_SINGLE_COPY_ON : LOOM_SINGLE_COPY_OFF;
}

/* A segment set up into *slot over comm with call's tag, inside `call`, which every rank has
 * reached (loom_shm_setup: single copy as given, `refuse` this rank's local refusal). Its
 * verdict's bits, the same on every rank; 0 if it could not be had or the PML failed. */
static int set_up_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                          void **slot, int single_copy, int refuse)
{
    loom_pml_transport_t transport;
    loom_run_transport(&transport, comm, module, loom_blocking_tag(call->coll), slot);
    const int ready = loom_shm_setup(&transport.ops, single_copy, refuse);
    const int rc = loom_pml_transport_fini(&transport);
    return ready < 0 || OMPI_SUCCESS != rc ? 0 : ready;
}

void loom_make_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    const int ready = module->segment_allowed
                          ? set_up_segment(call, comm, module, &module->shm, mca_coll_loom_component.single_copy, 0)
                          : 0;
    adopt_segment(module, ready);
    loom_note_segment(comm, module, ready, !module->segment_allowed, "");
}

/* A rank with coll_loom_shm_persistent_max segments of persistent requests alive refuses a
 * new one, and the set-up's agreement makes that the verdict of every rank. */
int loom_make_own_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                          void **slot)
{
    if (!module->segment_allowed) return 0;
    const int live = __atomic_load_n(&mca_coll_loom_component.persistent_segments, __ATOMIC_RELAXED);
    const int ready = set_up_segment(call, comm, module, slot, 0, live >= mca_coll_loom_component.shm_persistent_max);
    loom_count_call(0 != ready ? &mca_coll_loom_component.segments_set_up
                               : &mca_coll_loom_component.segments_unavailable);
    if (0 != ready) {
        __atomic_fetch_add(&mca_coll_loom_component.persistent_segments, 1, __ATOMIC_RELAXED);
    } else { /* the state of a set-up that failed: nothing of it is kept */
        loom_shm_release(*slot);
        *slot = NULL;
    }
    if (mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm))
        opal_output(mca_coll_loom_component.output, "coll:loom: shared-memory segment of a persistent request on %s %s",
                    comm->c_name,
                    0 != ready ? "set up"
                               : "unavailable (a rank could not map it, or has coll_loom_shm_persistent_max "
                                 "segments of persistent requests)");
    return ready;
}

void loom_drop_own_segment(void **slot)
{
    if (NULL == *slot) return;
    loom_shm_release(*slot);
    *slot = NULL;
    __atomic_fetch_sub(&mca_coll_loom_component.persistent_segments, 1, __ATOMIC_RELAXED);
}

void loom_settle_segment(mca_coll_loom_module_t *module)
{
    while (!__atomic_load_n(&module->setup_done, __ATOMIC_ACQUIRE)) opal_progress();
    adopt_segment(module, loom_shm_verdict(module->shm));
}

int loom_segment_begin_pending(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    if (module->segment_allowed) {
        module->setup_done = 0;
        module->segment = LOOM_SEGMENT_PENDING;
        return 1;
    }
    module->segment = LOOM_SEGMENT_NONE;
    loom_note_segment(comm, module, 0, 1, "by a non-blocking call, ");
    return 0;
}

void loom_segment_lost(mca_coll_loom_module_t *module) { module->segment = LOOM_SEGMENT_NONE; }
