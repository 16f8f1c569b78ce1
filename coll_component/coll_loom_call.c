/*
 * The life of one collective call in the glue, the same for every collective:
 *
 *   describe   the MPI arguments become the core's call and the call's buffers
 *              (loom_describe, coll_loom_buffers.c); the memory kind is found;
 *   choose     once, by the one chooser (loom_choose, selection_rules/), after the
 *              communicator's shared segment is made if the chooser wants it;
 *   run        dense views (and host copies of device buffers where needed), the algorithm
 *              over the PML (loom_run, algorithms/), the views emptied back;
 *   finish     MPI_T counters and verbose lines name what ran, or why the call was handed
 *              on to the previous component (on host copies, for device buffers).
 *
 * Whether loom serves a call depends only on what every rank shares (counts, datatypes, op,
 * root, the communicator, the rule tables), so no rank runs loom while another hands on.
 */
#include "coll_loom_call.h"

#include "loom_device.h"

#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/runtime/mpiruntime.h"

#include <stdlib.h>
#include <string.h>

/* Open MPI's tag for each blocking collective (collectives.def's NAME). */
static const int tags[LOOM_COLL_COUNT] = {
#define LOOM_COLLECTIVE(name, NAME, ...) [LOOM_COLL_##NAME] = MCA_COLL_BASE_TAG_##NAME,
#include "collectives.def"
#undef LOOM_COLLECTIVE
};

/* ---- finish: counters and verbose output ---- */

/* 1 the first time `algorithm` serves `coll` on this module's communicator. */
static int first_time(mca_coll_loom_module_t *module, loom_coll_t coll, const char *algorithm)
{
    const char **seen = module->reported[coll];
    const size_t n = sizeof(module->reported[coll]) / sizeof(seen[0]);
    for (size_t i = 0; i < n; ++i) {
        if (seen[i] == algorithm) return 0; /* names are static strings: compare pointers */
        if (NULL == seen[i]) {
            seen[i] = algorithm;
            return 1;
        }
    }
    return 0;
}

const char *loom_form_name(loom_kind_t kind, loom_coll_t coll, char *buf, size_t size)
{
    if (LOOM_BLOCKING == kind) return loom_coll_name(coll);
    snprintf(buf, size, LOOM_NONBLOCKING == kind ? "i%s" : "%s_init", loom_coll_name(coll));
    return buf;
}

void loom_note_served(loom_kind_t kind, const loom_call_t *call, struct ompi_communicator_t *comm,
                      mca_coll_loom_module_t *module, const char *algorithm, const char *rule)
{
    loom_count_call(&mca_coll_loom_component.served[kind][call->coll]);
    const int first =
        mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm) && first_time(module, call->coll, algorithm);
    if (!first && mca_coll_loom_component.verbose < 2) return;
    /* The options it ran with, as `loom-rules explain` prints them. */
    char options[160], name[48];
    loom_choice_options(call, mca_coll_loom_component.segment_size, mca_coll_loom_component.pat_buffer_size, options,
                        sizeof(options));
    const size_t bytes = loom_message_bytes(call, ompi_comm_size(comm));
    const char *form = loom_form_name(kind, call->coll, name, sizeof(name));
    if (first)
        opal_output(mca_coll_loom_component.output,
                    "coll:loom: %s on %s: %zu bytes, %d ranks: algorithm %s, chosen by %s, options: %s", form,
                    comm->c_name, bytes, ompi_comm_size(comm), algorithm, rule, options);
    if (mca_coll_loom_component.verbose >= 2)
        opal_output_verbose(2, mca_coll_loom_component.output,
                            "coll:loom: %s on %s (rank %d of %d): %zu bytes, algorithm %s, chosen by %s, "
                            "options: %s (segment %s)",
                            form, comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm), bytes, algorithm, rule,
                            options,
                            LOOM_SEGMENT_READY == call->segment     ? "ready"
                            : LOOM_SEGMENT_NOT_YET == call->segment ? "not-yet"
                            : LOOM_SEGMENT_PENDING == call->segment ? "pending"
                                                                    : "none");
}

void loom_report_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why)
{
    char name[48];
    opal_output_verbose(
        2, mca_coll_loom_component.output, "coll:loom: %s on %s (rank %d of %d): declined, falling back: %s",
        loom_form_name(kind, coll, name, sizeof(name)), comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm), why);
}

/* ---- choose ---- */

