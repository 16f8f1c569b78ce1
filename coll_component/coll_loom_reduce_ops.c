/*
 * The reducing collectives: MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter and
 * MPI_Reduce_scatter_block. Each plans the reduction (coll_loom_datatype.c), asks the core
 * for an algorithm and runs it, or declines and calls the previous component. Every decline
 * depends only on (counts, datatype, op, root) — which MPI requires to be the same on every
 * rank — and on the communicator's size and hosts and the rule tables, which are the same
 * on every rank too, so no rank runs loom while another falls back.
 *
 * A datatype with holes is staged: the elements are copied into a dense buffer of the same
 * layout, the algorithm runs in place there, and the result is copied back, so the holes of
 * the user's receive buffer are never written.
 */
#include "coll_loom.h"
#include "coll_loom_device.h"

#include <stdlib.h>

#define DECLINE(coll, why, call_prev)                                                          \
    do {                                                                                       \
        mca_coll_loom_note_declined(coll, comm, why);                                          \
        return call_prev;                                                                      \
    } while (0)

/* Plan and choose; on success *algorithm is set. Returns 0 to decline with *why. */
static int prepare(loom_call_t *call, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                   struct ompi_communicator_t *comm, mca_coll_loom_module_t *m,
                   loom_reduce_plan_t *plan, const char **algorithm, const char **why,
                   const char **rule)
{
    if (!loom_plan_reduction(dtype, op, plan, why)) return 0;
    call->op = plan->reduction;
    call->keep_from_open_mpi = plan->ompi_kernel_wrong;
    *algorithm = loom_choose_for(call, comm, m, why, rule);
    return NULL != *algorithm;
}

/* Runs `call` in place on a staged copy of n elements taken from src; the first `keep`
 * elements of the result are copied to dst (dst may be NULL to keep nothing). */
static int run_staged(loom_call_t *call, const char *algorithm, struct ompi_communicator_t *comm,
                      mca_coll_loom_module_t *m,
                      const void *src, size_t n, void *dst, size_t keep,
                      struct ompi_datatype_t *dtype)
{
    char *dense;
    int rc = loom_stage_in(&dense, src, n, dtype);
    if (OMPI_SUCCESS != rc) return rc;
    call->sbuf = NULL;
    call->rbuf = dense;
    rc = loom_run_on(algorithm, call, comm, m);
    if (OMPI_SUCCESS == rc && NULL != dst) rc = loom_stage_out(dst, dense, keep, dtype);
    free(dense);
    return rc;
}

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf || sbuf == rbuf;
    const loom_dev_mode_t dev = loom_device_mode(in_place ? NULL : sbuf, dtype, rbuf, dtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_ALLREDUCE,
                      loom_device_allreduce(sbuf, rbuf, count, dtype, op, comm, module),
                      m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module));
    loom_call_t call = {.coll = LOOM_COLL_ALLREDUCE, .sbuf = in_place ? NULL : sbuf, .rbuf = rbuf,
                        .count = (size_t) count};
    loom_device_prepare(&call, dev);
    loom_reduce_plan_t plan;
    const char *algorithm, *rule = NULL, *why = "negative count";
    const int served = count >= 0 && prepare(&call, dtype, op, comm, m, &plan, &algorithm, &why, &rule);
    if (!served && loom_device_decline_on_copies(dev))
        return loom_device_allreduce(sbuf, rbuf, count, dtype, op, comm, module);
    if (!served)
        DECLINE(LOOM_COLL_ALLREDUCE, why,
                m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module));

    int rc = plan.staged ? run_staged(&call, algorithm, comm, m, in_place ? rbuf : sbuf, call.count,
                                      rbuf, call.count, dtype)
                         : loom_run_on(algorithm, &call, comm, m);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}

