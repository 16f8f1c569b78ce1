// Process-topology communicators for the MPI checks of the neighbourhood collectives
// (collectives_check, exactness_check, call_model): each made from a test Topology
// (tests/support/neighbourhoods.hpp) over a base communicator, so that the reference of every
// receive block (block_source) comes from the same Topology the communicator was made from.
// MPI_Dist_graph_create (not _adjacent) lets Open MPI order the lists: that one's Topology is
// read back from the communicator (MPI_Dist_graph_neighbors on every rank, gathered).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "neighbourhoods.hpp"

#include <cstdint>
#include <vector>

namespace neighbours {

struct TopologyComm {
    MPI_Comm comm = MPI_COMM_NULL;
    loom::test::Topology topology; // every rank's lists, as the communicator has them
};

// Communicators over `base` (every rank of it calls this alike): topologies_for(size, seed) -
// Cartesian grids of 1-3 dimensions, periodic or not, with dimensions of size 1 and 2; graphs
// with and without repeated edges and self loops; dist graphs (adjacent, unweighted and
// weighted) - and a dist graph made by MPI_Dist_graph_create.
std::vector<TopologyComm> make_all(MPI_Comm base, std::uint32_t seed);
// One communicator with the topology t over base (t.size() ranks).
TopologyComm make(MPI_Comm base, const loom::test::Topology& t, bool weighted = false);
void free_all(std::vector<TopologyComm>& comms);

// The Topology of a communicator with a process topology (its lists read through MPI and
// gathered on every rank); nullopt-like empty Topology (size 0) if it has none.
loom::test::Topology read(MPI_Comm comm);

} // namespace neighbours
