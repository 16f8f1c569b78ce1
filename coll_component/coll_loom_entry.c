/*
 * The MPI-facing entry points, made from collectives.def: for each row, in all three forms, a
 * function that records its arguments in a loom_mpi_call_t and calls mca_coll_loom_serve
 * (coll_loom_call.c; blocking) or mca_coll_loom_start (coll_loom_request.c; non-blocking and
 * persistent), which serves the call or hands it on; handing on calls mca_coll_loom_hand_on
 * below. A repeat of a call loom handed on is handed on before that, by HAND_ON_REPEAT_AS here:
 * this file is the only code that calls the previous component. What differs between
 * collectives here is only their MPI signature class (LOOM_*_<class>, below).
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

/* ---- signature classes (collectives.def): what a call of each class passes ----
 *
 * For a class S:
 *   LOOM_PARAMS_S      its parameters before the communicator (each followed by a comma)
 *   LOOM_ARGS_S        the same as arguments, for a call of the previous component
 *   LOOM_FROM_S(c)     the same from a loom_mpi_call_t c, for mca_coll_loom_hand_on
 *   LOOM_RECORD_S      its loom_mpi_call_t fields (each preceded by a comma)
 *   LOOM_REPEAT_S(KIND, COLL, CALL_PREVIOUS)  HAND_ON_REPEAT_AS on its arguments; a class with
 *                      per-rank count arrays is never remembered (loom_repeat_of): repeat_ NULL
 */
#define LOOM_PARAMS_reduction const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
#define LOOM_ARGS_reduction   sbuf, rbuf, count, dtype, op,
#define LOOM_FROM_reduction(c) (c)->sbuf, (c)->rbuf, (c)->count, (c)->dtype, (c)->op,
#define LOOM_RECORD_reduction , .sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op
#define LOOM_REPEAT_reduction(KIND, COLL, CALL_PREVIOUS) \
    HAND_ON_REPEAT_AS(KIND, COLL, sbuf, rbuf, count, dtype, op, 0, 0, NULL, CALL_PREVIOUS)

#define LOOM_PARAMS_rooted_reduction LOOM_PARAMS_reduction int root,
#define LOOM_ARGS_rooted_reduction   LOOM_ARGS_reduction root,
#define LOOM_FROM_rooted_reduction(c) LOOM_FROM_reduction(c)(c)->root,
#define LOOM_RECORD_rooted_reduction LOOM_RECORD_reduction, .root = root
#define LOOM_REPEAT_rooted_reduction(KIND, COLL, CALL_PREVIOUS) \
    HAND_ON_REPEAT_AS(KIND, COLL, sbuf, rbuf, count, dtype, op, root, 0, NULL, CALL_PREVIOUS)

#define LOOM_PARAMS_reduction_v \
    const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
#define LOOM_ARGS_reduction_v   sbuf, rbuf, rcounts, dtype, op,
#define LOOM_FROM_reduction_v(c) (c)->sbuf, (c)->rbuf, (c)->counts, (c)->dtype, (c)->op,
#define LOOM_RECORD_reduction_v , .sbuf = sbuf, .rbuf = rbuf, .counts = rcounts, .dtype = dtype, .op = op
#define LOOM_REPEAT_reduction_v(KIND, COLL, CALL_PREVIOUS) const loom_repeat_t *const repeat_ = NULL;

#define LOOM_PARAMS_exchange                                                                    \
    const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, \
        struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_exchange   sbuf, scount, sdtype, rbuf, rcount, rdtype,
#define LOOM_FROM_exchange(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->count, (c)->dtype,
#define LOOM_RECORD_exchange \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .count = rcount, .dtype = rdtype
#define LOOM_REPEAT_exchange(KIND, COLL, CALL_PREVIOUS) \
    HAND_ON_REPEAT_AS(KIND, COLL, sbuf, rbuf, rcount, rdtype, NULL, 0, scount, sdtype, CALL_PREVIOUS)

#define LOOM_PARAMS_exchange_v                                                                           \
    const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, \
        const int *displs, struct ompi_datatype_t *rdtype,
#define LOOM_ARGS_exchange_v   sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
#define LOOM_FROM_exchange_v(c) (c)->sbuf, (c)->scount, (c)->sdtype, (c)->rbuf, (c)->counts, (c)->displs, (c)->dtype,
#define LOOM_RECORD_exchange_v                                                                                 \
    , .sbuf = sbuf, .scount = scount, .sdtype = sdtype, .rbuf = rbuf, .counts = rcounts, .displs = displs, \
      .dtype = rdtype
#define LOOM_REPEAT_exchange_v(KIND, COLL, CALL_PREVIOUS) const loom_repeat_t *const repeat_ = NULL;