int mca_coll_loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const int in_place = is_root && (MPI_IN_PLACE == sbuf || sbuf == rbuf);
    const loom_dev_mode_t dev = loom_device_mode(in_place ? NULL : sbuf, dtype, is_root ? rbuf : NULL, dtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_REDUCE,
                      loom_device_reduce(sbuf, rbuf, count, dtype, op, root, comm, module),
                      m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module));
    /* Only the root's receive buffer is significant; elsewhere it may be anything. */
    loom_call_t call = {.coll = LOOM_COLL_REDUCE, .sbuf = in_place ? NULL : sbuf,
                        .rbuf = is_root ? rbuf : NULL, .count = (size_t) count, .root = root};
    loom_device_prepare(&call, dev);
    loom_reduce_plan_t plan;
    const char *algorithm, *rule = NULL, *why = "negative count";
    const int served = count >= 0 && prepare(&call, dtype, op, comm, m, &plan, &algorithm, &why, &rule);
    if (!served && loom_device_decline_on_copies(dev))
        return loom_device_reduce(sbuf, rbuf, count, dtype, op, root, comm, module);
    if (!served)
        DECLINE(LOOM_COLL_REDUCE, why,
                m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module));

    int rc;
    if (!plan.staged) {
        rc = loom_run_on(algorithm, &call, comm, m);
    } else if (is_root) {
        rc = run_staged(&call, algorithm, comm, m, in_place ? rbuf : sbuf, call.count, rbuf,
                        call.count, dtype);
    } else {
        /* A non-root's staged input is its send buffer; it receives nothing. */
        char *dense;
        rc = loom_stage_in(&dense, sbuf, call.count, dtype);
        if (OMPI_SUCCESS == rc) {
            call.sbuf = dense;
            rc = loom_run_on(algorithm, &call, comm, m);
            free(dense);
        }
    }
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}

/* Shared by reduce_scatter and reduce_scatter_block: counts[i] elements for rank i. */
static int reduce_scatter_common(loom_coll_t coll, const void *sbuf, void *rbuf,
                                 const size_t *counts, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 mca_coll_loom_module_t *m, const char **why, int *declined,
                                 loom_dev_mode_t dev)
{
    const int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    loom_call_t call = {.coll = coll, .sbuf = in_place ? NULL : sbuf, .rbuf = rbuf, .counts = counts};
    loom_device_prepare(&call, dev);
    loom_reduce_plan_t plan;
    const char *algorithm, *rule = NULL;
    *declined = !prepare(&call, dtype, op, comm, m, &plan, &algorithm, why, &rule);
    if (*declined) return OMPI_SUCCESS;

    size_t total = 0;
    for (int i = 0; i < size; ++i) total += counts[i];
    int rc = plan.staged ? run_staged(&call, algorithm, comm, m, in_place ? rbuf : sbuf, total, rbuf,
                                      counts[rank], dtype)
                         : loom_run_on(algorithm, &call, comm, m);
    if (OMPI_SUCCESS == rc) mca_coll_loom_note_served(&call, comm, m, algorithm, rule);
    return rc;
}

int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int size = ompi_comm_size(comm);
    const loom_dev_mode_t dev = loom_device_mode(sbuf, dtype, rbuf, dtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_REDUCE_SCATTER,
                      loom_device_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module),
                      m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                             m->prev_reduce_scatter_module));
    const char *why = "negative count";
    int declined = 0, rc = OMPI_SUCCESS;
    loom_sizes_t counts;
    if (OMPI_SUCCESS != loom_sizes_init(&counts, size)) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < size && !declined; ++i) {
        declined = rcounts[i] < 0;
        counts.v[i] = (size_t) rcounts[i];
    }
    if (!declined)
        rc = reduce_scatter_common(LOOM_COLL_REDUCE_SCATTER, sbuf, rbuf, counts.v, dtype, op, comm,
                                   m, &why, &declined, dev);
    loom_sizes_fini(&counts);
    if (declined && loom_device_decline_on_copies(dev))
        return loom_device_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module);
    if (declined)
        DECLINE(LOOM_COLL_REDUCE_SCATTER, why,
                m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                       m->prev_reduce_scatter_module));
    return rc;
}

int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    const int size = ompi_comm_size(comm);
    const loom_dev_mode_t dev = loom_device_mode(sbuf, dtype, rbuf, dtype);
    LOOM_DEVICE_ENTRY(dev, LOOM_COLL_REDUCE_SCATTER_BLOCK,
                      loom_device_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module),
                      m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                   m->prev_reduce_scatter_block_module));
    const char *why = "negative count";
    int declined = rcount < 0, rc = OMPI_SUCCESS;
    loom_sizes_t counts;
    if (OMPI_SUCCESS != loom_sizes_init(&counts, size)) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < size; ++i) counts.v[i] = (size_t) rcount;
    if (!declined)
        rc = reduce_scatter_common(LOOM_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, counts.v, dtype, op,
                                   comm, m, &why, &declined, dev);
    loom_sizes_fini(&counts);
    if (declined && loom_device_decline_on_copies(dev))
        return loom_device_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, module);
    if (declined)
        DECLINE(LOOM_COLL_REDUCE_SCATTER_BLOCK, why,
                m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                             m->prev_reduce_scatter_block_module));
    return rc;
}
