/*
 * What a call's finish tells the user: the MPI_T counters of served and handed-on calls and
 * segment set-ups, and the verbose lines (coll_loom_verbose) and timeline events
 * (coll_loom_trace) naming what served a call, or why it was handed on. Called by the pipeline
 * and by both forms' step 4; calls nothing of loom's but the timeline.
 */
#include "coll_loom_report.h"
#include "coll_loom_trace.h"

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

/* The slow path of loom_note_served: verbose lines, the timeline. */
static void report_served(loom_kind_t kind, const loom_call_t *call, struct ompi_communicator_t *comm,
                          mca_coll_loom_module_t *module, const char *algorithm, const char *rule)
{
    if (LOOM_BLOCKING == kind) loom_trace_served(call, comm, algorithm, rule);
    const int first =
        mca_coll_loom_component.verbose >= 1 && 0 == ompi_comm_rank(comm) && first_time(module, call->coll, algorithm);
    if (!first && mca_coll_loom_component.verbose < 2) return;
    /* The options it ran with, as `loom-rules explain` prints them. */
    char options[160], name[48];
    loom_choice_options(call, mca_coll_loom_component.segment_size, mca_coll_loom_component.pat_buffer_size,
                        mca_coll_loom_component.knomial_radix, mca_coll_loom_component.alltoallv_max_requests, options,
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

void loom_note_served(loom_kind_t kind, const loom_call_t *call, struct ompi_communicator_t *comm,
                      mca_coll_loom_module_t *module, const char *algorithm, const char *rule)
{
    loom_count_call(&mca_coll_loom_component.served[kind][call->coll]);
    if (mca_coll_loom_component.noting) report_served(kind, call, comm, module, algorithm, rule);
}

void loom_report_declined(loom_kind_t kind, loom_coll_t coll, struct ompi_communicator_t *comm, const char *why)
{
    loom_trace_declined(kind, coll, comm, why);
    if (mca_coll_loom_component.verbose < 2) return;
    char name[48];
    opal_output_verbose(
        2, mca_coll_loom_component.output, "coll:loom: %s on %s (rank %d of %d): declined, falling back: %s",
        loom_form_name(kind, coll, name, sizeof(name)), comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm), why);
}

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