#define LOOM_PARAMS_broadcast void *buf, int count, struct ompi_datatype_t *dtype, int root,
#define LOOM_ARGS_broadcast   buf, count, dtype, root,
#define LOOM_FROM_broadcast(c) (c)->rbuf, (c)->count, (c)->dtype, (c)->root,
#define LOOM_RECORD_broadcast , .rbuf = buf, .count = count, .dtype = dtype, .root = root
#define LOOM_REPEAT_broadcast(KIND, COLL, CALL_PREVIOUS) \
    HAND_ON_REPEAT_AS(KIND, COLL, NULL, buf, count, dtype, NULL, root, 0, NULL, CALL_PREVIOUS)

#define LOOM_PARAMS_sync
#define LOOM_ARGS_sync
#define LOOM_FROM_sync(c)
#define LOOM_RECORD_sync
#define LOOM_REPEAT_sync(KIND, COLL, CALL_PREVIOUS) \
    HAND_ON_REPEAT_AS(KIND, COLL, NULL, NULL, 0, NULL, NULL, 0, 0, NULL, CALL_PREVIOUS)

/* ---- the entry points: blocking, non-blocking and persistent, one set per row ---- */

/* Records the call and starts it (non-blocking, persistent); START_AFTER with what
 * LOOM_REPEAT_S found (a served repeat, or NULL): looked up once. */
#define START(...)                                                                  \
    do {                                                                            \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                \
        return mca_coll_loom_start(&call_, comm, (mca_coll_loom_module_t *)module); \
    } while (0)
#define START_AFTER(REPEAT, ...)                                                                   \
    do {                                                                                           \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                               \
        return mca_coll_loom_start_repeat(&call_, comm, (mca_coll_loom_module_t *)module, REPEAT); \
    } while (0)

#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted)                                                            \
    static int loom_##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, mca_coll_base_module_t *module)       \
    {                                                                                                              \
        LOOM_REPEAT_##S(LOOM_BLOCKING, LOOM_COLL_##NAME, name(LOOM_ARGS_##S comm, m_->previous.name##_module))     \
        SERVE(repeat_, .coll = LOOM_COLL_##NAME LOOM_RECORD_##S);                                                  \
    }                                                                                                              \
    static int loom_i##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, ompi_request_t **request,            \
                            mca_coll_base_module_t *module)                                                        \
    {                                                                                                              \
        LOOM_REPEAT_##S(LOOM_NONBLOCKING, LOOM_COLL_##NAME,                                                        \
                        i##name(LOOM_ARGS_##S comm, request, m_->previous.i##name##_module))                       \
        START_AFTER(repeat_, .coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_NONBLOCKING, .request = request); \
    }                                                                                                              \
    static int loom_##name##_init(LOOM_PARAMS_##S struct ompi_communicator_t *comm, struct ompi_info_t *info,      \
                                  ompi_request_t **request, mca_coll_base_module_t *module)                        \
    {                                                                                                              \
        START(.coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_PERSISTENT, .request = request, .info = info); \
    }
#include "collectives.def"
#undef LOOM_COLLECTIVE

void mca_coll_loom_install_entries(mca_coll_loom_module_t *m)
{
#define LOOM_COLLECTIVE(name, ...)        \
    m->super.coll_##name = loom_##name;   \
    m->super.coll_i##name = loom_i##name; \
    m->super.coll_##name##_init = loom_##name##_init;
#include "collectives.def"
#undef LOOM_COLLECTIVE
}

/* ---- handing on: the previous component's function of the call's form ---- */

int mca_coll_loom_hand_on(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    ompi_request_t **r = c->request;
    struct ompi_info_t *info = c->info;
    if (LOOM_NONBLOCKING == c->kind) {
        switch (c->coll) {
#define LOOM_COLLECTIVE(name, NAME, S, ...) \
    case LOOM_COLL_##NAME: return m->previous.i##name(LOOM_FROM_##S(c) comm, r, m->previous.i##name##_module);
#include "collectives.def"
#undef LOOM_COLLECTIVE
        case LOOM_COLL_COUNT: break;
        }
    } else if (LOOM_PERSISTENT == c->kind) {
        switch (c->coll) {
#define LOOM_COLLECTIVE(name, NAME, S, ...)                                                \
    case LOOM_COLL_##NAME:                                                                 \
        return m->previous.name##_init(LOOM_FROM_##S(c) comm, info, r, m->previous.name##_init_module);
#include "collectives.def"
#undef LOOM_COLLECTIVE
        case LOOM_COLL_COUNT: break;
        }
    } else {
        switch (c->coll) {
#define LOOM_COLLECTIVE(name, NAME, S, ...) \
    case LOOM_COLL_##NAME: return m->previous.name(LOOM_FROM_##S(c) comm, m->previous.name##_module);
#include "collectives.def"
#undef LOOM_COLLECTIVE
        case LOOM_COLL_COUNT: break;
        }
    }
    return OMPI_ERR_NOT_SUPPORTED;
}
