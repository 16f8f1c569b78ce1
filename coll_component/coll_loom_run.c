/*
 * What every collective entry point shares: choosing the algorithm, running it over the PML
 * with the collective's tag, and recording the outcome (MPI_T counters, verbose lines).
 */
#include "coll_loom.h"

#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/runtime/mpiruntime.h"

#include <stdlib.h>

static const int tags[LOOM_COLL_COUNT] = {
    [LOOM_COLL_ALLREDUCE] = MCA_COLL_BASE_TAG_ALLREDUCE,
    [LOOM_COLL_REDUCE_SCATTER] = MCA_COLL_BASE_TAG_REDUCE_SCATTER,
    [LOOM_COLL_REDUCE_SCATTER_BLOCK] = MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK,
    [LOOM_COLL_ALLGATHER] = MCA_COLL_BASE_TAG_ALLGATHER,
    [LOOM_COLL_ALLGATHERV] = MCA_COLL_BASE_TAG_ALLGATHERV,
    [LOOM_COLL_BCAST] = MCA_COLL_BASE_TAG_BCAST,
    [LOOM_COLL_REDUCE] = MCA_COLL_BASE_TAG_REDUCE,
    [LOOM_COLL_BARRIER] = MCA_COLL_BASE_TAG_BARRIER,
    [LOOM_COLL_ALLTOALL] = MCA_COLL_BASE_TAG_ALLTOALL,
};

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

/* A locked add waits for the stores before it to drain - after a shared-memory collective,
 * stores to cache lines the other ranks are reading - which measured as about 15% of an 8-byte
 * shm bcast's time. Only MPI_THREAD_MULTIPLE needs it. */
static inline void count_call(unsigned long long *counter)
{
    if (ompi_mpi_thread_multiple) __atomic_fetch_add(counter, 1ULL, __ATOMIC_RELAXED);
    else ++*counter;
}

void mca_coll_loom_note_served(const loom_call_t *call, struct ompi_communicator_t *comm,
                               mca_coll_loom_module_t *module, const char *algorithm,
                               const char *rule)
{
    count_call(&mca_coll_loom_component.served[call->coll]);
    const int first = mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm) &&
                      first_time(module, call->coll, algorithm);
    if (!first && mca_coll_loom_component.verbose < 2) return;
    /* The options it ran with, as `loom-rules explain` prints them. */
    char options[160];
    loom_choice_options(call, mca_coll_loom_component.segment_size,
                        mca_coll_loom_component.pat_buffer_size, options, sizeof(options));
    if (first)
        opal_output(mca_coll_loom_component.output,
                    "coll:loom: %s on %s: %zu bytes, %d ranks: algorithm %s, chosen by %s, options: %s",
                    loom_coll_name(call->coll), comm->c_name,
                    loom_message_bytes(call, ompi_comm_size(comm)), ompi_comm_size(comm), algorithm,
                    rule, options);
    if (mca_coll_loom_component.verbose >= 2)
        opal_output_verbose(2, mca_coll_loom_component.output,
                            "coll:loom: %s on %s (rank %d of %d): %zu bytes, algorithm %s, chosen by %s, "
                            "options: %s (segment %s)",
                            loom_coll_name(call->coll), comm->c_name, ompi_comm_rank(comm),
                            ompi_comm_size(comm), loom_message_bytes(call, ompi_comm_size(comm)),
                            algorithm, rule, options,
                            LOOM_SEGMENT_READY == call->segment     ? "ready"
                            : LOOM_SEGMENT_NOT_YET == call->segment ? "not-yet"
                                                                    : "none");
}

void mca_coll_loom_note_declined(loom_coll_t coll, struct ompi_communicator_t *comm,
                                 const char *why)
{
    count_call(&mca_coll_loom_component.declined[coll]);
    opal_output_verbose(2, mca_coll_loom_component.output,
                        "coll:loom: %s on %s (rank %d of %d): declined, falling back: %s",
                        loom_coll_name(coll), comm->c_name, ompi_comm_rank(comm),
                        ompi_comm_size(comm), why);
}

/* May comm have a shared segment (coll_loom_shm_max_mib)? The same answer on every rank. */
static int segment_allowed(struct ompi_communicator_t *comm)
{
    const int mib = mca_coll_loom_component.shm_max_mib;
    return mib > 0 && loom_shm_segment_bytes(ompi_comm_size(comm)) <= ((size_t) mib << 20);
}

