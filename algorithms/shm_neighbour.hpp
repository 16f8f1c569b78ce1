// The neighbourhood collectives on shared memory (`shm` for MPI_Neighbor_allgather(v) and
// MPI_Neighbor_alltoall(v, w)): every rank of the communicator on one node, through the
// communicator's segment (shm.hpp), in its turn (ShmTurns), no messages.
//
// What each rank knows. A rank knows its own neighbour lists only (a dist_graph rank cannot
// compute another's), so a reader cannot tell where its block lies among a writer's data unless
// the writer says. Each rank lays out what it sends as one stream:
//   alltoall(v, w)  its blocks for the other ranks, grouped by destination rank, each group in
//                   the order of the destination list (repeated edges in list order);
//   allgather(v)    its one block, once, whatever the number of destinations.
// Edges to kNoNeighbour carry nothing; edges to the rank itself never enter the stream: they
// are copied from the send buffer to the receive buffer directly.
// The writer publishes, beside the stream, a table with one entry per rank: where that rank's
// group starts in the stream (only its destinations' entries are written). A reader walks its
// sources in recv_match_order() (neighbourhood.hpp) and takes the k-th block from q as the k-th
// block q sends it: so repeated edges pair in list order, and a Cartesian dimension whose two
// neighbours are one rank (a periodic dimension of size 2, or 1) pairs +1 with -1, as MPI
// does. The reader reads q's table entry for itself once, and its blocks from q follow each
// other there, each as long as its own receive count (MPI requires the counts to match).
// The allgathers need no table: every block of q is q's one block, at the stream's start.
//
// Chunks. A call is chunk 0 in the next small region (4 KiB slots), then as many more chunks as
// the longest stream of any rank needs:
//   chunk 0   a rank writes its table (8 P bytes, alltoall forms only) and the first F bytes
//             of its stream in its slot of the next small region, F = small slot - table, and
//             how many stream bytes are left over in its 16-byte inline slot of the region,
//             whose sequence word it then stores (publish_inline). Every rank waits for every
//             other's inline line (one line each: the count of chunks must be the same on every
//             rank, so that every rank takes the same regions and publishes as often) and reads
//             its blocks' first bytes. Past 504 ranks (alltoall forms: the table and 32 bytes
//             no longer fit a small slot) chunk 0 takes a large region, the left-over in the
//             slot's first line, and every rank waits for every counter before reading them.
//   chunk c   (c = 1 .. N, N = ceil(R / C), R the largest left-over, C = 4 KiB if R fits a
//             small slot, else 32 KiB through the four large regions in turn): a rank writes
//             stream bytes [F + (c-1) C, F + c C) in its slot and publishes; a reader waits only
//             for the sources whose blocks have bytes in this chunk, and copies them out.
// A region is written again only once every rank has finished the chunk that used it last
// (ShmComm::begin_chunk: every rank publishes at least once per chunk, the next chunk's or
// call's publish freeing the region), so no rank overwrites what a peer still reads, call
// after call. Blocks larger than the segment's room simply take more chunks: a chunk's
// copy-in overlaps the copy-out of the previous ones as in the other shm collectives.
//
// Costs on P ranks; T_r the bytes rank r sends to other ranks (the allgathers: its block once,
// whatever its out-degree), M = max T_r, F = 4 KiB - 8 P rounded up to 64 (allgathers: 4 KiB):
//   chunks      1 + ceil((M - F)+ / C);
//   bytes       each rank copies T_r into its slot and each received block out of its source's
//               slot: every byte between ranks is copied twice (by a memcpy each, no system
//               call); self edges once, send buffer to receive buffer;
//   syncs       one publish per chunk; chunk 0 waits for every rank (P - 1 lines read, each
//               also telling that rank's left-over), later chunks only for the sources that
//               have data in them; no messages (the PML's per-neighbour handshakes, matching
//               and rendezvous are gone).
//   Against messages (linear): a neighbour's block of b bytes costs two copies instead of a
//   PML send (eager: two copies too, plus matching; above the eager limit a rendezvous or a
//   single copy); what the segment saves is per-message overhead, at small and mid sizes.
// Single copy (CMA, reading straight from the writer's send buffer) is not used: it would save
// a copy of large blocks, but needs the probe's verdict and a final wait for the readers, and
// loom keeps it to the single-copy family's own algorithms (single_copy.hpp), which the rules
// choose by size and which non-blocking calls never use. Large blocks here go through the
// segment in chunks.
// Limits: every rank on one node, the segment set up (registry needs: kOneNode); the alltoall
// forms at most 4088 ranks (their table must fit chunk 0's slot; beyond, every rank throws
// ShmUnavailable alike). Counts are trusted to match pairwise, as MPI
// requires: a reader reads its receive count from where its block starts in the stream (a
// wrong count gets wrong bytes, never a read outside the segment). MPI has no in-place form.
#pragma once

#include "neighbourhood.hpp"
#include "shm.hpp"

namespace loom {

// On the communicator's segment, in the call's turn; ShmUnavailable on every rank alike where
// the communicator has no segment (no other algorithm runs under shm's name, as for every shm
// collective) or, in the alltoall forms, more than 4088 ranks.
void shm_neighbour(Transport& net, MemoryOps& mem, const NeighbourArgs& args);
// On a segment the caller holds the turn of.
void shm_neighbour(ShmComm& shm, MemoryOps& mem, const NeighbourArgs& args);

} // namespace loom
