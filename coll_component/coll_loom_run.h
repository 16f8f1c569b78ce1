/*
 * Step 4 of every call, the part its forms share (coll_loom_run.c): what comes after deciding and
 * around the algorithm's run - host copies of device buffers and dense views in, the transport
 * over the PML set up, the tuning parameters and the tag, and after the run the views and copies
 * out. A blocking call (coll_loom_blocking.c) prepares, runs and finishes in one go; a request
 * prepares at its launch and finishes at its completion (coll_loom_request_progress.c); a call
 * handed on uses the copies alone. Private to coll_component/.
 */
#ifndef COLL_LOOM_RUN_H
#define COLL_LOOM_RUN_H

#include "coll_loom_buffers.h"
#include "ompi/mca/coll/base/coll_tags.h"

BEGIN_C_DECLS

/* What loom_run_in and loom_run_out do with host copies of device buffers: nothing, fill
 * copies made before (a request makes them at its call or init: loom_host_copies_make), or make
 * them and fill them (a blocking call). */
enum { LOOM_COPIES_NONE = 0, LOOM_COPIES_FILL = 1, LOOM_COPIES_MAKE = 2 };

/* Before the run: the host copies (copies: LOOM_COPIES_*), then the dense views where `views`
 * (a described call whose buffers are not used in place: !c->dense; made anew, a persistent
 * request's start after the last). Inline, so that a call with neither costs a test. */
int loom_run_in_slow(loom_glue_call_t *c, int views, int copies);
static inline int loom_run_in(loom_glue_call_t *c, int views, int copies)
{
    return views || copies ? loom_run_in_slow(c, views, copies) : OMPI_SUCCESS;
}
/* After a run that returned rc: the views emptied into the user's buffers, then the host copies
 * into the device buffers (copies: not LOOM_COPIES_NONE), if rc and each step succeed. rc, or
 * the first step's error. */
int loom_run_out_slow(loom_glue_call_t *c, int views, int copies);
static inline int loom_run_out(loom_glue_call_t *c, int views, int copies, int rc)
{
    return OMPI_SUCCESS == rc && (views || copies) ? loom_run_out_slow(c, views, copies) : rc;
}

/* The transport an algorithm runs over: the PML on comm with `tag`, the shared segment in
 * *shared_state (NULL: none). */
static inline void loom_run_transport(loom_pml_transport_t *t, struct ompi_communicator_t *comm,
                                      mca_coll_loom_module_t *module, int tag, void **shared_state)
{
    loom_pml_transport_init(t, comm, module, tag);
    t->ops.shared_state = shared_state;
}

/* Open MPI's tag for each blocking collective (collectives.def's tag): a blocking call's
 * messages, and a segment's set-up inside a call. A collective Open MPI gives no tag of its own
 * (tag none: the neighbourhood collectives) takes the first of Open MPI's neighbourhood tags. */
#define MCA_COLL_BASE_TAG_none MCA_COLL_BASE_TAG_NEIGHBOR_BASE
static inline int loom_blocking_tag(loom_coll_t coll)
{
    static const int tags[LOOM_COLL_COUNT] = {
#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, result, counts, Args, tag) \
    [LOOM_COLL_##NAME] = MCA_COLL_BASE_TAG_##tag,
#include "collectives.def"
#undef LOOM_COLLECTIVE
    };
    return tags[coll];
}

/* The tuning parameters a call runs with: a rule's segment=, buffer=, radix= or requests= option,
 * already in the call, else coll_loom_segment_size / _pat_buffer_size / _knomial_radix /
 * _alltoallv_max_requests as they are now (MPI_T may change them between calls). The window's 0
 * (every peer at once) goes to the core as SIZE_MAX, the largest window: the core's 0 is its
 * default. */
static inline void loom_apply_options(size_t *segment_bytes, size_t *buffer_bytes, size_t *radix, size_t *max_requests)
{
    if (0 == *segment_bytes) *segment_bytes = mca_coll_loom_component.segment_size;
    if (0 == *buffer_bytes) *buffer_bytes = mca_coll_loom_component.pat_buffer_size;
    if (0 == *radix) *radix = mca_coll_loom_component.knomial_radix;
    const size_t window = mca_coll_loom_component.alltoallv_max_requests;
    if (0 == *max_requests) *max_requests = 0 == window ? SIZE_MAX : window;
}
static inline void loom_apply_tuning(loom_call_t *call)
{
    loom_apply_options(&call->segment_bytes, &call->buffer_bytes, &call->radix, &call->max_requests);
    if (NULL != call->stand_in.algorithm)
        loom_apply_options(&call->stand_in.segment_bytes, &call->stand_in.buffer_bytes, &call->stand_in.radix,
                           &call->stand_in.max_requests);
}
/* loom's error codes (LOOM_ERR_*) as Open MPI's. */
static inline int loom_to_ompi_error(int rc)
{
    return LOOM_ERR_NO_MEMORY == rc ? OMPI_ERR_OUT_OF_RESOURCE : LOOM_ERR_INTERNAL == rc ? OMPI_ERROR : rc;
}

END_C_DECLS

#endif /* COLL_LOOM_RUN_H */