/* Sets up comm's shared segment, inside the call of `coll` every rank has reached. */
static int make_segment(loom_coll_t coll, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    int ready = 0, rc = OMPI_SUCCESS;
    const char *outcome = "refused (larger than coll_loom_shm_max_mib)";
    if (segment_allowed(comm)) {
        loom_pml_transport_t transport;
        loom_pml_transport_init(&transport, comm, module, tags[coll]);
        transport.ops.shared_state = &module->shm;
        ready = loom_shm_setup(&transport.ops);
        rc = loom_pml_transport_fini(&transport);
        outcome = 1 == ready ? "set up" : "unavailable (a rank could not map it)";
    }
    if (mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm))
        opal_output(mca_coll_loom_component.output,
                    "coll:loom: shared-memory segment for %s %s after %d calls that wanted it; "
                    "algorithms without one serve instead",
                    comm->c_name, outcome, module->segment_wanted);
    return 1 == ready && OMPI_SUCCESS == rc ? LOOM_SEGMENT_READY : LOOM_SEGMENT_NONE;
}

const char *loom_choose_for(loom_call_t *call, struct ompi_communicator_t *comm,
                            mca_coll_loom_module_t *module, const char **why, const char **rule)
{
    void *rules = mca_coll_loom_rules(comm, module);
    if (NULL == rules) {
        *why = "out of memory for loom's rule tables";
        return NULL;
    }
    const char *forced = mca_coll_loom_component.forced[call->coll];
    const size_t segment_bytes = call->segment_bytes, buffer_bytes = call->buffer_bytes;
    call->segment = module->segment;
    call->wants_segment = 0;
    const char *algorithm = loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
    if (!call->wants_segment) return algorithm;
    /* A shared segment pays back its set-up only over many calls, and most communicators
     * live for a few: it is made at the coll_loom_shm_min_calls-th call that wants it (at
     * once for a forced algorithm). Every rank counts the same calls. */
    const int is_forced = NULL != forced && '\0' != forced[0];
    if (!is_forced && ++module->segment_wanted < mca_coll_loom_component.shm_min_calls) return algorithm;
    module->segment = make_segment(call->coll, comm, module);
    call->segment = module->segment;
    call->wants_segment = 0;
    call->segment_bytes = segment_bytes; /* the first choice's rule options do not carry over */
    call->buffer_bytes = buffer_bytes;
    return loom_choose(call, ompi_comm_size(comm), forced, rules, why, rule);
}

static int to_ompi_error(int rc)
{
    if (LOOM_ERR_NO_MEMORY == rc) return OMPI_ERR_OUT_OF_RESOURCE;
    if (LOOM_ERR_INTERNAL == rc) return OMPI_ERROR;
    return rc;
}

int loom_run_on(const char *algorithm, const loom_call_t *call, struct ompi_communicator_t *comm,
                mca_coll_loom_module_t *module)
{
    /* The tuning parameters are read here, once per call, so every collective sees the
     * current values (they can be changed through MPI_T between calls); a rule's own
     * segment= or buffer= option, already in the call, takes precedence. */
    loom_call_t tuned = *call;
    if (0 == tuned.segment_bytes) tuned.segment_bytes = mca_coll_loom_component.segment_size;
    if (0 == tuned.buffer_bytes) tuned.buffer_bytes = mca_coll_loom_component.pat_buffer_size;
    /* At coll_loom_verbose >= 1 the topology is made (and described) on the first call. */
    if (mca_coll_loom_component.verbose >= 1 && NULL == module->topology) {
        int rc = mca_coll_loom_topology(comm, module);
        if (OMPI_SUCCESS != rc) return rc;
    }
    loom_pml_transport_t transport;
    loom_pml_transport_init(&transport, comm, module, tags[call->coll]);
    transport.ops.shared_state = &module->shm;
    /* hierarchical's intra-node phases: a node's segment is no larger than comm's. */
    transport.ops.node_shared_state = segment_allowed(comm) ? &module->node_shm : NULL;
    int rc = to_ompi_error(loom_run(algorithm, &transport.ops, &tuned));
    int fini_rc = loom_pml_transport_fini(&transport);
    return OMPI_SUCCESS == rc ? fini_rc : rc;
}

int loom_sizes_init(loom_sizes_t *s, int n)
{
    s->v = s->inline_v;
    if ((size_t) n > sizeof(s->inline_v) / sizeof(s->inline_v[0])) {
        s->v = malloc((size_t) n * sizeof(size_t));
        if (NULL == s->v) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

void loom_sizes_fini(loom_sizes_t *s)
{
    if (s->v != s->inline_v) free(s->v);
    s->v = NULL;
}