void loom_note_segment(struct ompi_communicator_t *comm, const mca_coll_loom_module_t *module, int verdict, int refused,
                       const char *by)
{
    loom_count_call(0 != verdict ? &mca_coll_loom_component.segments_set_up
                                 : &mca_coll_loom_component.segments_unavailable);
    if (mca_coll_loom_component.verbose < 1 || 0 != ompi_comm_rank(comm)) return;
    opal_output(mca_coll_loom_component.output,
                "coll:loom: shared-memory segment for %s %s %safter %d calls that wanted it%s; "
                "algorithms without one serve instead",
                comm->c_name,
                refused        ? "refused (larger than coll_loom_shm_max_mib)"
                : 0 != verdict ? "set up"
                               : "unavailable (a rank could not map it)",
                by, module->segment_wanted,
                0 == verdict ? ""
                : 0 == (verdict & LOOM_SHM_SINGLE_COPY)
                    ? ", without single copy (refused on this node or coll_loom_single_copy 0)"
                : 0 != (verdict & LOOM_SHM_MAPPED) ? ", with single copy (XPMEM) for blocking calls"
                                                   : ", with single copy (CMA) for blocking calls");
}

void loom_adopt_segment(mca_coll_loom_module_t *module, int verdict)
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
    loom_pml_transport_init(&transport, comm, module, tags[call->coll]);
    transport.ops.shared_state = slot;
    const int ready = loom_shm_setup(&transport.ops, single_copy, refuse);
    const int rc = loom_pml_transport_fini(&transport);
    return ready < 0 || OMPI_SUCCESS != rc ? 0 : ready;
}

/* Sets up comm's shared segment, inside `call`, which every rank has reached. */
static void make_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    const int ready = module->segment_allowed
                          ? set_up_segment(call, comm, module, &module->shm, mca_coll_loom_component.single_copy, 0)
                          : 0;
    loom_adopt_segment(module, ready);
    loom_note_segment(comm, module, ready, !module->segment_allowed, "");
}

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
 * (LOOM_SINGLE_COPY_*; operations never use it): the first answer's rule options do not carry
 * over. */
static const char *choose_again(loom_call_t *call, struct ompi_communicator_t *comm, int segment, int single_copy,
                                const char *forced, void *rules, const char **why, const char **rule)
{
    call->segment = segment;
    call->single_copy = single_copy;
    call->wants_segment = 0;
    call->segment_bytes = call->buffer_bytes = 0;
    return loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
}

/* The algorithm for `call` (coll_loom_<coll>_algorithm, else the rules), or NULL and *why. */
static const char *choose(loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                          const char **why, const char **rule)
{
    void *rules = mca_coll_loom_rules(comm, module);
    if (NULL == rules) {
        *why = "out of memory for loom's rule tables";
        return NULL;
    }
    const char *forced = mca_coll_loom_component.forced[call->coll];
    if (LOOM_SEGMENT_PENDING == module->segment) mca_coll_loom_settle_segment(module);
    call->segment = module->segment;
    call->single_copy = module->single_copy;
    const char *algorithm = loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
    if (!call->wants_segment || !segment_due(module, forced)) return algorithm;
    make_segment(call, comm, module);
    return choose_again(call, comm, module->segment, module->single_copy, forced, rules, why, rule);
}

/* ---- run ---- */

/* A persistent request's own segment, in *slot, set up inside its init (every rank of comm is
 * there: the init is nonlocal). A rank with coll_loom_shm_persistent_max segments of persistent
 * requests alive refuses it, and the set-up's agreement makes that the verdict of every rank.
 * The verdict's bits (0: none). */
static int make_own_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
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

/* The chooser for non-blocking and persistent calls (coll_loom_request.c): no single copy.
 *
 * A persistent request never uses the communicator's segment: MPI lets ranks start persistent
 * collectives in different orders (MPI 4.0 section 6.13; only the inits are ordered), and
 * between blocking calls at different places, while the calls on a segment take turns in one
 * order on every rank (ShmTurns): rank 0 starting a bcast then a barrier, rank 1 the barrier
 * first, would each wait for the other. So a persistent request that the rules would serve on
 * shared memory gets a segment of its own, set up inside its init (nonlocal: MPI 4.1 section
 * 7.13, "initialization calls for MPI persistent collective operations are nonlocal and follow
 * all the existing rules for collective operations"; loom applies the same to Open MPI 4.1's
 * MPIX_*_init) into *own_segment, used by no other call: its starts follow each other, so it
 * needs no turns and no order. The communicator's info key
 * mpi_assert_strict_persistent_collective_ordering would not let persistent requests share the
 * communicator's segment either, since it orders starts among themselves only, not against
 * blocking and non-blocking calls.
 *
 * Non-blocking calls use the communicator's segment, taken in turns (loom_shm_take_turn) in the
 * order of the MPI calls, which MPI makes the same on every rank.
 *
 * A non-blocking call is local (MPI_Iallreduce returns whether or not the other ranks called),
 * so it cannot wait for the set-up, which would also end at different times on different
 * ranks while every rank must decide the next calls alike. The coll_loom_shm_min_calls-th call
 * that wants the segment (counted with the blocking ones; a forced algorithm's at once) starts
 * the set-up as an operation of its own, holding the segment's first turn; from then on the
 * segment is PENDING and non-blocking calls are decided as if it were there, each with a
 * stand-in that needs none for the case it could not be had (loom_choose; decide.hpp). Every
 * rank decides the same, whatever its set-up's progress; a blocking call or persistent init
 * ends the PENDING state where every rank reaches it. */
