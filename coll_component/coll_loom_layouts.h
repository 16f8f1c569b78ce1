/*
 * The layouts of collectives.def in the glue, one descriptor each (coll_loom_layouts.c): how a
 * call of each layout is described (loom_describe, coll_loom_buffers.c) and how many bytes the
 * trace gives it. Nothing else in the glue switches on a layout. Private to coll_component/.
 */
#ifndef COLL_LOOM_LAYOUTS_H
#define COLL_LOOM_LAYOUTS_H

#include "coll_loom_buffers.h"

typedef struct loom_layout_desc {
    loom_layout_t layout;
    /* Describes the MPI call m (c->mpi), whose collective's row is row, into c, whole (for
     * loom_describe): the core call's counts and root, the send and receive buffers, then a
     * reduction's op plan or whether a data movement's buffers are dense where they are.
     * Returns why loom cannot serve the call, or NULL (*rc: an error, else OMPI_SUCCESS). Whole,
     * so that this call through a pointer, on every call's path, costs no more than the inlined
     * code it replaced: descriptors that left the end to loom_describe, after the call, cost a
     * bcast's whole path 15 instructions more and an allreduce's 18 (tools/dev/call-instructions).
     * m is c->mpi, an argument so that loom_describe's own go on where they are. */
    const char *(*describe)(loom_glue_call_t *c, const loom_mpi_call_t *m, const loom_coll_row_t *row,
                            struct ompi_communicator_t *comm, int *rc);
    /* loom's message size from MPI's arguments (message_bytes' definition, for dense datatypes),
     * so that handed-on calls, never described, have one in the trace too. */
    unsigned long long (*mpi_bytes)(const loom_mpi_call_t *m, int size, int rank);
} loom_layout_desc_t;

extern const loom_layout_desc_t loom_layouts[LOOM_LAYOUT_COUNT];

static inline const loom_layout_desc_t *loom_layout_of(loom_coll_t coll)
{
    return &loom_layouts[loom_coll_layout(coll)];
}

#endif /* COLL_LOOM_LAYOUTS_H */
