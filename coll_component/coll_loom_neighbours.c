/*
 * A communicator's neighbours, as MPI orders them (coll_loom_neighbours.h), from Open MPI's
 * record of its process topology (comm->c_topo->mtc). The record is the same in Open MPI 4.1 and
 * 5.0 (ompi/mca/topo/topo.h: mca_topo_base_comm_{cart,graph,dist_graph}_2_2_0_t), so nothing
 * here depends on the version. The lists are those Open MPI's own components use: a Cartesian
 * one's from the grid (as MPI_Cart_shift gives them, loom_cartesian_neighbours), a graph's from
 * its index and edges (MPI_Graph_neighbors), a distributed graph's in and out arrays
 * (MPI_Dist_graph_neighbors; weights play no part in the collectives).
 *
 * A graph or distributed graph may be a stencil over a periodic grid (algorithms/combining.hpp),
 * which the combining algorithm needs: each rank checks its own lists (loom_stencil_detect), and
 * one allreduce through the component loom replaced makes every rank know whether all of them
 * found the same stencil (agree_stencil). That allreduce is made only where an algorithm that
 * needs a stencil may serve (a rule for the communicator or a forced parameter names one, or
 * online tuning may try one: stencil_may_serve); the built-in table names none, so a job without
 * such a rule pays nothing for it. A Cartesian communicator is never checked: its 2 ndims face
 * neighbours are one round with linear already.
 */
#include "coll_loom_neighbours.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/topo.h"
#include "ompi/op/op.h"

#include <stdlib.h>
#include <string.h>

/* One allocation: the record, then its lists. */
typedef struct loom_neighbours {
    loom_neighbourhood_t n;
    int lists[];
} loom_neighbours_t;

static loom_neighbours_t *make(int in, int out, int ndims)
{
    loom_neighbours_t *nb = malloc(sizeof(*nb) + (size_t)(in + out + 2 * ndims) * sizeof(int));
    if (NULL == nb) return NULL;
    memset(&nb->n, 0, sizeof(nb->n));
    nb->n.indegree = in;
    nb->n.outdegree = out;
    nb->n.ndims = ndims;
    nb->n.sources = nb->lists;
    nb->n.destinations = nb->lists + in;
    nb->n.dims = nb->lists + in + out;
    nb->n.periods = nb->lists + in + out + ndims;
    return nb;
}

static loom_neighbours_t *read_cartesian(struct ompi_communicator_t *comm)
{
    const mca_topo_base_comm_cart_2_2_0_t *cart = comm->c_topo->mtc.cart;
    const int nd = cart->ndims;
    loom_neighbours_t *nb = make(2 * nd, 2 * nd, nd);
    if (NULL == nb) return NULL;
    nb->n.kind = LOOM_TOPO_CARTESIAN;
    nb->n.degree = 2 * nd;
    for (int d = 0; d < nd; ++d) {
        nb->lists[2 * nd + 2 * nd + d] = cart->dims[d];
        nb->lists[2 * nd + 2 * nd + nd + d] = cart->periods[d];
    }
    loom_cartesian_neighbours(nd, nb->n.dims, nb->n.periods, ompi_comm_rank(comm), nb->lists);
    memcpy(nb->lists + 2 * nd, nb->lists, (size_t)(2 * nd) * sizeof(int));
    return nb;
}

/* MPI_Graph_create's index is cumulative: rank i's neighbours are edges[index[i-1] .. index[i]). */
static loom_neighbours_t *read_graph(struct ompi_communicator_t *comm)
{
    const mca_topo_base_comm_graph_2_2_0_t *g = comm->c_topo->mtc.graph;
    const int rank = ompi_comm_rank(comm), first = 0 == rank ? 0 : g->index[rank - 1];
    const int degree = g->index[rank] - first;
    loom_neighbours_t *nb = make(degree, degree, 0);
    if (NULL == nb) return NULL;
    nb->n.kind = LOOM_TOPO_GRAPH;
    /* The whole graph is on every rank: its largest degree is every rank's to know. */
    for (int i = 0; i < g->nnodes; ++i) {
        const int d = g->index[i] - (0 == i ? 0 : g->index[i - 1]);
        if (d > nb->n.degree) nb->n.degree = d;
    }
    if (degree > 0) {
        memcpy(nb->lists, g->edges + first, (size_t)degree * sizeof(int));
        memcpy(nb->lists + degree, g->edges + first, (size_t)degree * sizeof(int));
    }
    return nb;
}

