/*
 * The MPI-facing entry points. Each records its arguments in a loom_mpi_call_t and calls
 * mca_coll_loom_serve (coll_loom_call.c; blocking) or mca_coll_loom_start (coll_loom_request.c;
 * non-blocking and persistent), which serves the call or hands it on; handing on calls
 * mca_coll_loom_hand_on below. A repeat of a call loom handed on is handed on before that, by
 * HAND_ON_REPEAT (I_HAND_ON_REPEAT) here: this file is the only code that calls the previous
 * component.
 */
#include "coll_loom.h"
#include "coll_loom_call.h"

/* Records the call and serves it; REPEAT: what HAND_ON_REPEAT found (a served repeat), or NULL. */
#define SERVE(REPEAT, ...)                                                                  \
    do {                                                                                    \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                        \
        return mca_coll_loom_serve(&call_, comm, (mca_coll_loom_module_t *)module, REPEAT); \
    } while (0)

/* A repeat of the last call of COLL in form KIND that loom handed on goes straight to the
 * previous component (CALL_PREVIOUS, a call of its function in m_->previous), before the call's
 * record is built: the test of mca_coll_loom_serve and mca_coll_loom_start (loom_repeat_of) and
 * their hand-on, inline on the arguments - about 150 instructions fewer than the whole path,
 * which a handed-on call adds to the next component's (callgrind: tools/dev/call-instructions
 * --collective bcast). A blocking call is marked as being handed on meanwhile (pass_on, and
 * mca_coll_loom_module_t.handing_on) and is not handed on so while marked; a non-blocking call is
 * never handed back, and mca_coll_loom_start marks nothing. The arguments after COLL are the
 * call's send buffer, receive buffer, count, datatype, op, root, send count and send datatype, as
 * SERVE records them (NULL or 0 where the collective has none). Declares repeat_ (any other
 * repeat the test found, for SERVE or START_AFTER: a served one, or one handed back from
 * below). */
#define HAND_ON_REPEAT_AS(KIND, COLL, SBUF, RBUF, COUNT, DTYPE, OP, ROOT, SCOUNT, SDTYPE, CALL_PREVIOUS) \
    mca_coll_loom_module_t *const m_ = (mca_coll_loom_module_t *)module;                                 \
    const loom_repeat_t *const repeat_ =                                                                 \
        loom_repeat_of_args(m_, KIND, COLL, SBUF, RBUF, COUNT, DTYPE, OP, ROOT, SCOUNT, SDTYPE);         \
    const unsigned mark_ = LOOM_BLOCKING == (KIND) ? 1u << (COLL) : 0u;                                  \
    if (NULL != repeat_ && !repeat_->is_served && 0 == (m_->handing_on & mark_)) {                       \
        loom_note_declined(KIND, COLL, comm, repeat_->why);                                              \
        m_->handing_on |= mark_;                                                                         \
        const int rc_ = m_->previous.CALL_PREVIOUS;                                                      \
        m_->handing_on &= ~mark_;                                                                        \
        return rc_;                                                                                      \
    }
#define HAND_ON_REPEAT(...)   HAND_ON_REPEAT_AS(LOOM_BLOCKING, __VA_ARGS__)
#define I_HAND_ON_REPEAT(...) HAND_ON_REPEAT_AS(LOOM_NONBLOCKING, __VA_ARGS__)

static int loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, 0, NULL,
                   allreduce(sbuf, rbuf, count, dtype, op, comm, m_->previous.allreduce_module));
    SERVE(repeat_, .coll = LOOM_COLL_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op);
}

static int loom_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, 0, NULL,
                   reduce(sbuf, rbuf, count, dtype, op, root, comm, m_->previous.reduce_module));
    SERVE(repeat_, .coll = LOOM_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op,
          .root = root);
}

static int loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    SERVE(NULL, .coll = LOOM_COLL_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype,
          .op = op);
}

static int loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                     mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, 0, 0, NULL,
                   reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, m_->previous.reduce_scatter_block_module));
    SERVE(repeat_, .coll = LOOM_COLL_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .count = rcount, .dtype = dtype,
          .op = op);
}

static int loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_ALLGATHER, sbuf, rbuf, rcount, rdtype, NULL, 0, scount, sdtype,
                   allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m_->previous.allgather_module));
    SERVE(repeat_, .coll = LOOM_COLL_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .count = rcount, .dtype = rdtype);
}

static int loom_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                           const int *displs, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    SERVE(NULL, .coll = LOOM_COLL_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .counts = rcounts, .displs = displs, .dtype = rdtype);
}

