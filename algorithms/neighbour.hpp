// The neighbourhood collectives over messages (NeighbourArgs, neighbourhood.hpp):
// MPI_Neighbor_allgather(v) and MPI_Neighbor_alltoall(v, w) on a Cartesian, graph or
// distributed-graph communicator. Block i of the send side goes to destination i (the
// allgathers: the one block to every destination), block j of the receive side comes from
// source j.
//
// Linear: every rank posts a receive for each of its sources, in recv_match_order (a Cartesian
// dimension's +1 source before its -1 source, so that the two messages of a periodic dimension
// of size 2, both from one rank, land in the right blocks), then a send to each of its
// destinations in list order, and waits for all of them - Open MPI's basic and libnbc
// components do the same with a tag per direction, loom with one tag per call and the matching
// order instead (neighbourhood.hpp, "Matching"). A neighbour that is the rank itself (a self
// edge of a graph, a periodic dimension of size 1) is a local copy, paired as MPI pairs its
// messages: the k-th time the rank names itself among its sources gets the block of the k-th
// time it names itself among its destinations; in a Cartesian neighbourhood receive block j gets
// send block j ^ 1 (what goes out at -1 comes back in at +1). MPI_PROC_NULL (kNoNeighbour) is
// skipped on both sides and its receive block is never written; an empty block is skipped too
// (MPI makes a pair's sizes equal, so both sides skip it alike).
//
// Example: a 1-D periodic ring of 2 ranks. Rank 0's neighbours are {1, 1} (-1, then +1). Rank 0
// posts receives from 1 into block 1 then block 0, and sends block 0 then block 1 to rank 1;
// rank 1 does the same. Rank 0's first send (block 0, meant for its -1 neighbour, which receives
// it from its +1 side) matches rank 1's first receive (its block 1, from +1): right.
//
// Cost: 1 round; a rank posts indegree receives and outdegree sends (less its self edges and
// PROC_NULL neighbours), sends the sum of its send blocks (the allgathers: outdegree x its
// block) and receives the sum of its receive blocks; no scratch, no arithmetic.
//
// Limits: any topology and degree, repeated edges and self edges included; block sizes as MPI
// requires (a pair's send and receive sizes equal; a mismatch is a size mismatch on the
// transport). Every message is posted at once: NeighbourArgs::max_requests is not read, since a
// window of rounds by list position would pair different messages on the two sides of an edge
// (a rank's i-th destination names it as some other j-th source) and could deadlock.
#pragma once

#include "collectives.hpp"

namespace loom {

void linear_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args);

} // namespace loom
