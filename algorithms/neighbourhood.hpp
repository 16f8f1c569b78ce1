// The neighbourhood collectives' model, MPI-free: a rank's neighbours in its communicator's
// process topology (MPI_Cart_create, MPI_Graph_create, MPI_Dist_graph_create[_adjacent]) and
// the argument record of MPI_Neighbor_allgather(v) and MPI_Neighbor_alltoall(v, w).
//
// Matching. Every message of one call travels with one tag (transport.hpp), so messages between
// a pair of ranks match in the order they are posted. A rank posts its sends in the order of
// its destinations and its receives in recv_match_order()'s order of its sources; then:
//   - graph and dist_graph: the k-th time rank r names q among its destinations matches the
//     k-th time q names r among its sources (repeated edges, which MPI allows, pair in list
//     order, as MPI defines);
//   - cartesian: what a rank sends in direction +1 along dimension d (block 2d + 1) arrives as
//     its +1 neighbour's block from direction -1 (block 2d), and the other way round - also
//     where both neighbours are one rank (a periodic dimension of size 2, or of size 1: the rank
//     itself), which plain list order would swap. Open MPI's basic and libnbc components give
//     each direction its own tag for this; loom posts a dimension's receives +1 side first.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace loom {

// MPI_PROC_NULL in a neighbour list (a Cartesian neighbour off a non-periodic edge, or along a
// non-periodic dimension of size 1): nothing is sent to it or received from it, and its block
// of the receive buffer stays untouched.
constexpr int kNoNeighbour = -1;

enum class TopologyKind { cartesian, graph, dist_graph };

struct Stencil; // combining.hpp

// A rank's neighbours, in the order MPI defines for its topology:
//   cartesian   for each dimension d in turn, the rank at -1 then the rank at +1 along d
//               (MPI_Cart_shift(comm, d, 1)'s source, then its destination); sources and
//               destinations are the same list, of 2 x ndims entries
//   graph       MPI_Graph_neighbors' list, as sources and as destinations
//   dist_graph  MPI_Dist_graph_neighbors' sources and destinations, in the order the
//               communicator was created with
// A rank may appear more than once in a list (see Matching above), and may be the rank itself.
struct Neighbourhood {
    TopologyKind kind = TopologyKind::dist_graph;
    std::span<const int> sources;      // block j of the receive side comes from sources[j]
    std::span<const int> destinations; // block i of the send side goes to destinations[i]
    std::span<const int> dims;         // cartesian: the grid's extent per dimension (else empty)
    std::span<const int> periods;      // cartesian: nonzero where dimension d is periodic
    // graph and dist_graph: the stencil over a periodic grid that every rank of the communicator
    // agreed its lists are (combining.hpp, detect_stencil); nullptr if they are not one
    const Stencil* stencil = nullptr;
};

// MPI_Neighbor_allgather(v) and MPI_Neighbor_alltoall(v, w), in bytes. Block i of the send side
// goes to neighbours.destinations[i], block j of the receive side comes from
// neighbours.sources[j]. Each side's blocks lie end to end in neighbour order (the glue packs
// gapped or reordered displacements and alltoallw's datatypes into such a view, as for
// alltoallv); the allgathers send the one block of send_bytes[0] bytes to every destination
// (same_block). A kNoNeighbour block is neither sent nor received. MPI has no in-place form of
// these collectives.
struct NeighbourArgs {
    Neighbourhood neighbours;
    const void* sendbuf;
    void* recvbuf;
    std::span<const std::size_t> send_bytes; // one per destination (same_block: one in all)
    std::span<const std::size_t> recv_bytes; // one per source
    bool same_block = false;                 // allgather(v): one block to every destination
    std::size_t max_requests = 0;            // linear: requests in flight per direction (0: all)

    std::size_t send_block_bytes(std::size_t i) const { return same_block ? send_bytes[0] : send_bytes[i]; }
};

// The k-th receive to post, as a block index of the receive side: list order, but for a
// Cartesian neighbourhood each dimension's +1 source (block 2d + 1) before its -1 source (2d),
// so that receives match sends posted in destination order (Matching, above).
inline std::size_t recv_match_order(const Neighbourhood& n, std::size_t k)
{
    return n.kind == TopologyKind::cartesian ? (k ^ 1) : k;
}

// The Cartesian neighbour list of `rank` in a grid of `dims` (ranks numbered in row-major
// order of their coordinates, as MPI numbers a Cartesian communicator), periodic where
// periods[d] is nonzero: for each dimension, the rank at -1, then at +1, kNoNeighbour off a
// non-periodic edge. A periodic dimension of size 1 names the rank itself twice.
std::vector<int> cartesian_neighbours(std::span<const int> dims, std::span<const int> periods, int rank);

} // namespace loom
