/*
 * The MPI-facing entry points. Each records its arguments in a loom_mpi_call_t and calls
 * mca_coll_loom_serve (coll_loom_call.c), which serves the call or hands it on; handing on
 * calls mca_coll_loom_hand_on below, the one place that calls the previous component.
 */
#include "coll_loom.h"

#define SERVE(...)                                                                  \
    do {                                                                            \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                \
        return mca_coll_loom_serve(&call_, comm, (mca_coll_loom_module_t *)module); \
    } while (0)

static int loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op);
}

static int loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op, .root = root);
}

static int loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype, .op = op);
}

static int loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .count = rcount, .dtype = dtype,
          .op = op);
}

static int loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount,
          .dtype = rdtype);
}

static int loom_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *displs, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .counts = rcounts, .displs = displs, .dtype = rdtype);
}

static int loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_BCAST, .rbuf = buf, .count = count, .dtype = dtype, .root = root);
}

static int loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_BARRIER);
}

static int loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    SERVE(.coll = LOOM_COLL_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount,
          .dtype = rdtype);
}

void mca_coll_loom_install_entries(mca_coll_loom_module_t *m)
{
#define INSTALL(name) m->super.coll_##name = loom_##name;
    LOOM_FOR_EACH_COLLECTIVE(INSTALL)
#undef INSTALL
}

int mca_coll_loom_hand_on(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    switch (c->coll) {
    case LOOM_COLL_ALLREDUCE:
        return m->previous.allreduce(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm, m->previous.allreduce_module);
    case LOOM_COLL_REDUCE:
        return m->previous.reduce(c->sbuf, c->rbuf, c->count, c->dtype, c->op, c->root, comm,
                                  m->previous.reduce_module);
    case LOOM_COLL_REDUCE_SCATTER:
        return m->previous.reduce_scatter(c->sbuf, c->rbuf, c->counts, c->dtype, c->op, comm,
                                          m->previous.reduce_scatter_module);
    case LOOM_COLL_REDUCE_SCATTER_BLOCK:
        return m->previous.reduce_scatter_block(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm,
                                                m->previous.reduce_scatter_block_module);
    case LOOM_COLL_ALLGATHER:
        return m->previous.allgather(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm,
                                     m->previous.allgather_module);
    case LOOM_COLL_ALLGATHERV:
        return m->previous.allgatherv(c->sbuf, c->scount, c->sdtype, c->rbuf, c->counts, c->displs, c->dtype, comm,
                                      m->previous.allgatherv_module);
    case LOOM_COLL_BCAST:
        return m->previous.bcast(c->rbuf, c->count, c->dtype, c->root, comm, m->previous.bcast_module);
    case LOOM_COLL_BARRIER: return m->previous.barrier(comm, m->previous.barrier_module);
    case LOOM_COLL_ALLTOALL:
        return m->previous.alltoall(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm,
                                    m->previous.alltoall_module);
    case LOOM_COLL_COUNT: break;
    }
    return OMPI_ERR_NOT_SUPPORTED;
}
