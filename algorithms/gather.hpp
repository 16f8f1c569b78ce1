// MPI_Gather: rank i's block of bytes[i] bytes lands at its place in the root's recvbuf, in rank
// order (AllgatherArgs with root >= 0; in place the root's block is already there).
//
// Terms: P ranks, S = sum(bytes) the gathered vector, L = ceil(log_k P).
//
// Linear: every rank sends its block to the root, which receives all P-1 at once, straight into
// recvbuf. Cost: one step; the root receives S - its block, P-1 messages in flight (the network
// and the root's receive path take them in the order they come).
//
// K-nomial (binomial: k = 2): the k-nomial tree of knomial_bcast (virtual rank v = (r - root)
// mod P), reversed: a node's subtree is the contiguous range of virtual ranks [v, v + m) (m its
// level), so it gathers its children's ranges into one buffer, its own block first, and sends the
// whole range to its parent. The root's virtual order is real order turned by root: rank 0 as
// root receives straight into recvbuf, another root through one buffer and two copies out.
// Worked example, P = 6, k = 2, root 0: 1 -> 0 (b1), 3 -> 2 (b3), 5 -> 4 (b5); 2 -> 0 (b2..b3),
// 4 -> 0 (b4..b5).
// Cost: L steps; a rank sends its subtree's bytes once (the root's children (P-1)/P S in all
// from k-1 of them per level); an inner rank holds its subtree's bytes in scratch. Fewer
// messages at the root than linear (at most (k-1) L), at the price of copies through the tree.
//
// Limits: any P >= 1 and root; blocks may be empty; a non-root's recvbuf is never written.
#pragma once

#include "collectives.hpp"

namespace loom {

void linear_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void binomial_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void knomial_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);

} // namespace loom
