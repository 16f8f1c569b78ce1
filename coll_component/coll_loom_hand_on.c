/*
 * Handing a call on: the previous component's function of the call's collective and form
 * (mca_coll_loom_module_t.previous), one call per signature class (coll_loom_signatures.h).
 * Every form hands on through it - a blocking call (coll_loom_blocking.c), a non-blocking or
 * persistent one (coll_loom_request_start.c), a device call's on host copies under loom's request
 * (coll_loom_request_progress.c) - all but the entry points' hand-on of a repeat, inline before
 * the call's record is made (HAND_ON_REPEAT, coll_loom_entry.c). It calls nothing of loom's; a
 * blocking call goes with the previous component on top of the communicator's table
 * (LOOM_HAND_ON_ON_TOP, coll_loom.h), so that a component that steps aside can. A blocking
 * call's collective is marked as being handed on
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
        int rc = OMPI_ERR_NOT_SUPPORTED;
        switch (c->coll) {
#define LOOM_COLLECTIVE(name, NAME, S, ...)                                  \
    case LOOM_COLL_##NAME: LOOM_HAND_ON_ON_TOP(rc, m, comm, name, LOOM_FROM_##S(c)); break;
#include "collectives.def"
#undef LOOM_COLLECTIVE
        case LOOM_COLL_COUNT: break;
        }
        return rc;
    }
    return OMPI_ERR_NOT_SUPPORTED;
}

void mca_coll_loom_stepped_aside(struct ompi_communicator_t *comm, const char *name)
{
    opal_output_verbose(2, mca_coll_loom_component.output,
                        "coll:loom: %s on %s (rank %d of %d): the component below stepped aside; loom hands on "
                        "to the one it put in its place from now on",
                        name, comm->c_name, ompi_comm_rank(comm), ompi_comm_size(comm));
}