const char *loom_choose_unshared(loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                                 void **own_segment, const char **why, const char **rule)
{
    void *rules = mca_coll_loom_rules(comm, module);
    if (NULL == rules) {
        *why = "out of memory for loom's rule tables";
        return NULL;
    }
    const char *forced = mca_coll_loom_component.forced[call->coll];
    const int persistent = LOOM_FORM_PERSISTENT == call->form;
    call->segment = persistent ? LOOM_SEGMENT_NOT_YET : module->segment;
    call->single_copy = LOOM_SINGLE_COPY_OFF;
    const char *algorithm = loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
    if (!call->wants_segment) return algorithm;
    if (persistent) {
        const int own = 0 != make_own_segment(call, comm, module, own_segment);
        algorithm = choose_again(call, comm, own ? LOOM_SEGMENT_READY : LOOM_SEGMENT_NONE, LOOM_SINGLE_COPY_OFF, forced,
                                 rules, why, rule);
        /* Still set: the decision took a set-up every rank joined, so it is never remembered for
         * repeats (a repeat found on some ranks only would skip it there). */
        call->wants_segment = 1;
        return algorithm;
    }
    if (!segment_due(module, forced)) return algorithm;
    if (OMPI_SUCCESS != mca_coll_loom_begin_segment(comm, module)) {
        *why = "out of memory for setting up the shared-memory segment";
        return NULL;
    }
    return choose_again(call, comm, module->segment, LOOM_SINGLE_COPY_OFF, forced, rules, why, rule);
}

int loom_to_ompi_error(int rc)
{
    if (LOOM_ERR_NO_MEMORY == rc) return OMPI_ERR_OUT_OF_RESOURCE;
    if (LOOM_ERR_INTERNAL == rc) return OMPI_ERROR;
    return rc;
}

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
    loom_pml_transport_init(&transport, comm, module, tags[call->coll]);
    transport.ops.shared_state = &module->shm;
    /* hierarchical's intra-node phases: a node's segment is no larger than comm's. */
    transport.ops.node_shared_state = module->segment_allowed ? &module->node_shm : NULL;
    int rc = loom_to_ompi_error(loom_run(algorithm, &transport.ops, call));
    int fini_rc = loom_pml_transport_fini(&transport);
    return OMPI_SUCCESS == rc ? fini_rc : rc;
}

/* ---- the call ---- */

/* Calls the previous component, marking the collective as being handed on (see
 * mca_coll_loom_module_t.handing_on). */
