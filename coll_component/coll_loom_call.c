/*
 * The pipeline every collective call takes, in every form (blocking, non-blocking,
 * persistent), decided once:
 *
 *   describe   the MPI arguments become the core's call and the call's buffers
 *              (loom_describe, coll_loom_buffers.c) - or, for a repeat of a served call, the
 *              kept description with this call's buffers (coll_loom_repeat.c);
 *   memory     device buffers found: the rules see memory=cuda;
 *   choose     once, by the one chooser (loom_choose, selection_rules/), with the state of
 *              the communicator's shared segment, which is set up here when the chooser wants
 *              it (coll_loom_segment.c);
 *   remember   the decision kept for the call's repeats (coll_loom_repeat.c).
 *
 * Then the call's form runs it (step 4, its shared part in coll_loom_run.c): straight
 * (coll_loom_blocking.c) or as a resumable operation under a request (coll_loom_request_start.c,
 * coll_loom_request_progress.c), or hands it on to the previous component (coll_loom_hand_on.c).
 * Whether loom serves a call depends only on what every rank shares (counts, datatypes, op,
 * root, the communicator, the rule tables, the calls made before), so no rank runs loom while
 * another hands on.
 */
#include "coll_loom_call.h"
#include "coll_loom_autotune.h"
#include "coll_loom_neighbours.h"
#include "coll_loom_repeat.h"
#include "coll_loom_report.h"
#include "coll_loom_segment.h"

#include "loom_device.h"

/* Counts a call that wants the segment: 1 if the segment is due now - at the
 * coll_loom_shm_min_calls-th such call, at once for a forced algorithm. A shared segment pays
 * back its set-up only over many calls, and most communicators live for a few. Every rank
 * counts the same calls (blocking and non-blocking alike). */
static int segment_due(mca_coll_loom_module_t *module, const char *forced)
{
    const int is_forced = NULL != forced && '\0' != forced[0];
    return is_forced || ++module->segment_wanted >= mca_coll_loom_component.shm_min_calls;
}

/* Decides `call` again with its segment's new state (LOOM_SEGMENT_*) and single copy
 * (LOOM_SINGLE_COPY_*): the first answer's rule options do not carry over. */
static const char *choose_again(loom_call_t *call, struct ompi_communicator_t *comm, int segment, int single_copy,
                                const char *forced, void *rules, const char **why, const char **rule)
{
    call->segment = segment;
    call->single_copy = single_copy;
    call->wants_segment = 0;
    call->segment_bytes = call->buffer_bytes = call->radix = call->max_requests = 0;
    return loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
}

/* The algorithm for `call` (coll_loom_<coll>_algorithm, else the rules), or NULL and *why.
 * What the call may use of the communicator's segment depends on its form.
 *
 * A blocking call waits for a set-up a non-blocking call began (every rank reaches it at the
 * same point), sets the segment up itself when it is due, and may use single copy.
 *
 * Non-blocking calls use the communicator's segment, taken in turns (loom_shm_take_turn) in the
 * order of the MPI calls, which MPI makes the same on every rank. No single copy. A
 * non-blocking call is local (MPI_Iallreduce returns whether or not the other ranks called), so
 * it cannot wait for the set-up, which would also end at different times on different ranks
 * while every rank must decide the next calls alike. The call at which the segment is due
 * starts the set-up as an operation of its own, holding the segment's first turn
 * (d->begin_setup; coll_loom_request_start.c launches it before the call's own operation); from then
 * on the segment is PENDING and non-blocking calls are decided as if it were there, each with a
 * stand-in that needs none for the case it could not be had (loom_choose; decide.hpp). Every
 * rank decides the same, whatever its set-up's progress; a blocking call or persistent init
 * ends the PENDING state where every rank reaches it.
 *
 * A persistent request never uses the communicator's segment: MPI lets ranks start persistent
 * collectives in different orders (MPI 4.0 section 6.13; only the inits are ordered), and
 * between blocking calls at different places, while the calls on a segment take turns in one
 * order on every rank (ShmTurns): rank 0 starting a bcast then a barrier, rank 1 the barrier
 * first, would each wait for the other. So a persistent request that the rules would serve on
 * shared memory gets a segment of its own, set up inside its init (nonlocal: MPI 4.1 section
 * 7.13, "initialization calls for MPI persistent collective operations are nonlocal and follow
 * all the existing rules for collective operations"; loom applies the same to Open MPI 4.1's
 * MPIX_*_init) into d->own_segment, used by no other call: its starts follow each other, so it
 * needs no turns and no order. The communicator's info key
 * mpi_assert_strict_persistent_collective_ordering would not let persistent requests share the
 * communicator's segment either, since it orders starts among themselves only, not against
 * blocking and non-blocking calls. No single copy. */
