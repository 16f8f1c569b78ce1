/*
 * Repeats of a call: the pipeline's last step remembers what it decided (coll_loom_call.c).
 *
 * Describing and choosing cost about 300 instructions a call (callgrind: an 8-byte allreduce
 * 1400 in all, a handed-on 8-byte bcast 570 against tuned's 350). An application repeats its
 * calls, so the last call per form and collective is remembered by the arguments the
 * decision depends on - count, datatypes and op (predefined only: a user's datatype can be
 * freed and its address reused by another), root, in place - with the communicator's segment
 * and single-copy state, and its decision. The entry point looks a call up on its own
 * arguments (loom_repeat_of_args, coll_loom_entry.c): a repeat of a handed-on call is handed on
 * at once, in every form; a repeat of a served call is described from the kept record
 * (loom_served_repeat_t: the described call, with only its buffers' addresses new) and not
 * chosen again. A forced algorithm is part of the key, so benchmarks of forced algorithms
 * time the path applications take. The decision is the same on every rank, since every rank
 * makes the same calls and remembers alike. Collectives with per-rank counts, device buffers,
 * buffers that need dense copies and calls handed back from below always take the full path.
 */
#include "coll_loom_repeat.h"

#include <stdlib.h>
#include <string.h>

/* 1 if a call's decision may be kept: no per-rank send counts or datatypes (the receive counts
 * of reduce_scatter and allgatherv are kept by their sum: see set_key), predefined datatypes
 * and op. */
static int remembered(const loom_mpi_call_t *mpi)
{
    return !loom_counts_given(mpi->scounts) && NULL == mpi->sdtypes && (NULL == mpi->dtype || ompi_datatype_is_predefined(mpi->dtype)) &&
           (NULL == mpi->sdtype || ompi_datatype_is_predefined(mpi->sdtype)) &&
           (NULL == mpi->op || ompi_op_is_intrinsic(mpi->op));
}

/* A collective whose counts differ from rank to rank (gatherv, scatterv, alltoallv, alltoallw) is
 * decided by its communicator alone: its message size is 0 and it moves data, so neither counts
 * nor datatypes change the decision. Its handed-on decision is kept by root and in-place use only
 * (its entry points look it up so: coll_loom_signatures.h); a served one never is (a repeat's
 * counts are its own). Without it, every handed-on gatherv paid loom's whole path, 50 ns of a
 * 90 ns call at 8 bytes on 2 ranks. */
/* neighbor_allgather and neighbor_alltoall are kept by their counts and datatypes: on a Cartesian
 * communicator their message size is a block (loom_coll_uniform_neighbour_blocks), which a rule
 * may choose by. */
static int by_communicator(const loom_mpi_call_t *mpi)
{
    return loom_coll_counts_differ_by_rank(mpi->coll) && !loom_coll_uniform_neighbour_blocks(mpi->coll);
}

/* 0 if the algorithm forced now has too long a name to keep (no algorithm has). */
static int set_key(loom_repeat_t *r, const loom_mpi_call_t *mpi, const mca_coll_loom_module_t *module)
{
    const char *forced = loom_forced_now(mpi->coll);
    if (strlen(forced) >= sizeof(r->forced)) return 0;
    strcpy(r->forced, forced);
    r->valid = 1;
    const int whole = !by_communicator(mpi);
    r->count = !whole ? 0 : loom_counts_given(mpi->counts) ? loom_count_sum(mpi->counts, module->comm_size) : mpi->count;
    r->scount = whole ? mpi->scount : 0;
    r->root = mpi->root;
    r->in_place = loom_in_place_of(mpi->sbuf, mpi->rbuf);
    r->dtype = whole ? mpi->dtype : NULL;
    r->sdtype = whole ? mpi->sdtype : NULL;
    r->op = whole ? mpi->op : NULL;
    r->segment = module->segment;
    r->single_copy = module->single_copy;
    return 1;
}

void loom_forget(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module)
{
    module->repeats[mpi->kind][mpi->coll].valid = 0;
}

void loom_remember_handed_on(const loom_mpi_call_t *mpi, mca_coll_loom_module_t *module, const char *why)
{
    loom_repeat_t *r = &module->repeats[mpi->kind][mpi->coll];
    r->valid = 0;
    if ((!by_communicator(mpi) && !remembered(mpi)) || !set_key(r, mpi, module)) return;
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
    if (loom_coll_counts_differ_by_rank(mpi->coll) || loom_counts_given(mpi->counts) || !remembered(mpi) || !c->dense || c->core.wants_segment || LOOM_MEMORY_HOST != c->core.memory ||
        NULL != c->core.copier || (mpi->count <= 0 && LOOM_COLL_BARRIER != mpi->coll))
        return;
    /* A repeat takes its buffers from the call's sbuf and rbuf: not kept where the input is
     * elsewhere (exscan's rank 0 in place reads its input from rbuf). */
    if (NULL != c->send.user && c->send.user != mpi->sbuf) return;
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
