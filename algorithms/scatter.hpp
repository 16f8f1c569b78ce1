// MPI_Scatter (and v): block i of the root's sendbuf, bytes[i] bytes at bytes[0] + ... +
// bytes[i-1], lands in rank i's recvbuf (ScatterArgs; in place the root's block stays in its
// sendbuf). Gather (gather.hpp) run backwards.
//
// Terms: P ranks, S = sum(bytes) the scattered vector, L = ceil(log_k P).
//
// Linear: the root posts P-1 sends straight from sendbuf (an empty block sends nothing) and
// every other rank one receive straight into its recvbuf. Cost: one step; the root sends S -
// its block in up to P-1 messages, each other rank receives its block; no scratch, no copy but
// the root's own block. The only one for MPI_Scatterv: away from the root it reads bytes[rank]
// alone.
//
// K-nomial (binomial: k = 2): the k-nomial tree of knomial_bcast (virtual rank v = (r - root)
// mod P), top-down: a node's subtree is the contiguous range of virtual ranks [v, v + m), so its
// parent sends it the blocks of that range in one message; an inner rank receives them into
// scratch (its own block first, in virtual order), sends each child its sub-range from there and
// copies its own block out; a leaf receives its block straight into recvbuf. Virtual order is
// real order turned by root: the root's children's ranges partition virtual [1, P), and only the
// one that holds real rank 0 inside it wraps (real [.., P) then [0, ..)). The root sends that
// child its two pieces as two messages straight from sendbuf rather than packing S into scratch
// once: no copy at the root, and at most one message more; the child receives them end to end.
// Worked example, P = 6, k = 2, root 3 (virtual 0..5 = real 3, 4, 5, 0, 1, 2): 3 -> 1 (b1..b2),
// 3 -> 5 (b5, then b0: the wrapping range), 3 -> 4 (b4); then 1 -> 2 (b2), 5 -> 0 (b0).
// Cost: L steps; the root sends S - its block in at most (k-1) L + 1 messages, an inner rank
// receives its subtree's bytes once (that much scratch) and forwards all but its own block, so a
// block crosses as many links as its owner is deep (binomial, P a power of two: S lg P / 2 in
// all, against S - its block for linear). Fewer messages at the root than linear; for many small
// blocks.
//
// Limits: any P >= 1 and root; blocks may be empty; the root's sendbuf is never written. The
// trees need every bytes[i] on every rank (a rank forwards others' blocks): not for scatterv.
#pragma once

#include "collectives.hpp"

namespace loom {

void linear_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);
void binomial_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);
void knomial_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);

} // namespace loom