static const char *choose(loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                          loom_decision_t *d, const char **why, const char **rule)
{
    void *rules = mca_coll_loom_rules(comm, module);
    if (NULL == rules) {
        *why = "out of memory for loom's rule tables";
        return NULL;
    }
    const char *forced = mca_coll_loom_component.forced[call->coll];
    const int form = call->form;
    if (LOOM_FORM_BLOCKING == form && LOOM_SEGMENT_PENDING == module->segment) loom_settle_segment(module);
    call->segment = LOOM_FORM_PERSISTENT == form ? LOOM_SEGMENT_NOT_YET : module->segment;
    call->single_copy = LOOM_FORM_BLOCKING == form ? module->single_copy : LOOM_SINGLE_COPY_OFF;
    const char *algorithm = loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
    if (!call->wants_segment) return algorithm;
    if (LOOM_FORM_PERSISTENT == form) {
        const int own = 0 != loom_make_own_segment(call, comm, module, &d->own_segment);
        algorithm = choose_again(call, comm, own ? LOOM_SEGMENT_READY : LOOM_SEGMENT_NONE, LOOM_SINGLE_COPY_OFF, forced,
                                 rules, why, rule);
        if (NULL == algorithm || !loom_chosen_uses_segment(call)) loom_drop_own_segment(&d->own_segment);
        /* Still set: the decision took a set-up every rank joined, so it is never remembered for
         * repeats (a repeat found on some ranks only would skip it there). */
        call->wants_segment = 1;
        return algorithm;
    }
    if (!segment_due(module, forced)) return algorithm;
    if (LOOM_FORM_BLOCKING == form) {
        loom_make_segment(call, comm, module);
        return choose_again(call, comm, module->segment, module->single_copy, forced, rules, why, rule);
    }
    d->begin_setup = loom_segment_begin_pending(comm, module);
    return choose_again(call, comm, module->segment, LOOM_SINGLE_COPY_OFF, forced, rules, why, rule);
}

/* A call the component below handed back while loom was handing it on, which loom cannot
 * serve either: stop with a message rather than recurse until the stack overflows. */
static int cannot_serve_returned(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, const char *why)
{
    opal_output(0,
                "coll:loom: error: %s on %s was handed back to loom by the component loom handed it to, and "
                "loom cannot serve it (%s). Open MPI 4.1's coll/han does this on communicators it cannot "
                "handle: run with --mca coll_han_priority 0 (han's default in 4.1), or without loom",
                loom_coll_name(mpi->coll), comm->c_name, why);
    return OMPI_ERR_NOT_SUPPORTED;
}

/* The decision, handed on: counted, and remembered unless `remember` is 0. */
static int decline(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                   loom_decision_t *d, const char *why, int remember)
{
    d->why = why;
    if (remember) loom_remember_handed_on(mpi, module, why);
    loom_note_declined(mpi->kind, mpi->coll, comm, why);
    return OMPI_SUCCESS;
}

