// BCube allreduce (gloo's allreduce_bcube; Guo et al., BCube, SIGCOMM 2009): the ranks are the
// points of a grid with one coordinate (digit) per dimension, and a reduce-scatter runs one
// dimension a step, an allgather back. Rabenseifner's halving and doubling (halving_doubling)
// is the grid of base 2; a base B of up to 16 cuts the steps by lg B at B-1 messages a step.
// The base is the radix option (a rule's radix=, coll_loom_knomial_radix; 2..16, 4 when unset),
// taken as min(B, P).
//
// Terms: P ranks, S bytes (count elements), B the base; the grid has Q ranks and d digits
// b_0 .. b_{d-1}, each at most B, Q = b_0 b_1 ... b_{d-1}; digit i of rank r is
// (r / m_i) mod b_i with m_i = b_0 ... b_{i-1}.
//
// The grid. If every prime factor of P is at most B, Q = P and the digits are P's factors
// taken greedily, the largest divisor up to B first (P = B^d: d digits of B; P = 6, B = 4:
// 3 and 2). Otherwise (a prime factor above B: P = 7 with B = 4, P = 6 with B = 2) Q = c B^m,
// B^m the largest power of B <= P and c = floor(P / B^m) < B (digits: m of B, then c if c > 1),
// and the P - Q < B^m <= Q ranks past Q fold in first: rank Q + i sends its vector to rank i,
// which reduces it into its own, and gets the result from it at the end. No rank takes more
// than one (knomial_allreduce's fold of the ranks past a power of k gives a rank up to k-1).
//
// Reduce-scatter: d steps; in step i each rank's group is the b_i ranks that differ from it
// only in digit i, all holding the same slice of the vector. The slice is split in b_i parts
// (BlockPartition), part j belonging to the group's rank of digit j: each rank sends the
// group's other ranks their parts, receives its own part from each of them, and reduces them
// into its own, which becomes its slice. After d steps each rank holds a slice of about S/Q,
// fully reduced. Allgather: the same groups in reverse order, each rank sending its slice to
// the group's others and receiving theirs into place, until every rank holds the whole vector.
// Every element is reduced once, by the rank whose final slice holds it, and copied from there:
// every rank gets the same bits.
// Worked example, P = 9, B = 3: step 1 (digit 0) {0,1,2} {3,4,5} {6,7,8}, each rank keeping the
// third of S at its digit 0; step 2 (digit 1) {0,3,6} {1,4,7} {2,5,8}, a ninth of S each; then
// the allgather, digit 1's groups first. P = 11, B = 4: Q = 8 (digits 4 and 2), ranks 8, 9 and
// 10 fold into 0, 1 and 2.
//
// Cost: 2d steps; step i sends and receives b_i - 1 messages each way: in the reduce-scatter a
// rank sends (b_i - 1)/b_i of its slice, in all S - S/Q = (Q-1)/Q S sent, received and reduced,
// and as much again in the allgather: 2(Q-1)/Q S sent per rank, the minimum, as ring's and
// halving_doubling's. P = B^d: 2 log_B P steps of B-1 messages each way. Off the grid (a prime
// factor of P above B) 2 steps more: the P - Q extra ranks send and receive S, their partners
// receive and reduce S and send it back. Memory: scratch for the parts one step receives, the
// most at the first, about (b_0 - 1)/b_0 S; a partner's S.
//
// Limits: commutative ops only (a group reduces its parts in digit order, the fold reorders
// too); any P >= 1 and count (parts may be empty: no message for them); S = 0 is a no-op.
#pragma once

#include "collectives.hpp"

namespace loom {

void bcube_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);

} // namespace loom
