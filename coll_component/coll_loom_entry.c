/*
 * The MPI-facing entry points, made from collectives.def: for each row, in all three forms, a
 * function that records its arguments in a loom_mpi_call_t and calls mca_coll_loom_serve
 * (coll_loom_blocking.c) or mca_coll_loom_start (coll_loom_request_start.c; non-blocking and
 * persistent). Both take the call through the one pipeline (loom_decide, coll_loom_call.c) and
 * then run it, or hand it on (coll_loom_hand_on.c). A repeat of a call loom handed on is handed
 * on before that, by HAND_ON_REPEAT here. What differs between collectives here is only
 * their MPI signature class (coll_loom_signatures.h).
 *
 * A row's entry points are loom_<name>, loom_i<name> and loom_<name>_init, and traced_<name>,
 * traced_i<name>, traced_<name>_init (grep "loom_##name", "traced_##name"; gcc -E shows them
 * expanded). Macros are at most two deep: LOOM_COLLECTIVE, then SERVE, START, TRACED,
 * HAND_ON_REPEAT or a signature class's LOOM_*_<class>, none of which uses another macro of
 * loom's, so that a compiler error names the row's line and one macro.
 */
#include "coll_loom.h"
#include "coll_loom_repeat.h"
#include "coll_loom_report.h"
#include "coll_loom_trace.h"

/* Records the call and serves it; REPEAT: what HAND_ON_REPEAT found (a served repeat), or NULL. */
#define SERVE(REPEAT, ...)                                                                  \
    do {                                                                                    \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                        \
        return mca_coll_loom_serve(&call_, comm, (mca_coll_loom_module_t *)module, REPEAT); \
    } while (0)

/* A repeat of the last call of COLL in form KIND that loom handed on goes straight to the
 * previous component (CALL_PREVIOUS, a statement setting rc_: LOOM_HAND_ON_ON_TOP for a blocking
 * call, a call of its function in m_->previous for the other forms), before the call's
 * record is built: the pipeline's first test (FOUND: loom_repeat_of_args, coll_loom_repeat.c, on
 * the arguments its signature class names, LOOM_KEY_<class>) and its hand-on, inline on the
 * arguments - about 150 instructions fewer than the whole path, which a handed-on call adds to
 * the next component's (callgrind: tools/dev/call-instructions --collective bcast; for
 * reduce_scatter, whose per-rank counts kept it off this path until issue 45, about 1000). A
 * blocking call is marked as being handed on meanwhile (mca_coll_loom_module_t.handing_on) and
 * is not handed on so while marked: it was handed back from below. Declares m_ (the module) and
 * repeat_ (any other repeat the test found, for SERVE or START: a served one, or one handed back
 * from below). */
#define HAND_ON_REPEAT(KIND, COLL, FOUND, CALL_PREVIOUS)                                         \
    mca_coll_loom_module_t *const m_ = (mca_coll_loom_module_t *)module;                         \
    const loom_repeat_t *const repeat_ = FOUND;                                                  \
    const unsigned mark_ = LOOM_BLOCKING == (KIND) ? 1u << (COLL) : 0u;                          \
    if (NULL != repeat_ && !repeat_->is_served && 0 == (m_->handing_on & mark_)) {               \
        loom_note_declined(KIND, COLL, comm, repeat_->why);                                      \
        m_->handing_on |= mark_;                                                                 \
        int rc_;                                                                                 \
        CALL_PREVIOUS;                                                                           \
        m_->handing_on &= ~mark_;                                                                \
        return rc_;                                                                              \
    }

#include "coll_loom_signatures.h"

/* ---- the entry points: blocking, non-blocking and persistent, one set per row ---- */

/* Records the call and starts it (non-blocking, persistent); REPEAT as for SERVE. */
#define START(REPEAT, ...)                                                                  \
    do {                                                                                    \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                        \
        return mca_coll_loom_start(&call_, comm, (mca_coll_loom_module_t *)module, REPEAT); \
    } while (0)

