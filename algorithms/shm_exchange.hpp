// The shared-memory family's gather(v), scatter(v) and alltoallv (and w): the data-movement
// collectives whose counts may differ from rank to rank, on the communicator's segment
// (ShmComm, shm.hpp), for small messages on one node.
//
// What each rank knows decides the schedule. Every rank of an shm call must publish the same
// number of times and take the same regions in turn (the segment's phases are counted alike on
// every rank), so the number of chunks of a call must be one that every rank can work out:
//   gather(v), scatter(v): away from the root a rank knows only its own count (MPI_Gatherv,
//     MPI_Scatterv), not how many chunks the others' blocks need. So a call takes exactly one
//     small region (a 4 KiB slot per rank) and one publish per rank: a block that fits a small
//     slot goes through it, a larger one by one message between the root and its rank, over the
//     transport (as a linear gather or scatter sends it), posted before the shared-memory part.
//     Both ends decide it from the block's size, which both know, so they agree pair by pair.
//   alltoallv: each rank knows its own counts both ways (MPI requires send_bytes[j] on rank i
//     == recv_bytes[i] on rank j), so both ends of every pair know that pair's block. A call takes
//     exactly one large region (a 32 KiB slot per rank, a piece of 32 KiB / P for each peer): a
//     block that fits its piece (and is under 16 KiB) goes through the segment, a larger one by
//     one message.
//
// gather(v) to root t, blocks b_q (S = sum of b_q), one small region per call:
//   a non-root copies its block in (into its inline slot, beside a sequence word, if it holds at
//   most 56 bytes: the root finds flag and data in one line) and publishes; it never waits for
//   the root, so back-to-back gathers run up to 16 calls ahead of it (the small regions), as
//   eager messages let a linear gather's senders do. The root waits for each rank in turn from
//   t + 1 and copies its block out. Cost: each block copied twice (in, out; S - b_t at the
//   root), one publish per rank, the root reads one or two lines per small block. A block over
//   the small slot: one message from its rank to the root.
// scatter(v) from root t: the root copies rank q's block into q's slot of the region and
//   publishes once; each rank waits for the root's publish, copies its block out and publishes
//   (it is done with the region). The root never waits in the call (a region comes round 16
//   calls later). Cost: S - b_t copied in at the root, each rank copies its own block out.
//   A block over the small slot: one message from the root to its rank.
// alltoallv: a rank's slot of the call's large region holds, at j x 32 KiB / P (in whole 64-byte
//   lines), its block for rank j if it fits; each copies those in and publishes, then waits only
//   for the ranks that send it a block through the segment and copies each out. Larger blocks:
//   their sends and receives are posted first (from the next rank on, as a linear alltoallv
//   does) and completed last; in place, their input is first copied aside (the receives write
//   the same places). Cost: each small block copied twice, one publish per rank; a large block
//   one message (the PML's single copy for large messages). 2 ranks: blocks below 16 KiB
//   through the segment (a 16 KiB one was slower there than by message), 3 ranks up to 10880
//   bytes, 4 ranks 8 KiB, 64 ranks 512 bytes.
// Limits: every rank on one node, the segment set up (registry needs `same_node`, `segment`).
//   Large blocks go by message: there shm serves at the speed of a linear algorithm over the
//   PML, and the rules choose shm where it was measured faster (selection_rules/,
//   tools/lab/RESULTS.md).
#pragma once

#include "collectives.hpp"

namespace loom {

class ShmComm;

// On a ShmComm whose segment every rank of `net` shares (net carries the large blocks' messages).
void shm_gather(ShmComm& shm, Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void shm_scatter(ShmComm& shm, Transport& net, MemoryOps& mem, const ScatterArgs& args);
void shm_alltoallv(ShmComm& shm, Transport& net, MemoryOps& mem, const AlltoallvArgs& args);

// The registry's entries (gather and gatherv; scatter and scatterv; alltoallv and alltoallw): on
// the communicator's segment in the call's turn (SegmentTurn, shm.hpp), or ShmUnavailable on
// every rank alike where it has none.
void shm_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void shm_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);
void shm_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args);

} // namespace loom
