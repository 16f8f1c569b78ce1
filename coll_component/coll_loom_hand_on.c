/*
 * Handing a call on: the previous component's function of the call's collective and form
 * (mca_coll_loom_module_t.previous), one call per signature class (coll_loom_signatures.h).
 * Every form hands on through it - a blocking call (coll_loom_blocking.c), a non-blocking or
 * persistent one (coll_loom_request_start.c), a device call's on host copies under loom's request
 * (coll_loom_request_progress.c) - all but the entry points' hand-on of a repeat, inline before
 * the call's record is made (HAND_ON_REPEAT_AS, coll_loom_entry.c). It calls nothing of loom's.
 */
#include "coll_loom.h"
#include "coll_loom_signatures.h"

/* The previous component's function for c. Inlined into both branches below, so that the
 * blocking one's tests of the form fold away (tools/dev/call-instructions, a handed-on bcast with
 * coll_loom_fast_repeats 0: 695 instructions of glue a call without it, 687 with it). */
static inline __attribute__((always_inline)) int call_previous(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
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

/* A blocking call is marked as being handed on meanwhile (mca_coll_loom_module_t.handing_on): if
 * it comes back from below, loom serves it. */
int mca_coll_loom_hand_on(const loom_mpi_call_t *c, struct ompi_communicator_t *comm, mca_coll_loom_module_t *m)
{
    if (LOOM_BLOCKING != c->kind) return call_previous(c, comm, m);
    const unsigned bit = 1u << c->coll;
    m->handing_on |= bit;
    const int rc = call_previous(c, comm, m);
    m->handing_on &= ~bit;
    return rc;
}