static int loom_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_BCAST, NULL, buf, count, dtype, NULL, root, 0, NULL,
                   bcast(buf, count, dtype, root, comm, m_->previous.bcast_module));
    SERVE(repeat_, .coll = LOOM_COLL_BCAST, .rbuf = buf, .count = count, .dtype = dtype, .root = root);
}

static int loom_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_BARRIER, NULL, NULL, 0, NULL, NULL, 0, 0, NULL,
                   barrier(comm, m_->previous.barrier_module));
    SERVE(repeat_, .coll = LOOM_COLL_BARRIER);
}

static int loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    HAND_ON_REPEAT(LOOM_COLL_ALLTOALL, sbuf, rbuf, rcount, rdtype, NULL, 0, scount, sdtype,
                   alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m_->previous.alltoall_module));
    SERVE(repeat_, .coll = LOOM_COLL_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .count = rcount, .dtype = rdtype);
}

/* ---- non-blocking and persistent: the same records, served by mca_coll_loom_start ---- */

#define START(...)                                                                  \
    do {                                                                            \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                \
        return mca_coll_loom_start(&call_, comm, (mca_coll_loom_module_t *)module); \
    } while (0)
/* START with what I_HAND_ON_REPEAT found (a served repeat, or NULL): looked up once. */
#define START_AFTER(REPEAT, ...)                                                                   \
    do {                                                                                           \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                               \
        return mca_coll_loom_start_repeat(&call_, comm, (mca_coll_loom_module_t *)module, REPEAT); \
    } while (0)
#define NB   .kind = LOOM_NONBLOCKING, .request = request
#define PERS .kind = LOOM_PERSISTENT, .request = request, .info = info

static int loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(LOOM_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, 0, 0, NULL,
                     iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m_->previous.iallreduce_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype,
                .op = op, NB);
}

static int loom_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op, PERS);
}

static int loom_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                        int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(LOOM_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, 0, NULL,
                     ireduce(sbuf, rbuf, count, dtype, op, root, comm, request, m_->previous.ireduce_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op,
                .root = root, NB);
}

static int loom_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_REDUCE, .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op, .root = root,
          PERS);
}

static int loom_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype, .op = op,
          NB);
}

static int loom_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype, .op = op,
          PERS);
}

static int loom_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                      mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(
        LOOM_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, 0, 0, NULL,
        ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request, m_->previous.ireduce_scatter_block_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .count = rcount,
                .dtype = dtype, .op = op, NB);
}

static int loom_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                          struct ompi_info_t *info, ompi_request_t **request,
                                          mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf, .count = rcount, .dtype = dtype, .op = op,
          PERS);
}

static int loom_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(
        LOOM_COLL_ALLGATHER, sbuf, rbuf, rcount, rdtype, NULL, 0, scount, sdtype,
        iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m_->previous.iallgather_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                .count = rcount, .dtype = rdtype, NB);
}

static int loom_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_ALLGATHER, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount,
          .dtype = rdtype, PERS);
}

static int loom_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                            struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .counts = rcounts, .displs = displs, .dtype = rdtype, NB);
}

static int loom_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                                struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_ALLGATHERV, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
          .counts = rcounts, .displs = displs, .dtype = rdtype, PERS);
}

static int loom_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(LOOM_COLL_BCAST, NULL, buf, count, dtype, NULL, root, 0, NULL,
                     ibcast(buf, count, dtype, root, comm, request, m_->previous.ibcast_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_BCAST, .rbuf = buf, .count = count, .dtype = dtype, .root = root, NB);
}

static int loom_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_BCAST, .rbuf = buf, .count = count, .dtype = dtype, .root = root, PERS);
}

static int loom_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(LOOM_COLL_BARRIER, NULL, NULL, 0, NULL, NULL, 0, 0, NULL,
                     ibarrier(comm, request, m_->previous.ibarrier_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_BARRIER, NB);
}

static int loom_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
                             mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_BARRIER, PERS);
}

static int loom_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    I_HAND_ON_REPEAT(
        LOOM_COLL_ALLTOALL, sbuf, rbuf, rcount, rdtype, NULL, 0, scount, sdtype,
        ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, m_->previous.ialltoall_module));
    START_AFTER(repeat_, .coll = LOOM_COLL_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                .count = rcount, .dtype = rdtype, NB);
}

static int loom_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                              struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                              struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module)
{
    START(.coll = LOOM_COLL_ALLTOALL, .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount,
          .dtype = rdtype, PERS);
}

