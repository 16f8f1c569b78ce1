// The shared-memory family's scan and exscan (ShmComm, shm.hpp): prefix reductions among the
// ranks of one node, for small vectors.
//
// Per chunk (shm.hpp's chunk_bytes of the vector: one small region up to 4 KiB, else 32 KiB
// chunks through the large regions): every rank copies its chunk into its slot (into its inline
// slot, beside a sequence word, up to 56 bytes) and publishes; rank r then waits for ranks
// 0 .. r-1 alone and folds their slots and its own input into its output, right to left:
//   scan:   out = x_0 op (x_1 op (... op (x_{r-1} op x_r)))
//   exscan: out = x_0 op (... op x_{r-1}) (rank 0's output untouched, as MPI and Open MPI leave it)
// which is MPI's rank order for any associative op, commutative or not (every operand keeps its
// place). Rank 0 never waits (nor does rank 1 of an exscan, beyond rank 0), so back-to-back
// small scans run ahead up to 16 calls on the lower ranks, as a linear scan's eager messages let
// them; rank P-1's input is read by nobody, so it publishes without copying in.
//
//   P = 4, one chunk:  every rank copies x_r in, publishes
//                      rank 0: out = x0 (scan), nothing (exscan)
//                      rank 3: waits for 0, 1, 2; out = x0 op (x1 op (x2 op x3))
//
// Cost per chunk of m bytes: one publish per rank; rank r copies m in and reduces r m (scan;
// (r-1) m exscan): the last rank reduces (P-1) m, so the latency of a call is one wait and
// (P-1) reductions of a chunk - against P-1 hops for a linear scan and lg P exchanges of S for
// recursive doubling. For small vectors the wait is what counts; for large ones the last rank's
// (P-1) S of reductions is more than recursive doubling's 2 S lg P at P > 2 lg P... and the rules
// choose shm only where measured faster.
// Limits: every rank on one node, the segment set up, one element in a 32 KiB slot (registry
// needs `same_node`, `segment`, `element_in_slot`).
#pragma once

#include "collectives.hpp"

namespace loom {

class ShmComm;

void shm_scan(ShmComm& shm, MemoryOps& mem, const ScanArgs& args);
void shm_exscan(ShmComm& shm, MemoryOps& mem, const ScanArgs& args);

// The registry's entries: in the call's turn on the communicator's segment (SegmentTurn, shm.hpp),
// or ShmUnavailable on every rank alike.
void shm_scan(Transport& net, MemoryOps& mem, const ScanArgs& args);
void shm_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args);

} // namespace loom
