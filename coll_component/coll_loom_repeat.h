/*
 * The decisions kept for a call's repeats (coll_loom_repeat.c; the record, loom_repeat_t, is the
 * module's, in coll_loom.h): looked up by the entry points (coll_loom_entry.c), remembered by the
 * pipeline (coll_loom_call.c), run from by the forms. Private to coll_component/.
 */
#ifndef COLL_LOOM_REPEAT_H
#define COLL_LOOM_REPEAT_H

#include "coll_loom_buffers.h"

#include <string.h>

BEGIN_C_DECLS

/* The algorithm forced for coll now ("" for none). MPI_T may write a new value between any two
 * calls (freeing the old string, whose address may come back), so a repeat compares names. */
static inline const char *loom_forced_now(loom_coll_t coll)
{
    const char *forced = mca_coll_loom_component.forced[coll];
    return NULL == forced ? "" : forced;
}
static inline int loom_same_forced(const char *kept, const char *now)
{
    return kept[0] == now[0] && ('\0' == now[0] || 0 == strcmp(kept, now)); /* mostly both "" */
}
/* The sum of a call's per-rank counts (reduce_scatter's, allgatherv's), on which its decision
 * depends - its message size - and not on how they are spread. */
static inline long long loom_count_sum(loom_count_array_t counts, int size)
{
    long long sum = 0;
    for (int i = 0; i < size; ++i) sum += loom_count_at(counts, (size_t)i);
    return sum;
}
/* The last call of the collective and form the pipeline decided, if this call, given by its
 * arguments, repeats it (the same count, predefined datatypes and op, root, in-place use, forced
 * algorithm, segment state, host buffers; coll_loom_fast_repeats on); NULL otherwise. Inline:
 * the entry points test for a repeat before they build the call's record (coll_loom_entry.c).
 * counts: reduce_scatter's and allgatherv's per-rank counts (else LOOM_COUNTS_NONE), compared by their sum,
 * which is all their decision depends on; only handed-on calls with them are remembered (a
 * served repeat reuses the described call, whose counts are the first call's). */
static inline const loom_repeat_t *loom_repeat_of_args(const mca_coll_loom_module_t *module, loom_kind_t kind,
                                                       loom_coll_t coll, const void *sbuf, const void *rbuf, long long count,
                                                       loom_count_array_t counts, struct ompi_datatype_t *dtype,
                                                       struct ompi_op_t *op, int root, long long scount,
                                                       struct ompi_datatype_t *sdtype)
{
    const loom_repeat_t *r = &module->repeats[kind][coll];
    if (!r->valid || !mca_coll_loom_component.fast_repeats || r->dtype != dtype || r->op != op || r->root != root ||
        r->scount != scount || r->sdtype != sdtype || r->in_place != loom_in_place_of(sbuf, rbuf) ||
        r->segment != module->segment || r->single_copy != module->single_copy ||
        !loom_same_forced(r->forced, loom_forced_now(coll)))
        return NULL;
    if (r->count != (!loom_counts_given(counts) ? count : loom_count_sum(counts, module->comm_size))) return NULL;
    /* Device buffers are handed on through host copies: the whole path. */
    if (loom_is_device(MPI_IN_PLACE == sbuf ? NULL : sbuf) || loom_is_device(rbuf)) return NULL;
    return r;
}
/* Forgets the last call of mpi's collective and form (online tuning's trial calls). */
void loom_forget(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module);
/* Remembers mpi as handed on for `why` (if its datatypes and op are predefined). */
void loom_remember_handed_on(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module, const char *why);
/* Remembers mpi, described as c, as served by algorithm (chosen by rule), if a repeat can be
 * served from the record (loom_served_repeat_t); else forgets the collective's last call. Call
 * it after the chooser, before loom_apply_tuning. */
void loom_remember_served(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module, const loom_glue_call_t *c,
                          const char *algorithm, const char *rule);

/* A served repeat's core call for mpi (into *core): s's, with mpi's buffers at the kept offsets;
 * *send_user and *recv_user get the user buffers the kept call used (NULL where it used none).
 * The reduction plan is copied into *plan, which the core call's op then reads (Open MPI's op
 * adapter reads its plan through the reduction's context): s may change while the call runs (a
 * collective the run makes on the communicator, the topology's at verbose >= 1, can overwrite
 * it). For loom_describe_repeat and a blocking call's d->kept. */
static inline void loom_repeat_core(const loom_served_repeat_t *s, const loom_mpi_call_t *mpi, loom_call_t *core,
                                    loom_reduce_plan_t *plan, void **send_user, void **recv_user)
{
    *core = s->core;
    *send_user = s->send_used ? (void *)mpi->sbuf : NULL;
    *recv_user = s->recv_used ? mpi->rbuf : NULL;
    core->sbuf = NULL != *send_user ? (const char *)*send_user + s->send_lb : NULL;
    core->rbuf = NULL != *recv_user ? (char *)*recv_user + s->recv_lb : NULL;
    *plan = s->plan;
    if (s->core.op.ctx == &s->plan) core->op.ctx = plan->reduction.ctx = plan;
}

END_C_DECLS

#endif /* COLL_LOOM_REPEAT_H */
