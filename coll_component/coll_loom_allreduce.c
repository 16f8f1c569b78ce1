/*
 * MPI_Allreduce through loom: plan the reduction, ask the core for an algorithm, run it over
 * the PML; or decline and call the previous component. Every decline decision depends only
 * on (count, datatype, op, communicator size), which MPI requires to be the same on every
 * rank, so no rank runs loom while another falls back.
 */
#include "coll_loom.h"

#include "ompi/mca/coll/base/coll_tags.h"

#include <stdlib.h>

static int decline(const char *why, const void *sbuf, void *rbuf, int count,
                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                   struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    mca_coll_loom_note_declined(LOOM_COLL_ALLREDUCE, comm, why);
    return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}

static int to_ompi_error(int rc)
{
    if (LOOM_ERR_NO_MEMORY == rc) return OMPI_ERR_OUT_OF_RESOURCE;
    if (LOOM_ERR_INTERNAL == rc) return OMPI_ERROR;
    return rc;
}

static int run(const char *algorithm, struct ompi_communicator_t *comm, const void *input,
               void *output, size_t count, const loom_reduce_plan_t *plan)
{
    loom_pml_transport_t transport;
    loom_pml_transport_init(&transport, comm, MCA_COLL_BASE_TAG_ALLREDUCE);
    int rc = to_ompi_error(
        loom_allreduce_run(algorithm, &transport.ops, input, output, count, &plan->reduction));
    int fini_rc = loom_pml_transport_fini(&transport);
    return OMPI_SUCCESS == rc ? fini_rc : rc;
}

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *) module;
    loom_reduce_plan_t plan;
    const char *why = NULL;

    if (count < 0) return decline("negative count", sbuf, rbuf, count, dtype, op, comm, m);
    if (!loom_plan_reduction(count, dtype, op, &plan, &why))
        return decline(why, sbuf, rbuf, count, dtype, op, comm, m);
    const char *algorithm = loom_allreduce_choose(ompi_comm_size(comm), (size_t) count,
                                                  plan.reduction.commutative, &why);
    if (NULL == algorithm) return decline(why, sbuf, rbuf, count, dtype, op, comm, m);

    const int in_place = MPI_IN_PLACE == sbuf || sbuf == rbuf;
    const size_t bytes = (size_t) count * plan.reduction.elem_size;
    int rc;
    if (!plan.staged) {
        rc = run(algorithm, comm, in_place ? NULL : sbuf, rbuf, (size_t) count, &plan);
    } else {
        /* Run on a dense copy so the holes of the user's receive buffer are never written. */
        char *dense = calloc(bytes > 0 ? bytes : 1, 1); /* holes: defined bytes */
        if (NULL == dense) return OMPI_ERR_OUT_OF_RESOURCE;
        rc = ompi_datatype_copy_content_same_ddt(dtype, count, dense,
                                                 (char *) (in_place ? rbuf : sbuf));
        if (OMPI_SUCCESS == rc) rc = run(algorithm, comm, NULL, dense, (size_t) count, &plan);
        if (OMPI_SUCCESS == rc) rc = ompi_datatype_copy_content_same_ddt(dtype, count, rbuf, dense);
        free(dense);
    }
    if (OMPI_SUCCESS == rc)
        mca_coll_loom_note_served(LOOM_COLL_ALLREDUCE, comm, algorithm, bytes);
    return rc;
}
