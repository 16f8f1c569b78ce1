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
//     == recv_bytes[i] on rank j), and every rank waits for every other in each chunk anyway.
//     So the first chunk carries, in the first line of each rank's slot, the largest block that
//     rank sends; after its sync every rank has read every header and knows the largest block
//     of the call, hence the number of chunks, and all take the same ones: the whole call in
//     shared memory, however large.
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
// alltoallv: chunk 1 in a small region, later ones (if any block is larger than its piece of
//   chunk 1) in the small or large regions (shm.hpp's chunk_bytes for P times the largest block
//   left). A rank's slot holds a 64-byte header (chunk 1), then one piece of each of its
//   outgoing blocks, the piece for rank j at j times (slot - header) / P (in whole 64-byte lines
//   where pieces are that large); each copies its pieces in, syncs with all, copies the pieces
//   meant for it out of every other slot. Cost: every byte sent copied twice, one sync per
//   chunk; a rank's own block copied once (not in place). 2 ranks: 2 KiB of a block per small
//   chunk, 16 KiB per large one; 64 ranks: 63 and 512 bytes.
// alltoallv in place: the input is the output; a chunk copies its pieces out only after every
//   rank copied the same range of every block in (the sync), as shm_alltoall does.
// Limits: every rank on one node, the segment set up (registry needs `same_node`, `segment`);
//   alltoallv at most 4032 ranks (a byte of every block in a small slot after the header),
//   checked alike on every rank. gather(v) and scatter(v) send their large blocks by message:
//   shm serves them at the speed of a linear algorithm, and the rules choose shm only where
//   blocks are small (measured: selection_rules/, tools/lab/RESULTS.md).
#pragma once

#include "collectives.hpp"

namespace loom {

class ShmComm;

// On a ShmComm whose segment every rank of `net` shares (net carries the large blocks' messages).
void shm_gather(ShmComm& shm, Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void shm_scatter(ShmComm& shm, Transport& net, MemoryOps& mem, const ScatterArgs& args);
void shm_alltoallv(ShmComm& shm, MemoryOps& mem, const AlltoallvArgs& args);

// The registry's entries (gather and gatherv; scatter and scatterv; alltoallv and alltoallw): on
// the communicator's segment in the call's turn (SegmentTurn, shm.hpp), or ShmUnavailable on
// every rank alike where it has none.
void shm_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void shm_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);
void shm_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args);

} // namespace loom
