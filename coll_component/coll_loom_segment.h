/*
 * Shared-memory segments set up where every rank is (coll_loom_segment.c): for the pipeline
 * (coll_loom_call.c) and requests (coll_loom_request*.c). The only code that writes a module's
 * segment state (mca_coll_loom_module_t.segment). Private to coll_component/.
 */
#ifndef COLL_LOOM_SEGMENT_H
#define COLL_LOOM_SEGMENT_H

#include "coll_loom.h"

BEGIN_C_DECLS

/* A new module's state: no segment yet, none wanted, none allowed until enabled. */
void loom_segment_init(mca_coll_loom_module_t *module);
/* Sets up comm's shared segment inside `call`, which every rank has reached (a blocking call),
 * and makes its verdict the module's state. */
void loom_make_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);
/* A persistent request's own segment, in *slot, set up inside its init (every rank of comm is
 * there: the init is nonlocal), unless this process has coll_loom_shm_persistent_max of them
 * alive. The verdict's bits (0: none, *slot NULL). Give it back with loom_drop_own_segment. */
int loom_make_own_segment(const loom_call_t *call, struct ompi_communicator_t *comm, mca_coll_loom_module_t *module,
                          void **slot);
void loom_drop_own_segment(void **slot);
/* A PENDING segment's set-up, waited for (progressing Open MPI) where every rank waits at the
 * same point - a blocking call, a persistent init - and its outcome made the state. */
void loom_settle_segment(mca_coll_loom_module_t *module);
/* A non-blocking call at which comm's segment is due (coll_loom_call.c): 1 and the state
 * PENDING if the segment may be had (the call begins its set-up as an operation of its own),
 * else 0 and NONE, said at verbose >= 1. */
int loom_segment_begin_pending(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module);
/* The set-up operation could not be started (memory ran out): NONE. */
void loom_segment_lost(mca_coll_loom_module_t *module);

END_C_DECLS

#endif /* COLL_LOOM_SEGMENT_H */
