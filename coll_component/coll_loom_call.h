/*
 * The pipeline's interface (coll_loom_call.c): a call described, its memory kind found, chosen
 * and remembered, the same on every rank; its answer, a loom_decision_t, says what the call's
 * form runs (coll_loom_blocking.c, coll_loom_request_start.c) or why it is handed on. Private to
 * coll_component/; its README maps the files and the order they call each other in.
 */
#ifndef COLL_LOOM_CALL_H
#define COLL_LOOM_CALL_H

#include "coll_loom_buffers.h"

BEGIN_C_DECLS

/* What the pipeline decided for a call: served by `algorithm` (chosen by `rule`), or handed on
 * (algorithm NULL) for `why`, already counted as such. */
typedef struct loom_decision {
    const char *algorithm, *rule, *why;
    /* A blocking repeat served from the kept call as it is, with no record made (the record
     * given to loom_decide is untouched): run it with loom_repeat_core. */
    const loom_served_repeat_t *kept;
    int device;        /* device buffers: a blocking call's algorithm is staged (the core's copier),
                          an operation runs on host copies; handed on, on host copies */
    int begin_setup;   /* non-blocking: the call starts the set-up of the communicator's segment, as
                          an operation launched before its own (the segment is PENDING) */
    void *own_segment; /* persistent: the segment of its own its algorithm runs on, or NULL */
    void *tune;        /* online tuning: the class whose trial this call is (step 4 times it), or NULL */
    int tune_candidate;
    long long tune_entry_ns; /* online tuning: when the call entered the pipeline (CLOCK_MONOTONIC) */
} loom_decision_t;

/* The pipeline: describes mpi on comm into c, finds its memory kind, chooses, remembers; the
 * same on every rank. repeat: the kept decision the entry point found for mpi
 * (loom_repeat_of_args; NULL: none). An error code (memory); then c is to be released with
 * loom_call_fini, as it is after a decision that is not d->kept. */
int loom_decide_call(loom_glue_call_t *c, const loom_mpi_call_t *mpi, struct ompi_communicator_t *comm,
                     mca_coll_loom_module_t *module, const loom_repeat_t *repeat, loom_decision_t *d);
/* loom_decide_call, with the decision for a repeat of a served call inline (unless it was
 * handed back from below): a blocking one without per-rank counts runs from the kept record
 * itself (d->kept), any other is described from it (loom_describe_repeat). Inline, so that the
 * forms' tests of the decision fold away on a repeat: a repeat is an application's usual call
 * (tools/dev/call-instructions). blocking: 1 if mpi->kind is LOOM_BLOCKING (a constant of the
 * form's code, so that these tests fold too). */
static inline int loom_decide(loom_glue_call_t *c, const loom_mpi_call_t *mpi, int blocking,
                              struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                              const loom_repeat_t *repeat, loom_decision_t *d)
{
    if (NULL == repeat || !repeat->is_served || (blocking && 0 != (module->handing_on & (1u << mpi->coll))))
        return loom_decide_call(c, mpi, comm, module, repeat, d);
    const loom_served_repeat_t *s = repeat->served;
    if (blocking && !s->has_counts) {
        d->kept = s;
        return OMPI_SUCCESS;
    }
    const int rc = loom_describe_repeat(c, mpi, comm, s);
    /* Set after the call, so that a compiler sees what the form then tests. */
    *d = (loom_decision_t){.algorithm = s->algorithm, .rule = s->rule};
    return rc;
}

END_C_DECLS

#endif /* COLL_LOOM_CALL_H */
