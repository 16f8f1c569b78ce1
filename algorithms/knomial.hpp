// K-nomial trees: a binomial tree's generalization to radix k (Open MPI tuned's, UCC's and
// MPICH's knomial). A node of the tree has up to k-1 children per level, so the tree is
// ceil(log_k P) levels deep: fewer steps than binomial (k = 2) at the price of k-1 messages a
// level from each inner node, which a network with many links or a fast injection rate sends
// at once. The radix is the algorithm's option (a rule's radix=, coll_loom_knomial_radix;
// 2..16, 4 when unset).
//
// Terms: P ranks, S bytes, k the radix, L = ceil(log_k P).
//
// Bcast. Virtual rank v = (r - root) mod P. With m the smallest power of k at which v is not
// a multiple of k m, v's parent is v - (v mod k m) and its children are v + j m' for every
// power m' of k below m and j = 1..k-1 (v + j m' < P), farthest first; the root's go up to
// the largest power of k below P.
// Worked example, P = 9, k = 3, root 0:  level 1: 0 -> 3, 6;  level 2: 0 -> 1, 2; 3 -> 4, 5;
// 6 -> 7, 8.
// Cost: L steps; an inner rank sends up to (k-1) S a level, the root up to (k-1) L S; every
// other rank receives S once.
//
// Reduce, order-preserving. As binomial_reduce's tree, over real ranks, with the range split
// into k parts (as even as possible) instead of two: the part holding the owner keeps it, each
// other part gets as owner its rank next to the owner's part, and the parts recurse. Bottom
// up, an owner receives the other parts' partial results at once and combines them in rank
// order (lower parts on the left), so every partial result covers a contiguous range of ranks
// and non-commutative ops are served. Cost: L steps; an owner receives and reduces up to
// (k-1) S a level, the root up to (k-1) L S; every other rank sends S once. Memory: up to k S
// of scratch at an inner rank (the received parts and its own, a copy of its input), (k-1) S
// at the root (its recvbuf holds its own part), none at a leaf. A commutative op folds every
// part into the owner's own, so the root's result needs no copy out; a non-commutative one
// leaves "mine op theirs" in theirs, and the root may copy S out at the end.
//
// Barrier: an empty fan-in to rank 0 over the bcast tree (reversed), then an empty fan-out:
// 2 L steps, no data.
//
// Allreduce: recursive k-ing ("recursive multiplying", the radix-k recursive exchange of UCC's
// and MPICH's k-nomial allreduce for small vectors). With Q = k^m the largest power of k <= P
// (k taken as min(k, P)), ranks Q.. first send their vectors to rank r mod Q, which reduces them
// in; then m steps, step i in groups of k ranks that differ only in base-k digit i: every rank
// sends its whole vector to the group's k-1 others and reduces the k vectors in group order, so
// every rank of the group gets the same bits; finally the ranks past Q get the result back.
// Worked example, P = 9, k = 3: step 1 {0,1,2} {3,4,5} {6,7,8}; step 2 {0,3,6} {1,4,7} {2,5,8}.
// Cost: m = floor(log_k P) steps (+2 off powers of k), each (k-1) S sent, received and reduced;
// (k-1) S of scratch. Latency-optimal for small vectors (fewer steps than recursive doubling for
// k > 2); the bytes grow with k. Commutative ops only (the fold of the ranks past Q, and the
// groups' orders, reorder operands).
//
// Limits: any P >= 1 and root; S = 0 is a no-op; reduce never writes the sendbuf, nor the
// recvbuf of a rank other than the root. A tree for latency: its reduce holds k-1 vectors in
// flight at an owner, so large vectors belong to binomial or reduce-scatter schedules (here, a
// 1 MiB reduce at np 4, oversubscribed: knomial radix 4 1720 us, binomial 201; at np 2 118
// against 97; tools/lab/RESULTS.md).
#pragma once

#include "collectives.hpp"

namespace loom {

// The radix an algorithm runs with: `radix`, or the default for 0, within 2..kMaxRadix.
int knomial_radix(std::size_t radix);

// Virtual rank v's place in the k-nomial tree of P ranks rooted at 0 (the bcast tree above):
// its parent (-1 at the root), the size of its subtree (the virtual ranks [v, v + extent)), and
// its children, farthest first, each with its subtree's size. At most (k-1) ceil(log_k P) <=
// 15 x 31 children. knomial_gather and the barrier use it too.
struct KnomialTree {
    struct Child {
        int vrank, extent;
    };
    int parent = -1;
    int extent = 1;
    FixedList<Child, 480> children;
};
KnomialTree knomial_tree(int P, int v, int k);

void knomial_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
void knomial_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);
void knomial_barrier(Transport& net, MemoryOps& mem, const BarrierArgs& args);
void knomial_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);

} // namespace loom
