// Whole process topologies for tests of the neighbourhood collectives (algorithms/
// neighbourhood.hpp), and the reference of what every receive block gets: computed from the
// definition (MPI's neighbour order and pairing), never from an algorithm. Used by the unit
// tests over the in-process transport and by the integration tests, which build the same
// topologies as MPI communicators.
#pragma once

#include "neighbourhood.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::test {

// Every rank's neighbour lists in one topology.
struct Topology {
    TopologyKind kind = TopologyKind::dist_graph;
    std::vector<int> dims, periods;                       // cartesian only
    std::vector<std::vector<int>> sources, destinations;  // per rank, in MPI's order
    std::string name;                                     // for test messages
    // Made by stencil() on the grid MPI_Dims_create gives: every rank's lists are one stencil
    // (algorithms/combining.hpp), which detect_stencil must find.
    bool stencil = false;
    // A stencil whose offsets are closed under negation and reach every rank from rank 0 (made
    // here by a walk of its own): every rank has the same pair of block sizes (combining.hpp,
    // Stencil::one_size), the message size is a block, and `combining` may serve it.
    bool one_block_size = false;

    int size() const { return int(sources.size()); }
    // Rank r's view, for an algorithm's NeighbourArgs (spans into this Topology).
    Neighbourhood of(int rank) const;
};

// A Cartesian grid (MPI_Cart_create without reorder), neighbours by cartesian_neighbours().
Topology cartesian(std::vector<int> dims, std::vector<int> periods);
// MPI_Graph_create's undirected graph: random symmetric edges of about `degree` per rank, each
// rank's list in ascending order (self loops and repeated edges too when `multi`).
Topology random_graph(int ranks, int degree, std::uint32_t seed, bool multi = false);
// MPI_Dist_graph_create_adjacent: random directed edges, asymmetric, in shuffled order; with
// `multi`, some edges repeated and self edges. Every rank's sources are exactly the ranks that
// name it among their destinations (as MPI requires), in an order of their own.
Topology random_dist_graph(int ranks, int degree, std::uint32_t seed, bool multi = false);

// A stencil over the periodic grid `dims` (ranks in row-major order): rank r's sources are
// r + o for each o of `offsets`, in that order; its destinations r - o, in the reverse order
// (dist_graph) or the same list as the sources (graph: `offsets` must be symmetric). `stencil`
// is set when dims is balanced_dims(P, dims.size()) (the grid detect_stencil tries) and every
// dimension an offset moves along has an extent of 3 or more.
Topology stencil(std::vector<int> dims, const std::vector<std::vector<int>>& offsets, TopologyKind kind,
                 const std::string& name);
// Offset sets for stencil(): von Neumann (the 2d faces), Moore (all 3^d - 1), faces and corners
// (2^d corners with the faces), corners only, and "upwind" (the offsets in {0, +1}^d \ {0}: not
// symmetric, dist_graph only).
std::vector<std::vector<int>> von_neumann(int ndims);
std::vector<std::vector<int>> moore(int ndims);
std::vector<std::vector<int>> faces_and_corners(int ndims);
std::vector<std::vector<int>> corners(int ndims);
std::vector<std::vector<int>> upwind(int ndims);

// Where receive block j of rank r comes from: the sending rank and the index of its send block
// (-1, -1 for a kNoNeighbour source: the block stays untouched). Cartesian: the -1 source's
// block 2d + 1 and the +1 source's block 2d; graphs: the k-th time r names q among its sources
// pairs with the k-th time q names r among its destinations.
struct BlockSource {
    int rank = -1;
    int block = -1;
};
BlockSource block_source(const Topology& t, int r, int j);

// A set of topologies for a test sweep over P ranks: Cartesian grids of 1-3 dimensions
// (periodic, not, mixed, with dimensions of size 1 and 2), graphs and dist graphs (with and
// without repeated edges); where MPI_Dims_create's 2-D or 3-D grid of P has extents of 3 or
// more, stencils over it (Moore and corners as graphs, upwind and von Neumann as dist graphs).
std::vector<Topology> topologies_for(int ranks, std::uint32_t seed = 1);

} // namespace loom::test
