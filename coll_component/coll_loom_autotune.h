/*
 * Online tuning (coll_loom_autotune, coll_loom_autotune.c): the glue's half of the learned rule
 * layer (selection_rules/learned.hpp) - which calls are tuned, their timing, the ranks' agreement
 * on the times, and the saved rule file. Private to coll_component/.
 */
#ifndef COLL_LOOM_AUTOTUNE_H
#define COLL_LOOM_AUTOTUNE_H

#include "coll_loom_call.h"

#include <time.h>

BEGIN_C_DECLS

/* The pipeline's step for a blocking call on host memory that loom_choose decided (not forced,
 * wanting no segment, not handed back from below; coll_loom_call.c): the call's class is opened
 * in the learned layer at its first call (candidate 0: what loom_choose chose, or handing on if
 * handed_on), and loom_choose decides it again. A trial's call
 * gets d->tune (step 4 times it and reports it with loom_autotune_record). Returns 1 if the
 * decision may be remembered for the call's repeats (not while its class's trial runs). */
int loom_autotune_decide(loom_glue_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                         loom_decision_t *d, int handed_on);
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
/* At MPI_Finalize (MPI_COMM_WORLD's module): the rule file written (coll_loom_autotune_save,
 * rank 0) and the learned rules printed (coll_loom_verbose >= 1). Each communicator's layer goes
 * with its tables (loom_rules_release). */
void loom_autotune_finalize(int rank0);
/* Component open: the parameters read. */
void loom_autotune_open(void);

END_C_DECLS

#endif /* COLL_LOOM_AUTOTUNE_H */
