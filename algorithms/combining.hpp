// Message combining for neighbourhood collectives on stencils (Träff and Hunold, "Cartesian
// collective communication", ICPP 2019): MPI_Neighbor_allgather and MPI_Neighbor_alltoall on a
// graph or distributed-graph communicator that describes a stencil over a periodic grid - a
// Moore neighbourhood (faces, edges, corners: up to 3^d - 1 neighbours), a von Neumann one (the
// 2d faces), or any subset of {-1, 0, +1}^d \ {0} - take 2d messages per rank instead of one per
// neighbour.
//
// A stencil (Stencil, detect_stencil). The ranks 0..P-1 form a periodic grid of d = 2 or 3
// dimensions with the extents MPI_Dims_create(P, d) gives (balanced_dims), numbered in row-major
// order as MPI_Cart_create numbers them (the last dimension varies fastest). Every source and
// destination of a rank is rank + o on the torus for an offset o in {-1, 0, +1}^d \ {0}; the
// destinations' offsets are the sources' negated (as a set: the collective is symmetric), no
// neighbour is named twice, and each entry's offset is unambiguous (in a dimension of extent 1
// or 2, +1, -1 and 0 name fewer ranks than offsets: such an entry is refused, which in practice
// needs extents of at least 3 along every dimension a stencil moves in). detect_stencil checks
// one rank's lists; the ranks must agree that all of them hold the same stencil (the same d,
// extents and ordered offset lists): its fingerprint, compared across the communicator by the
// glue (coll_loom_neighbours.c), says so.
//
// One block size (Stencil::one_size). MPI matches a rank's send block with each destination's
// receive block. Where the sources' offsets are closed under negation (every neighbour is both a
// source and a destination) and reach every rank of the torus (the offsets generate the grid: a
// 3x3 Moore or von Neumann stencil does; the four corners of a 4x4 grid reach only half of it),
// every rank therefore holds the same pair {send block, receive block}: the larger of the two is
// a message size every rank knows alike (message_bytes, entry.cpp: rules may choose by it), and
// whether the two are equal, which combining needs, is the same on every rank. Elsewhere (an
// upwind stencil, a grid the offsets cut in pieces) neither is: a rank may send 4 bytes and
// receive 8 while its neighbour has equal blocks, so combining is not chosen there (the registry
// asks for CallShape::stencil, which entry.cpp's combinable sets only for one_size stencils).
//
// Schedule (combining_neighbour): d phases. A block that rank q sends to its destination at
// offset t travels dimension by dimension: in phase k it moves t[k] along dimension k (not at all
// if t[k] is 0), so that after phase d - 1 it is at q + t. In phase k every rank sends to its +1
// neighbour along k, in one message, every block it holds (its own, and those received in phases
// 0..k-1) whose offset has t[k] = +1, and to its -1 neighbour those with t[k] = -1; it receives
// the same lists from the other side, in the same order (every rank has the same offset lists).
// The allgathers' blocks that share an origin and a direction are sent once: at phase k what a
// rank holds depends only on t[0..k-1], so a phase sends one block per distinct such prefix. The
// received blocks are kept in scratch; at the end every receive block j is copied from the slot
// of the destination offset -sources[j].
//
// Example: a 3x3 torus, full Moore stencil (8 neighbours), alltoall. Phase 0 (dimension 0): each
// rank sends its 3 blocks with t[0] = +1 ((+1,-1), (+1,0), (+1,+1)) to the rank below it and its
// 3 with t[0] = -1 to the rank above, and receives 3 + 3 (the two with t = (+-1,0) have arrived).
// Phase 1 (dimension 1): of the blocks it now holds, those whose t[1] is nonzero - its own (0,+1)
// and (0,-1), and the four received with t = (+-1,+-1) - go 3 to the right and 3 to the left. 4 messages instead of 8; 12 blocks
// sent instead of 8. The allgather: phase 0 sends its own block once each way, phase 1 three
// (its own and the two received) each way: 8 blocks, as linear.
//
// Cost: at most 2d messages sent and 2d received per rank (one per direction per phase that has
// offsets that way), against 3^d - 1 (8 in 2-D, 26 in 3-D) for linear on a full Moore stencil;
// d rounds, each waited for. Bytes sent, block size b: alltoall, sum over phases k of the number
// of offsets with t[k] != 0 (Moore: 2 * 3^(d-1) per phase: 12b in 2-D, 54b in 3-D, against 8b
// and 26b for linear); allgather, the number of distinct (t[0..k-1], t[k] != 0) per phase: the
// number of neighbours (the bytes of linear) where every offset's prefixes t[0..k], the rest 0,
// are offsets too (Moore, von Neumann, upwind), more where they are not (the 4 corners of a 2-D
// stencil: 6 blocks, its own block twice on its way). Copies: a phase's blocks packed into one send buffer where there are more than
// one, and every receive block copied out of scratch once at the end. Scratch: every block
// received (alltoall: up to d * 2 * 3^(d-1) blocks), plus one pack buffer.
//
// Limits: neighbor_allgather and neighbor_alltoall only, one block size for every neighbour (the
// v and w variants, whose blocks may differ per neighbour, are not served: a combined message
// would need every rank's sizes); graph and dist_graph communicators that are a stencil on every
// rank (a Cartesian communicator's 2d face neighbours are already one round with linear); blocks
// of 0 bytes send nothing.
#pragma once

#include "collectives.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace loom {

inline constexpr int kMaxStencilDims = 3;

// A stencil's relative offset: one of -1, 0, +1 per dimension (unused dimensions 0).
using StencilOffset = std::array<int, kMaxStencilDims>;

// One rank's stencil (see the header): the grid and, per list entry, its offset.
struct Stencil {
    int ndims = 0;
    std::array<int, kMaxStencilDims> extents{}; // per dimension, descending; unused dimensions 1
    std::vector<StencilOffset> sources;         // sources[j]: the offset of source j
    std::vector<StencilOffset> destinations;    // destinations[i]: the offset of destination i
    std::uint64_t fingerprint = 0;              // of ndims, extents and both ordered lists; never 0
    // The sources' offsets are closed under negation and reach every rank: every rank has the
    // same pair of block sizes (see the header). Follows from what the fingerprint covers.
    bool one_size = false;

    // The rank at `offset` from `rank` on the torus.
    int neighbour(int rank, const StencilOffset& offset) const;
};

// MPI_Dims_create(ranks, ndims) with every extent free, as Open MPI computes it (4.1 and 5.0:
// ompi/mpi/c/dims_create.c): ranks' prime factors, largest first, each multiplied into the
// extent that is smallest so far (the first of equals), then sorted in descending order. A
// balanced factorisation, though not always the most balanced one (72 in 2-D: 12x6, not 9x8);
// collectives_check (check_neighbours.cpp) compares it with MPI_Dims_create up to 1000 ranks.
std::vector<int> balanced_dims(int ranks, int ndims);

// The stencil `rank`'s lists describe (see the header), trying grids of 2 then 3 dimensions;
// nullopt if none fits (an empty list, MPI_PROC_NULL, a repeated neighbour, a neighbour no offset
// reaches or more than one does, destinations not the sources' offsets negated).
std::optional<Stencil> detect_stencil(int comm_size, int rank, std::span<const int> sources,
                                      std::span<const int> destinations);

// Träff-Hunold combining (see the header); args.neighbours.stencil must be the stencil every
// rank agreed on (else it throws std::invalid_argument), and every block the same size.
void combining_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args);

} // namespace loom
