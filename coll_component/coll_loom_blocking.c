/*
 * Blocking calls (MPI_Allreduce, ...): step 4 of the pipeline (coll_loom_call.c), straight.
 *
 *   run      the copies in (coll_loom_run.c: host copies of device buffers where needed, dense
 *            views), the algorithm over the PML (loom_run, algorithms/), the copies out;
 *   finish   MPI_T counters and verbose lines name what ran (coll_loom_report.c);
 *
 * or the call handed on to the previous component (on host copies, for device buffers).
 */
#include "coll_loom_call.h"
#include "coll_loom_autotune.h"
#include "coll_loom_repeat.h"
#include "coll_loom_report.h"
#include "coll_loom_run.h"

/* Runs `algorithm` on comm over the PML with the collective's tag. */
static int run(const char *algorithm, loom_call_t *call, struct ompi_communicator_t *comm,
               mca_coll_loom_module_t *module)
{
    /* Read once per call, so every collective sees the current values. */
    loom_apply_tuning(call);
    /* At coll_loom_verbose >= 1 the topology is made (and described) on the first call. */
    if (mca_coll_loom_component.verbose >= 1 && NULL == module->topology) {
        int rc = mca_coll_loom_topology(comm, module);
        if (OMPI_SUCCESS != rc) return rc;
    }
    loom_pml_transport_t transport;
    loom_run_transport(&transport, comm, module, loom_blocking_tag(call->coll), &module->shm);
    /* hierarchical's intra-node phases: a node's segment is no larger than comm's. */
    transport.ops.node_shared_state = module->segment_allowed ? &module->node_shm : NULL;
    int rc = loom_to_ompi_error(loom_run(algorithm, &transport.ops, call));
    int fini_rc = loom_pml_transport_fini(&transport);
    return OMPI_SUCCESS == rc ? fini_rc : rc;
}

/* Hands the call on: as it is, or for device buffers on host copies (this Open MPI cannot read
 * device memory). The collective is marked as being handed on meanwhile
 * (mca_coll_loom_module_t.handing_on): if the call comes back from below, loom serves it. */
static int hand_on(loom_glue_call_t *c, int device, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    const int copies = device ? LOOM_COPIES_MAKE : LOOM_COPIES_NONE;
    int rc = loom_run_in(c, 0, copies);
    if (OMPI_SUCCESS == rc) {
        const unsigned bit = 1u << c->mpi->coll;
        module->handing_on |= bit;
        rc = mca_coll_loom_hand_on(c->mpi, comm, module);
        module->handing_on &= ~bit;
    }
    rc = loom_run_out(c, 0, copies, rc);
    loom_call_fini(c);
    return rc;
}

/* Runs the described call c with algorithm (chosen by rule) - through dense copies, of host
 * copies for device buffers, where its buffers are not used in place - and finishes it. */
static int run_described(loom_glue_call_t *c, int device, const char *algorithm, const char *rule,
                         struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    /* Dense copies; of device buffers, made from host copies. */
    const int views = !c->dense, copies = device && views ? LOOM_COPIES_MAKE : LOOM_COPIES_NONE;
    int rc = loom_run_in(c, views, copies);
    if (OMPI_SUCCESS == rc) rc = run(algorithm, &c->core, comm, module);
    if (OMPI_SUCCESS == rc) loom_allocate_as_open_mpi(&c->core, comm);
    rc = loom_run_out(c, views, copies, rc);
    if (OMPI_SUCCESS == rc) loom_note_served(LOOM_BLOCKING, &c->core, comm, module, algorithm, rule);
    loom_call_fini(c);
    return rc;
}

/* A repeat served from the kept call as it is (loom_decide's d.kept): its core call with this
 * call's buffers (loom_repeat_core), run straight away. The kept call uses the user's buffers
 * as they are (dense host memory), so there is nothing to copy in or out, and no glue record
 * to make: about 100 instructions fewer than loom_describe_repeat and run_described
 * (callgrind). */
static int run_kept(const loom_mpi_call_t *mpi, const loom_served_repeat_t *s, struct ompi_communicator_t *comm,
                    mca_coll_loom_module_t *module)
{
    loom_call_t call;
    loom_reduce_plan_t plan;
    void *send_user, *recv_user;
    loom_repeat_core(s, mpi, &call, &plan, &send_user, &recv_user);
    const char *algorithm = s->algorithm, *rule = s->rule;
    const int rc = run(algorithm, &call, comm, module);
    if (OMPI_SUCCESS == rc) loom_note_served(LOOM_BLOCKING, &call, comm, module, algorithm, rule);
    return rc;
}

/* An online tuning trial (coll_loom_autotune.c): the candidate run or handed on, timed on this
 * rank, the time reported (the trial's last call agrees on the winner with every rank). */
static int run_trial(loom_glue_call_t *c, const loom_decision_t *d, struct ompi_communicator_t *comm,
                     mca_coll_loom_module_t *module)
{
    const long long t0 = loom_autotune_now_ns();
    const int rc = NULL == d->algorithm ? hand_on(c, d->device, comm, module)
                                        : run_described(c, d->device, d->algorithm, d->rule, comm, module);
    const long long ns = loom_autotune_now_ns() - t0;
    if (OMPI_SUCCESS != rc) return rc;
    return loom_autotune_record(comm, module, d, t0, ns);
}

int mca_coll_loom_serve(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat)
{
    loom_glue_call_t c;
    loom_decision_t d;
    const int rc = loom_decide(&c, mpi, 1, comm, module, repeat, &d);
    if (NULL != d.kept) return run_kept(mpi, d.kept, comm, module);
    if (OMPI_SUCCESS != rc) {
        loom_call_fini(&c);
        return rc;
    }
    if (NULL != d.tune) return run_trial(&c, &d, comm, module);
    if (NULL == d.algorithm) return hand_on(&c, d.device, comm, module);
    return run_described(&c, d.device, d.algorithm, d.rule, comm, module);
}
