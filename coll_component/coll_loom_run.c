/*
 * Step 4's copies, shared by every form (coll_loom_run.h): host copies of device buffers and
 * dense views made before the run, emptied after it. A blocking call takes them around its run;
 * a request takes them in at its launch and out at its completion, in whichever MPI call
 * completes it.
 */
#include "coll_loom_run.h"

int loom_run_in_slow(loom_glue_call_t *c, int views, int copies)
{
    int rc = LOOM_COPIES_MAKE == copies   ? loom_host_copies_in(c)
             : LOOM_COPIES_FILL == copies ? loom_host_copies_fill(c)
                                          : OMPI_SUCCESS;
    if (OMPI_SUCCESS != rc || !views) return rc;
    /* loom_views_in allocates the views: a persistent request's of its last start go first. */
    loom_views_free(c);
    return loom_views_in(c);
}

int loom_run_out_slow(loom_glue_call_t *c, int views, int copies)
{
    const int rc = views ? loom_views_out(c) : OMPI_SUCCESS;
    return OMPI_SUCCESS == rc && LOOM_COPIES_NONE != copies ? loom_host_copies_out(c) : rc;
}