#define LOOM_COLLECTIVE(name, NAME, S, ...)                                                                     \
    static int loom_##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, mca_coll_base_module_t *module)       \
    {                                                                                                              \
        HAND_ON_REPEAT(LOOM_BLOCKING, LOOM_COLL_##NAME,                                                            \
                       loom_repeat_of_args(m_, LOOM_BLOCKING, LOOM_COLL_##NAME, LOOM_KEY_##S),                     \
                       LOOM_HAND_ON_ON_TOP(rc_, m_, comm, name, LOOM_ARGS_##S))                                    \
        SERVE(repeat_, .coll = LOOM_COLL_##NAME LOOM_RECORD_##S);                                                  \
    }                                                                                                              \
    static int loom_i##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, ompi_request_t **request,            \
                            mca_coll_base_module_t *module)                                                        \
    {                                                                                                              \
        HAND_ON_REPEAT(LOOM_NONBLOCKING, LOOM_COLL_##NAME,                                                         \
                       loom_repeat_of_args(m_, LOOM_NONBLOCKING, LOOM_COLL_##NAME, LOOM_KEY_##S),                  \
                       rc_ = m_->previous.i##name(LOOM_ARGS_##S comm, request, m_->previous.i##name##_module))     \
        START(repeat_, .coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_NONBLOCKING, .request = request);    \
    }                                                                                                              \
    static int loom_##name##_init(LOOM_PARAMS_##S struct ompi_communicator_t *comm, struct ompi_info_t *info,      \
                                  ompi_request_t **request, mca_coll_base_module_t *module)                        \
    {                                                                                                              \
        HAND_ON_REPEAT(LOOM_PERSISTENT, LOOM_COLL_##NAME,                                                          \
                       loom_repeat_of_args(m_, LOOM_PERSISTENT, LOOM_COLL_##NAME, LOOM_KEY_##S),                   \
                       rc_ = m_->previous.name##_init(LOOM_ARGS_##S comm, info, request,                          \
                                                      m_->previous.name##_init_module))                          \
        START(repeat_, .coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_PERSISTENT, .request = request,      \
              .info = info);                                                                                       \
    }
#include "collectives.def"
#undef LOOM_COLLECTIVE

/* ---- the same, traced (coll_loom_trace): installed instead when the timeline is on ---- */

/* Records the call as the untraced entry point does (KIND, its fields), makes its event around
 * CALL (the untraced entry point), and ends it (a request: when it completes, if loom's). */
#define TRACED(REQUEST, CALL, ...)                                                           \
    do {                                                                                     \
        const loom_mpi_call_t call_ = {__VA_ARGS__};                                         \
        loom_trace_call_t t_;                                                                \
        loom_trace_enter(&t_, &call_, comm);                                                 \
        const int rc_ = CALL;                                                                \
        ompi_request_t *const made_ = OMPI_SUCCESS == rc_ ? REQUEST : NULL;                  \
        /* A request of loom's takes the event (a dropped one too: its starts count). */     \
        const int taken_ = NULL != made_ && mca_coll_loom_request_trace(made_, t_.event);    \
        loom_trace_leave(&t_, taken_, NULL != made_);                                        \
        return rc_;                                                                          \
    } while (0)

#define LOOM_COLLECTIVE(name, NAME, S, ...)                                                                          \
    static int traced_##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, mca_coll_base_module_t *module)     \
    {                                                                                                              \
        TRACED(NULL, loom_##name(LOOM_ARGS_##S comm, module), .coll = LOOM_COLL_##NAME LOOM_RECORD_##S);           \
    }                                                                                                              \
    static int traced_i##name(LOOM_PARAMS_##S struct ompi_communicator_t *comm, ompi_request_t **request,          \
                              mca_coll_base_module_t *module)                                                      \
    {                                                                                                              \
        TRACED(*request, loom_i##name(LOOM_ARGS_##S comm, request, module),                                        \
               .coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_NONBLOCKING);                                \
    }                                                                                                              \
    static int traced_##name##_init(LOOM_PARAMS_##S struct ompi_communicator_t *comm, struct ompi_info_t *info,    \
                                    ompi_request_t **request, mca_coll_base_module_t *module)                      \
    {                                                                                                              \
        TRACED(*request, loom_##name##_init(LOOM_ARGS_##S comm, info, request, module),                            \
               .coll = LOOM_COLL_##NAME LOOM_RECORD_##S, .kind = LOOM_PERSISTENT);                                 \
    }
#include "collectives.def"
#undef LOOM_COLLECTIVE

void mca_coll_loom_install_entries(mca_coll_loom_module_t *m)
{
    if (loom_trace_on()) {
#define LOOM_COLLECTIVE(name, ...)          \
    m->super.coll_##name = traced_##name;   \
    m->super.coll_i##name = traced_i##name; \
    m->super.coll_##name##_init = traced_##name##_init;
#include "collectives.def"
#undef LOOM_COLLECTIVE
        return;
    }
#define LOOM_COLLECTIVE(name, ...)        \
    m->super.coll_##name = loom_##name;   \
    m->super.coll_i##name = loom_i##name; \
    m->super.coll_##name##_init = loom_##name##_init;
#include "collectives.def"
#undef LOOM_COLLECTIVE
}

