/*
 * Handing a call on: the previous component's function of the call's collective and form
 * (mca_coll_loom_module_t.previous), one call per signature class (coll_loom_signatures.h).
 * Every form hands on through it - a blocking call (coll_loom_blocking.c), a non-blocking or
 * persistent one (coll_loom_request_start.c), a device call's on host copies under loom's request
 * (coll_loom_request_progress.c) - all but the entry points' hand-on of a repeat, inline before
 * the call's record is made (HAND_ON_REPEAT, coll_loom_entry.c). It calls nothing of loom's: a
 * tail call to the previous component. A blocking call's collective is marked as being handed on
 * (mca_coll_loom_module_t.handing_on) by the blocking form around this call, in the frame that
 * form has anyway: marked here, a blocking call needed a frame here too (callgrind,
 * tools/dev/call-instructions: a handed-on bcast's whole path 4 instructions more).
 */
#include "coll_loom.h"
#include "coll_loom_signatures.h"

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