static loom_neighbours_t *read_dist_graph(struct ompi_communicator_t *comm)
{
    const mca_topo_base_comm_dist_graph_2_2_0_t *g = comm->c_topo->mtc.dist_graph;
    loom_neighbours_t *nb = make(g->indegree, g->outdegree, 0);
    if (NULL == nb) return NULL;
    nb->n.kind = LOOM_TOPO_DIST_GRAPH;
    nb->n.degree = 0; /* each rank knows its own degrees only */
    if (g->indegree > 0) memcpy(nb->lists, g->in, (size_t)g->indegree * sizeof(int));
    if (g->outdegree > 0) memcpy(nb->lists + g->indegree, g->out, (size_t)g->outdegree * sizeof(int));
    return nb;
}

/* Whether every rank of comm found the stencil this rank found (fingerprints all equal and not
 * 0): the largest fingerprint and the largest complement, i.e. the smallest fingerprint, from one
 * allreduce (MAX) every rank makes at the same call (its first neighbourhood collective on comm),
 * through the previous component: the same answer on every rank. The stencil is kept if so. */
static int agree_stencil(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module, loom_neighbours_t *nb)
{
    uint64_t mine = 0;
    void *stencil = loom_stencil_detect(ompi_comm_size(comm), ompi_comm_rank(comm), nb->n.indegree, nb->n.sources,
                                        nb->n.outdegree, nb->n.destinations, &mine);
    uint64_t send[2] = {mine, ~mine}, most[2] = {0, 0};
    const int rc = module->previous.allreduce(send, most, 2, &ompi_mpi_uint64_t.dt, &ompi_mpi_op_max.op, comm,
                                              module->previous.allreduce_module);
    if (OMPI_SUCCESS == rc && 0 != mine && most[0] == mine && ~most[1] == mine) {
        nb->n.stencil = stencil;
        return OMPI_SUCCESS;
    }
    loom_stencil_free(stencil);
    return rc;
}

/* Whether comm's calls may ever be served by an algorithm that needs an agreed stencil: the same
 * on every rank (rules and parameters are agreed, coll_loom_agree.c), so every rank makes the
 * agreement's allreduce or none does. A forced parameter or rule set later (MPI_T) finds the
 * communicator's neighbourhood already read without a stencil: such algorithms pass over it. */
static int stencil_may_serve(struct ompi_communicator_t *comm, mca_coll_loom_module_t *module)
{
    if (mca_coll_loom_component.autotune) return 1;
    return loom_rules_may_need_stencil(mca_coll_loom_rules(comm, module),
                                       (const char *const *)mca_coll_loom_component.forced);
}

void mca_coll_loom_neighbourhood_free(void *neighbours)
{
    if (NULL != neighbours) loom_stencil_free((void *)((loom_neighbours_t *)neighbours)->n.stencil);
    free(neighbours);
}

const loom_neighbourhood_t *mca_coll_loom_neighbourhood(struct ompi_communicator_t *comm,
                                                        mca_coll_loom_module_t *module, const char **why)
{
    if (NULL != module->neighbours) return &((loom_neighbours_t *)module->neighbours)->n;
    if (NULL == comm->c_topo) {
        *why = "the communicator has no process topology";
        return NULL;
    }
    loom_neighbours_t *nb = OMPI_COMM_IS_CART(comm)         ? read_cartesian(comm)
                            : OMPI_COMM_IS_GRAPH(comm)      ? read_graph(comm)
                            : OMPI_COMM_IS_DIST_GRAPH(comm) ? read_dist_graph(comm)
                                                            : NULL;
    if (NULL == nb) {
        *why = OMPI_COMM_IS_CART(comm) || OMPI_COMM_IS_GRAPH(comm) || OMPI_COMM_IS_DIST_GRAPH(comm)
                   ? "out of memory for the communicator's neighbours"
                   : "the communicator has no process topology";
        return NULL;
    }
    if (!OMPI_COMM_IS_CART(comm) && stencil_may_serve(comm, module) && OMPI_SUCCESS != agree_stencil(comm, module, nb)) {
        free(nb);
        *why = "the allreduce that checks whether the topology is a stencil failed";
        return NULL;
    }
    module->neighbours = nb;
    return &nb->n;
}
