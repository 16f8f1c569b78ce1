// bench_topology: the process topology loom-bench runs the neighbourhood collectives on, made
// from --topology, and what each rank's receive blocks must hold after a call (so that every
// result is checked against values computed here, never by Open MPI).
//
//   ring          a 1-D periodic Cartesian grid over every rank (the default)
//   cart:AxB...   a Cartesian grid of those extents (their product: the ranks), a dimension
//                 periodic where its extent ends in 'p' (cart:2px2: periodic along the first)
//   stencil:AxB   a distributed graph (MPI_Dist_graph_create_adjacent): each rank of a periodic
//                 AxB grid exchanges with its 8 Moore neighbours (the 2-D halo exchange with
//                 corners, the case message combining targets); on a grid under 3 wide a
//                 neighbour repeats or is the rank itself, which MPI allows
//
// Ranks are not reordered, so rank r of the topology is rank r of MPI_COMM_WORLD.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "neighbourhood.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::bench {

struct BadTopology : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// A topology as asked for, before any communicator exists.
struct TopologySpec {
    std::string text; // as given, for the tables' titles
    TopologyKind kind = TopologyKind::cartesian;
    std::vector<int> dims, periods; // cartesian: extents and periodicity; stencil: the grid (2-D)
};

// Parses --topology for a job of `ranks` ranks; BadTopology names what is wrong.
TopologySpec parse_topology(const std::string& text, int ranks);

// The neighbours `rank` sends to, in MPI's order for the spec (sources are the same list).
std::vector<int> topology_neighbours(const TopologySpec& spec, int rank);

// The communicator with the spec's topology over MPI_COMM_WORLD, and this rank's neighbours.
struct BenchTopology {
    TopologySpec spec;
    MPI_Comm comm = MPI_COMM_NULL;
    std::vector<int> neighbours; // MPI's order; kNoNeighbour = MPI_PROC_NULL
    // Every rank's lists are one stencil over MPI_Dims_create's grid (algorithms/combining.hpp),
    // as loom's glue finds it: the combining algorithm can serve the communicator.
    bool stencil = false;
    BenchTopology(const TopologySpec& s, int rank);
    ~BenchTopology();
    BenchTopology(const BenchTopology&) = delete;
    BenchTopology& operator=(const BenchTopology&) = delete;
    std::size_t degree() const { return neighbours.size(); }
};

// Which block of source `neighbours[j]`'s send side arrives in this rank's receive block j:
// for a Cartesian grid, the sender's opposite direction (j ^ 1); for a graph, the k-th time the
// source names this rank among its destinations, where j is the k-th time this rank names the
// source (neighbourhood.hpp, "Matching"). kNoNeighbour sources: nothing arrives.
std::size_t sender_block(const TopologySpec& spec, int rank, const std::vector<int>& neighbours, std::size_t j);

} // namespace loom::bench
