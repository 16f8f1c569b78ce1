/*
 * The neighbours of a communicator's process topology (coll_loom_neighbours.c), for the
 * neighbourhood collectives: read from Open MPI's record of the topology once per communicator.
 * Private to coll_component/.
 */
#ifndef COLL_LOOM_NEIGHBOURS_H
#define COLL_LOOM_NEIGHBOURS_H

#include "coll_loom.h"

BEGIN_C_DECLS

/* comm's neighbourhood (loom_c_api.h), made at its first neighbourhood call and kept in the module
 * (freed with it): Open MPI sets a communicator's topology (c_topo) only after it enabled the
 * communicator's modules, so it cannot be read at enable. NULL, with *why, if comm has no process
 * topology (MPI_Neighbor_* on one is an error: the previous component reports it) or memory ran
 * out. The same on every rank: it depends on the topology alone. A graph or dist graph's first
 * read may be collective (an allreduce on comm: whether every rank's lists are one stencil, made
 * only where the rules or parameters may choose an algorithm that needs one), so every rank must
 * make it at the same call: its first neighbourhood collective on comm. */
const loom_neighbourhood_t *mca_coll_loom_neighbourhood(struct ompi_communicator_t *comm,
                                                        mca_coll_loom_module_t *module, const char **why);

/* Frees what mca_coll_loom_neighbourhood made (the module's neighbours; NULL: nothing). */
void mca_coll_loom_neighbourhood_free(void *neighbours);

END_C_DECLS

#endif /* COLL_LOOM_NEIGHBOURS_H */