int loom_decide_call(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                     mca_coll_loom_module_t *module, const loom_repeat_t *repeat, loom_decision_t *d)
{
    *d = (loom_decision_t){.kept = NULL};
    /* Online tuning times a trial call's interval from the previous one's run to its entry here:
     * what the call costs the application, less the trial's own path (this pipeline, which a
     * kept repeat does not take; see coll_loom_autotune.c). Read only when tuning is on, and
     * never for a kept repeat. */
    if (mca_coll_loom_component.autotune && LOOM_BLOCKING == mpi->kind) d->tune_entry_ns = loom_autotune_now_ns();
    /* A call handed back from below while loom hands it on (blocking calls only: see
     * mca_coll_loom_module_t.handing_on) is served by loom, as a call Open MPI would get wrong
     * is: the rules pass over fallback rules and unservable forced algorithms, and its repeat
     * record is not used. Every rank sees the same, since the component below decides alike. */
    const int returned = LOOM_BLOCKING == mpi->kind && 0 != (module->handing_on & (1u << mpi->coll));

    /* describe: a repeat of a handed-on call is decided as before (the entry point hands it on
     * itself unless it was handed back from below, so only a persistent init's comes here); a
     * repeat of a served one was described from its kept record by loom_decide. */
    if (NULL != repeat && !returned && !repeat->is_served) {
        loom_call_start(c, mpi); /* nothing described, nothing to free */
        return decline(mpi, comm, module, d, repeat->why, 0);
    }
    /* The neighbourhood collectives' neighbours: the communicator's process topology, read once.
     * The collective's row is read once, here, for loom_describe too. */
    const loom_coll_row_t *row = loom_coll_row(mpi->coll);
    if (LOOM_COUNTS_per_neighbour == row->counts) {
        const char *none = NULL;
        if (NULL == (c->neighbours = mca_coll_loom_neighbourhood(comm, module, &none))) {
            loom_call_start(c, mpi);
            return decline(mpi, comm, module, d, none, 0);
        }
    }
    int rc;
    const char *why = loom_describe(c, mpi, row, comm, &rc);
    if (OMPI_SUCCESS != rc) return rc;
    c->core.form = LOOM_BLOCKING == mpi->kind      ? LOOM_FORM_BLOCKING
                   : LOOM_NONBLOCKING == mpi->kind ? LOOM_FORM_NONBLOCKING
                                                   : LOOM_FORM_PERSISTENT;
    if (returned) {
        c->core.keep_from_open_mpi = 1;
        opal_output_verbose(2, mca_coll_loom_component.output,
                            "coll:loom: %s on %s (rank %d of %d): handed back by the component below; loom serves it",
                            loom_coll_name(mpi->coll), comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm));
    }

    /* memory: device buffers are a property of the call. The rules see memory=cuda; a blocking
     * call's algorithm is staged through host buffers by the core with the device copier, an
     * operation runs on host copies (coll_loom_request_start.c). */
    if (loom_is_device(c->send.user) || loom_is_device(c->recv.user)) {
        const char *no_copier = NULL;
        void *copier = loom_device_copier(&no_copier);
        if (NULL == copier) {
            /* loom said why on stderr; the call is handed on as it is, never remembered. */
            why = "device buffers, and loom cannot stage them here (see the message on stderr)";
            return returned ? cannot_serve_returned(mpi, comm, why) : decline(mpi, comm, module, d, why, 0);
        }
        d->device = 1;
        c->core.memory = LOOM_MEMORY_CUDA;
        if (LOOM_BLOCKING == mpi->kind && loom_coll_counts_differ_by_rank(mpi->coll)) {
            /* Staging cuts every block into pieces by the counts, which differ from rank to rank
             * here (gatherv's and scatterv's are the root's to know; alltoallv's each rank's
             * own): the ranks would cut differently. They run on host copies. */
            c->dense = 0;
        } else if (LOOM_BLOCKING == mpi->kind) {
            c->core.copier = copier;
            c->core.staging_bytes = loom_device_staging_bytes();
        }
    }

    /* choose */
    const int described = NULL == why;
    if (described) d->algorithm = choose(&c->core, comm, module, d, &why, &d->rule);

    /* online tuning (coll_loom_autotune.c): a blocking call loom may serve, decided by the rules
     * (not forced, its segment settled), opens its class in the learned layer, or is a trial's. */
    int remember = 1;
    if (mca_coll_loom_component.autotune && LOOM_BLOCKING == mpi->kind && described && !returned && !d->device &&
        !c->core.wants_segment && '\0' == loom_forced_now(mpi->coll)[0]) {
        remember = loom_autotune_decide(c, comm, module, d, NULL == d->algorithm);
        if (NULL == d->algorithm && NULL != d->why) why = d->why;
        if (!remember) loom_forget(mpi, module);
    }

    /* remember: a call decided while it wanted the segment is not (it counted towards making
     * one, and its repeat must too), nor a device call (repeats are of host calls), nor a trial. */
    if (NULL == d->algorithm)
        return returned ? cannot_serve_returned(mpi, comm, why)
                        : decline(mpi, comm, module, d, why, remember && !d->device && !c->core.wants_segment);
    if (remember && !returned && !d->device) loom_remember_served(mpi, module, c, d->algorithm, d->rule);
    return OMPI_SUCCESS;
}
