// The single-copy family ("cma"): collectives among the ranks of one node in which each rank
// reads the others' buffers directly with Linux Cross Memory Attach (process_vm_readv), so a
// byte crosses memory once instead of twice (into a shared segment, then out of it). Where
// every rank can map the others' memory (XPMEM, peer_map.hpp; ShmComm::peer_map()), the same
// schedules read through the mappings instead: a copy is a memcpy from the view, and a
// reduction reduces each term straight from its owner's buffer (no bounce buffer, no system
// call per piece).
//
// The communicator's shm segment (shm.hpp) carries the control: each rank's mailbox holds its
// process id and, per call, the addresses of its buffers; the segment's phase counters order
// the steps. Whether every rank may read every other rank's memory is probed once, when the
// segment is set up (ShmComm::probe_single_copy): ptrace rules (kernel.yama.ptrace_scope 2 or
// 3, containers without CAP_SYS_PTRACE across users) can refuse, and then the registry's need
// `single_copy` keeps these algorithms from being chosen; forced, the call is handed on.
//
// Costs on P ranks, S the message size, c a copy per byte (one syscall per peer and piece):
//   allreduce:   each rank reduces its 1/P slice reading it from the P-1 others in pieces of
//                64 KiB (through a cache-resident bounce buffer; mapped: from their buffers,
//                the first term copied into the output), then reads the P-1 other
//                slices of the result: 3 syncs; (P-1)/P S read + (P-1)/P S reduced + (P-1)/P S
//                read per rank, against shm's S in, (P-1)/P S reduced, S out. Any op: the
//                slices are reduced in rank order (MPI's order for non-commutative ops).
//                Two ranks, out of place, up to 256 KiB: each rank reduces all of S from
//                both inputs (S read and reduced, 2 syncs, no reading of the other's result).
//   reduce:      the same slices, then the root reads the others' (from their scratch): 2
//                syncs; (P-1)/P S read and reduced per rank, (P-1)/P S more read at the root.
//   reduce_scatter(_block): each rank reduces its own block from the others: 2 syncs.
//   allgather(v): each reads the P-1 other blocks: 2 syncs; (P-1)/P S read per rank.
//   bcast:       the others read S from the root: 2 syncs (the root waits for all readers).
//   gather(v):   the root reads each other rank's block (at the address in its mailbox) straight
//                into its recvbuf, one rank after another from root + 1: one publish per rank
//                (a non-root's says its address is there, the root's that it has read them
//                all); S - its block read by the root. A non-root waits for the root (its
//                block must stay readable) unless its block is empty; the root waits for
//                nobody whose block is empty.
//   scatter(v):  each other rank reads its block from the root's sendbuf, at the offset the
//                root wrote into that rank's slot of the next small region (shm.hpp): one
//                publish per rank (the root's says sendbuf and the offsets are there; the
//                root then waits for every rank's); S - its block read, by P-1 ranks at once.
//   alltoall:    each reads its block from each other rank: 2 syncs; (P-1) S read per rank.
//   alltoallv:   as alltoall, each pair's block of its own size. A reader cannot know where its
//                block starts in a peer's input (the sum of the peer's send_bytes before it), so
//                each rank publishes, beside its input's address, the address of a table of its
//                P blocks' offsets (on its stack, alive until the final sync), and a reader first
//                reads its 8-byte entry from the peer, then the block: 2 syncs; each byte
//                received read once, in 2 reads per peer with a non-empty block (the extra one a
//                system call of 8 bytes, a fraction of a microsecond; mapped, a load through the
//                view). Empty blocks cost nothing. A table in the segment would save that call,
//                but take a region's turn (begin_chunk) and bound P by a slot.
//   alltoall(v) in place: the input is copied to scratch first (all of it, one local copy),
//                as the output overwrites it while the others read it.
// Limits: every rank on one node, the segment set up, host memory (not device buffers: the
// chooser passes them over), dense buffers (the glue gives dense copies of others). A rank
// whose buffers or mailbox others read in a call waits until they have read before it returns
// (its buffers stay readable, its mailbox unchanged); a rank nobody reads may run ahead into
// its next call (bcast's non-roots, gather's root, a rank whose gather or scatter block is empty).
// alltoallv trusts the counts to match pairwise, as MPI requires: a reader reads recv_bytes[q]
// from where q's block starts, unchecked.
#pragma once

#include "collectives.hpp"

namespace loom {

void cma_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void cma_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);
void cma_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
void cma_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void cma_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
// Gather to args.root (AllgatherArgs with root >= 0): the root needs every bytes[q]; a non-root
// only its own, if its block is its sendbuf (MPI_Gatherv). A non-root in place (sendbuf nullptr,
// as device staging passes it) has its block at its place in recvbuf: that needs bytes[0..rank].
void cma_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
// Scatter from args.root: the root needs every bytes[q]; a non-root only its own (MPI_Scatterv),
// as it learns its offset in the root's sendbuf from the root, through the segment.
void cma_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args);
void cma_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args);
void cma_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args);

} // namespace loom