static int pass_on(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    const unsigned bit = 1u << mpi->coll;
    module->handing_on |= bit;
    const int rc = mca_coll_loom_hand_on(mpi, comm, module);
    module->handing_on &= ~bit;
    return rc;
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

/* Hands the call on: as it is, or for device buffers on host copies (this Open MPI cannot
 * read device memory). */
static int hand_on(loom_glue_call_t *c, int device, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                   const char *why)
{
    loom_note_declined(LOOM_BLOCKING, c->mpi->coll, comm, why);
    int rc = device ? loom_host_copies_in(c) : OMPI_SUCCESS;
    if (OMPI_SUCCESS == rc) rc = pass_on(c->mpi, comm, module);
    if (OMPI_SUCCESS == rc && device) rc = loom_host_copies_out(c);
    loom_call_fini(c);
    return rc;
}

/* ---- repeats of a call ---- */

/* Describing and choosing cost about 300 instructions a call (callgrind: an 8-byte allreduce
 * 1400 in all, a handed-on 8-byte bcast 570 against tuned's 350). An application repeats its
 * calls, so the last call per form and collective is remembered by the arguments the
 * decision depends on - count, datatypes and op (predefined only: a user's datatype can be
 * freed and its address reused by another), root, in place - with the communicator's segment
 * and single-copy state, and its decision: a repeat is handed on at once, or served by the
 * same algorithm from the described call kept (loom_served_repeat_t), with only its buffers'
 * addresses new. A forced algorithm is part of the key, so benchmarks of forced algorithms
 * time the path applications take. The decision is the same on every rank, since every rank
 * makes the same calls and memo. Collectives with per-rank counts, device buffers, buffers that
 * need dense copies and calls handed back from below always take the full path. */
static int in_place_of(const loom_mpi_call_t *mpi) { return loom_in_place_of(mpi->sbuf, mpi->rbuf); }

static int remembered(const loom_mpi_call_t *mpi)
{
    return NULL == mpi->counts && (NULL == mpi->dtype || ompi_datatype_is_predefined(mpi->dtype)) &&
           (NULL == mpi->sdtype || ompi_datatype_is_predefined(mpi->sdtype)) &&
           (NULL == mpi->op || ompi_op_is_intrinsic(mpi->op));
}

const loom_repeat_t *loom_repeat_of(const loom_mpi_call_t *mpi, const mca_coll_loom_module_t *module)
{
    if (NULL != mpi->counts) return NULL;
    return loom_repeat_of_args(module, mpi->kind, mpi->coll, mpi->sbuf, mpi->rbuf, mpi->count, mpi->dtype, mpi->op,
                               mpi->root, mpi->scount, mpi->sdtype);
}

/* 0 if the algorithm forced now has too long a name to keep (no algorithm has). */
static int set_key(loom_repeat_t *r, const loom_mpi_call_t *mpi, const mca_coll_loom_module_t *module)
{
    const char *forced = loom_forced_now(mpi->coll);
    if (strlen(forced) >= sizeof(r->forced)) return 0;
    strcpy(r->forced, forced);
    r->valid = 1;
    r->count = mpi->count;
    r->scount = mpi->scount;
    r->root = mpi->root;
    r->in_place = in_place_of(mpi);
    r->dtype = mpi->dtype;
    r->sdtype = mpi->sdtype;
    r->op = mpi->op;
    r->segment = module->segment;
    r->single_copy = module->single_copy;
    return 1;
}

void loom_remember_handed_on(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module, const char *why)
{
    loom_repeat_t *r = &module->repeats[mpi->kind][mpi->coll];
    r->valid = 0;
    if (!remembered(mpi) || !set_key(r, mpi, module)) return;
    r->why = why;
    r->is_served = 0;
}

void loom_remember_served(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module, const loom_glue_call_t *c,
                          const char *algorithm, const char *rule)
{
    loom_repeat_t *r = &module->repeats[mpi->kind][mpi->coll];
    r->valid = 0;
    /* A buffer's address is NULL in the description where the call does not use it (in place,
     * a reduce's non-root), which a repeat must tell from a NULL the application passed: only
     * calls with data (or barriers) are kept. */
    if (!remembered(mpi) || !c->dense || c->core.wants_segment || LOOM_MEMORY_HOST != c->core.memory ||
        NULL != c->core.copier || (mpi->count <= 0 && LOOM_COLL_BARRIER != mpi->coll))
        return;
    if (NULL == r->served && NULL == (r->served = malloc(sizeof(*r->served)))) return;
    loom_served_repeat_t *s = r->served;
    s->core = c->core;
    s->core.sbuf = s->core.rbuf = NULL;
    s->core.counts = NULL;
    s->has_counts = NULL != c->core.counts;
    s->each_count = s->has_counts ? c->core.counts[0] : 0;
    s->send = c->send;
    s->recv = c->recv;
    s->send_used = NULL != c->send.user;
    s->recv_used = NULL != c->recv.user;
    s->send_lb = s->send_used ? (const char *)c->core.sbuf - (const char *)c->send.user : 0;
    s->recv_lb = s->recv_used ? (const char *)c->core.rbuf - (const char *)c->recv.user : 0;
    s->send.user = s->recv.user = NULL;
    s->result_count = c->result_count;
    s->plan = c->plan;
    if (c->core.op.ctx == &c->plan) s->core.op.ctx = s->plan.reduction.ctx = &s->plan;
    s->algorithm = algorithm;
    s->rule = rule;
    if (!set_key(r, mpi, module)) return;
    r->why = NULL;
    r->is_served = 1;
}

/* Runs the described call c with algorithm (chosen by rule) - through dense copies, of host
 * copies for device buffers, where its buffers are not used in place - and finishes it. */
static int run_described(loom_glue_call_t *c, int device, const char *algorithm, const char *rule,
                         struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    int rc = OMPI_SUCCESS;
    if (!c->dense) {
        /* Dense copies; of device buffers, made from host copies. */
        rc = device ? loom_host_copies_in(c) : OMPI_SUCCESS;
        if (OMPI_SUCCESS == rc) rc = loom_views_in(c);
    }
    if (OMPI_SUCCESS == rc) rc = run(algorithm, &c->core, comm, module);
    if (OMPI_SUCCESS == rc && !c->dense) {
        rc = loom_views_out(c);
        if (OMPI_SUCCESS == rc && device) rc = loom_host_copies_out(c);
    }
    if (OMPI_SUCCESS == rc) loom_note_served(LOOM_BLOCKING, &c->core, comm, module, algorithm, rule);
    loom_call_fini(c);
    return rc;
}

/* A repeat of a served call whose core call has no per-rank counts: the kept core call with
 * this call's buffers (loom_repeat_core), run straight away. The kept call uses the user's
 * buffers as they are (dense host memory), so there is nothing to copy in or out, and no glue
 * record to make: about 100 instructions fewer than loom_describe_repeat and run_described
 * (callgrind). */
static int serve_repeat(const loom_mpi_call_t *mpi, const loom_served_repeat_t *s, struct ompi_communicator_t *comm,
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

int mca_coll_loom_serve(const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                        const loom_repeat_t *repeat)
{
    loom_glue_call_t c;
    int rc;
    /* A repeat of a handed-on call was handed on by the entry point (HAND_ON_REPEAT) unless the
     * call was handed back from below: then, as any call handed back, it takes the whole path. */
    if (NULL != repeat && repeat->is_served && 0 == (module->handing_on & (1u << mpi->coll))) {
        if (!repeat->served->has_counts) return serve_repeat(mpi, repeat->served, comm, module);
        rc = loom_describe_repeat(&c, mpi, comm, repeat->served);
        if (OMPI_SUCCESS != rc) {
            loom_call_fini(&c);
            return rc;
        }
        return run_described(&c, 0, repeat->served->algorithm, repeat->served->rule, comm, module);
    }

    const char *why = loom_describe(&c, mpi, comm, &rc), *rule = NULL, *algorithm = NULL;
    if (OMPI_SUCCESS != rc) {
        loom_call_fini(&c);
        return rc;
    }

    /* A call handed back from below while loom hands it on is served by loom, as a call Open
     * MPI would get wrong is: the rules pass over fallback rules and unservable forced
     * algorithms. Every rank sees the same, since the component below decides alike. */
    const int returned = 0 != (module->handing_on & (1u << mpi->coll));
    if (returned) {
        c.core.keep_from_open_mpi = 1;
        opal_output_verbose(2, mca_coll_loom_component.output,
                            "coll:loom: %s on %s (rank %d of %d): handed back by the component below; loom serves it",
                            loom_coll_name(mpi->coll), comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm));
    }

    /* Device buffers are a property of the call: the rules see memory=cuda, and the core
     * stages the algorithm through host buffers with the device copier. */
    const int device = loom_is_device(c.send.user) || loom_is_device(c.recv.user);
    if (device) {
        const char *no_copier = NULL;
        c.core.copier = loom_device_copier(&no_copier);
        if (NULL == c.core.copier) {
            static const char *const cannot_stage =
                "device buffers, and loom cannot stage them here (see the message on stderr)";
            loom_call_fini(&c);
            if (returned) return cannot_serve_returned(mpi, comm, cannot_stage);
            loom_note_declined(LOOM_BLOCKING, mpi->coll, comm, cannot_stage);
            return pass_on(mpi, comm, module);
        }
        c.core.memory = LOOM_MEMORY_CUDA;
        c.core.staging_bytes = loom_device_staging_bytes();
    }

    if (NULL == why) algorithm = choose(&c.core, comm, module, &why, &rule);
    if (NULL == algorithm && returned) {
        loom_call_fini(&c);
        return cannot_serve_returned(mpi, comm, why);
    }
    if (NULL == algorithm) {
        /* Remembered only as decided without wanting a segment: such a call counts towards
         * making one, and its repeat must too. */
        if (!device && !c.core.wants_segment) loom_remember_handed_on(mpi, module, why);
        return hand_on(&c, device, comm, module, why);
    }

    if (!returned && !device) loom_remember_served(mpi, module, &c, algorithm, rule);
    return run_described(&c, device, algorithm, rule, comm, module);
}