void mca_coll_loom_install_entries(mca_coll_loom_module_t *m)
{
#define INSTALL(name)                     \
    m->super.coll_##name = loom_##name;   \
    m->super.coll_i##name = loom_i##name; \
    m->super.coll_##name##_init = loom_##name##_init;
    LOOM_FOR_EACH_COLLECTIVE(INSTALL)
#undef INSTALL
}

static int hand_on_nonblocking(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    ompi_request_t **r = c->request;
    switch (c->coll) {
    case LOOM_COLL_ALLREDUCE:
        return m->previous.iallreduce(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm, r,
                                      m->previous.iallreduce_module);
    case LOOM_COLL_REDUCE:
        return m->previous.ireduce(c->sbuf, c->rbuf, c->count, c->dtype, c->op, c->root, comm, r,
                                   m->previous.ireduce_module);
    case LOOM_COLL_REDUCE_SCATTER:
        return m->previous.ireduce_scatter(c->sbuf, c->rbuf, c->counts, c->dtype, c->op, comm, r,
                                           m->previous.ireduce_scatter_module);
    case LOOM_COLL_REDUCE_SCATTER_BLOCK:
        return m->previous.ireduce_scatter_block(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm, r,
                                                 m->previous.ireduce_scatter_block_module);
    case LOOM_COLL_ALLGATHER:
        return m->previous.iallgather(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm, r,
                                      m->previous.iallgather_module);
    case LOOM_COLL_ALLGATHERV:
        return m->previous.iallgatherv(c->sbuf, c->scount, c->sdtype, c->rbuf, c->counts, c->displs, c->dtype, comm, r,
                                       m->previous.iallgatherv_module);
    case LOOM_COLL_BCAST:
        return m->previous.ibcast(c->rbuf, c->count, c->dtype, c->root, comm, r, m->previous.ibcast_module);
    case LOOM_COLL_BARRIER: return m->previous.ibarrier(comm, r, m->previous.ibarrier_module);
    case LOOM_COLL_ALLTOALL:
        return m->previous.ialltoall(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm, r,
                                     m->previous.ialltoall_module);
    case LOOM_COLL_COUNT: break;
    }
    return OMPI_ERR_NOT_SUPPORTED;
}

static int hand_on_persistent(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    ompi_request_t **r = c->request;
    struct ompi_info_t *info = c->info;
    switch (c->coll) {
    case LOOM_COLL_ALLREDUCE:
        return m->previous.allreduce_init(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm, info, r,
                                          m->previous.allreduce_init_module);
    case LOOM_COLL_REDUCE:
        return m->previous.reduce_init(c->sbuf, c->rbuf, c->count, c->dtype, c->op, c->root, comm, info, r,
                                       m->previous.reduce_init_module);
    case LOOM_COLL_REDUCE_SCATTER:
        return m->previous.reduce_scatter_init(c->sbuf, c->rbuf, c->counts, c->dtype, c->op, comm, info, r,
                                               m->previous.reduce_scatter_init_module);
    case LOOM_COLL_REDUCE_SCATTER_BLOCK:
        return m->previous.reduce_scatter_block_init(c->sbuf, c->rbuf, c->count, c->dtype, c->op, comm, info, r,
                                                     m->previous.reduce_scatter_block_init_module);
    case LOOM_COLL_ALLGATHER:
        return m->previous.allgather_init(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm, info, r,
                                          m->previous.allgather_init_module);
    case LOOM_COLL_ALLGATHERV:
        return m->previous.allgatherv_init(c->sbuf, c->scount, c->sdtype, c->rbuf, c->counts, c->displs, c->dtype, comm,
                                           info, r, m->previous.allgatherv_init_module);
    case LOOM_COLL_BCAST:
        return m->previous.bcast_init(c->rbuf, c->count, c->dtype, c->root, comm, info, r,
                                      m->previous.bcast_init_module);
    case LOOM_COLL_BARRIER: return m->previous.barrier_init(comm, info, r, m->previous.barrier_init_module);
    case LOOM_COLL_ALLTOALL:
        return m->previous.alltoall_init(c->sbuf, c->scount, c->sdtype, c->rbuf, c->count, c->dtype, comm, info, r,
                                         m->previous.alltoall_init_module);
    case LOOM_COLL_COUNT: break;
    }
    return OMPI_ERR_NOT_SUPPORTED;
}

int mca_coll_loom_hand_on(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    if (LOOM_NONBLOCKING == c->kind) return hand_on_nonblocking(c, comm, m);
    if (LOOM_PERSISTENT == c->kind) return hand_on_persistent(c, comm, m);
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
