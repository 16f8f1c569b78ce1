/*
 * Online tuning (coll_loom_autotune, coll_loom_autotune.c): for each (communicator, collective,
 * size class) that repeats, the application's own blocking calls time a few candidates - the rule
 * table's choice, Open MPI's own (handing on), and other algorithms that can serve the call - and
 * every rank then keeps the same winner. Private to coll_component/.
 */
#ifndef COLL_LOOM_AUTOTUNE_H
#define COLL_LOOM_AUTOTUNE_H

#include "coll_loom_call.h"

#include <time.h>

BEGIN_C_DECLS

/* The pipeline's step for a blocking call the rules decided (coll_loom_call.c): a class under
 * trial gets its next candidate (d->tune set: step 4 times the call and reports it with
 * loom_autotune_record), a decided class its winner. c's core call is set for the candidate.
 * Returns 1 if the decision may be remembered for the call's repeats (not during a trial). */
int loom_autotune_decide(loom_glue_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                         loom_decision_t *d, int handed_on_by_rules);
/* A timed trial call (blocking step 4): when its run started and how long it took
 * (loom_autotune_now_ns); the trial's last call agrees on the winner with every rank (an exchange
 * on the collective's tag, inside the call every rank is in). */
int loom_autotune_record(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module, const loom_decision_t *d,
                         long long run_start_ns, long long ns);
/* The clock online tuning reads (CLOCK_MONOTONIC, ns). */
static inline long long loom_autotune_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* The module's table, freed (its decisions kept for the saved rule file); and at MPI_Finalize
 * (MPI_COMM_WORLD's module), the rule file written (coll_loom_autotune_save, rank 0) and the
 * learned choices printed (coll_loom_verbose >= 1). */
void loom_autotune_module_fini(mca_coll_loom_module_t *module);
void loom_autotune_finalize(int rank0);
/* Component open: the parameters read. */
void loom_autotune_open(void);

END_C_DECLS

#endif /* COLL_LOOM_AUTOTUNE_H */
