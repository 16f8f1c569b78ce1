// MPI_Scan: the inclusive prefix reduction. Rank r gets x_0 op x_1 op ... op x_r, in rank
// order, so every algorithm here keeps the order of the operands (non-commutative ops too).
#pragma once

#include "collectives.hpp"

namespace loom {

// Linear: rank r waits for the prefix of ranks 0..r-1 from rank r-1, combines its own vector
// after it and passes the new prefix to rank r+1.
//
//   P = 4, x_r the vectors:   step 1: 0 -> 1 (x0)         rank 1: x0 op x1
//                             step 2: 1 -> 2 (x0..x1)     rank 2: x0 op x1 op x2
//                             step 3: 2 -> 3 (x0..x2)     rank 3: x0 op ... op x3
//
// Cost: P-1 steps one after the other, S bytes sent and S reduced per rank (rank P-1 sends
// nothing, rank 0 reduces nothing). Latency grows with P; its strength is one message per rank
// and exact operand order. In place (sendbuf nullptr): recvbuf holds this rank's input.
void linear_scan(Transport& net, MemoryOps& mem, const ScanArgs& args);

} // namespace loom
