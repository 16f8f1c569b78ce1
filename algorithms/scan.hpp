// MPI_Scan and MPI_Exscan: prefix reductions. Rank r gets x_0 op x_1 op ... op x_r (scan, the
// inclusive prefix) or x_0 op ... op x_{r-1} (exscan, the exclusive prefix; rank 0 gets
// nothing and its recvbuf is left as it was - MPI leaves it undefined), in rank order, so every
// algorithm here keeps the order of the operands (non-commutative ops too). Both take ScanArgs;
// in place (sendbuf nullptr) recvbuf holds this rank's input.
#pragma once

#include "collectives.hpp"

namespace loom {

// Linear: rank r waits for the prefix of ranks 0..r-1 from rank r-1, combines its own vector
// after it and passes the new prefix to rank r+1 - pipelined in segments of segment_bytes
// (coll_loom_segment_size or a rule's segment=, 256 KiB by default; whole elements): rank r
// passes segment i on while segment i+1 arrives.
//
//   P = 4, x_r the vectors:   step 1: 0 -> 1 (x0)         rank 1: x0 op x1
//                             step 2: 1 -> 2 (x0..x1)     rank 2: x0 op x1 op x2
//                             step 3: 2 -> 3 (x0..x2)     rank 3: x0 op ... op x3
//
// Cost: P-1 + m-1 steps of a segment (m = S / segment), S sent and S reduced per rank (rank P-1
// sends nothing, rank 0 reduces nothing). Latency grows with P; its strengths are one message
// per segment and rank, and exact operand order.
void linear_scan(Transport& net, MemoryOps& mem, const ScanArgs& args);
// The same chain for exscan: rank r keeps what it receives and passes on (received op x_r).
void linear_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args);

// Recursive doubling (as in MPICH): at step k every rank exchanges its partial - the reduction
// of its aligned block of 2^k ranks - with rank r XOR 2^k, folds a lower partner's partial into
// its result (on the left) and either partial into its own, in rank order. Any P: a partner
// past P - 1 is skipped.
//
//   P = 4, rank 3:  step 1 with 2: partial x2..x3, result x2 op x3
//                   step 2 with 1: partial x0..x3, result x0 op x1 op x2 op x3
//
// Cost: ceil(lg P) steps; S sent and received per step, up to 2 S reduced per step (S lg P
// each in all); two S scratch buffers. Fewer steps than linear, more bytes: small vectors.
void recursive_doubling_scan(Transport& net, MemoryOps& mem, const ScanArgs& args);
// The same exchanges for exscan: the result starts empty and takes the first lower partial.
void recursive_doubling_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args);

} // namespace loom
