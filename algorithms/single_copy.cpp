#include "single_copy.hpp"

#include "loom_c_api.h"
#include "shm.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <sys/uio.h>

namespace loom {

namespace {

// A reduction's pieces: small enough that the bounce buffer stays in L2 while it is reduced,
// large enough that a syscall per piece and peer costs little (about 1 us per 64 KiB here).
constexpr std::size_t kPieceBytes = 64 * 1024;

// Up to this size an allreduce on two ranks reduces the whole vector on each (cma_allreduce):
// 1.3-1.9x faster at 16-256 KiB (tools/lab/RESULTS.md, "Two ranks reduce the whole vector").
// From 512 KiB it is the steady one: where reading lines the other core has just written is
// slow (this VM's slow state), half the vector and then the other half of the result took
// 192-201 us at 512 KiB and 731-884 at 2 MiB; the whole vector 76-89 and 316-385 in either
// state. In the fast state the halves are faster from 1 MiB (2 MiB: 237-346 us); at 8-16 MiB
// the whole vector was no faster in either (RESULTS.md, "Two ranks reduce the whole vector up
// to 4 MiB").
constexpr std::size_t kWholeReduceBytes = 4 * 1024 * 1024;

auto* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }
auto* bytes_of(void* p) { return static_cast<std::byte*>(p); }

// The segment of the call's turn (every cma entry holds one: the segment's syncs serve one
// call at a time, ShmTurns), which must have single copy on (the registry's needs;
// only a direct call from a test can get here without).
ShmComm& single_copy_comm(const SegmentTurn& turn)
{
    if (!turn.comm().single_copy())
        throw ShmUnavailable("cma: this node refuses single-copy transfers (XPMEM and process_vm_readv)");
    return turn.comm();
}

// Copies `bytes` from rank q's address `remote` (in q's process) to `local`: through the
// mapping if there is one (and from this rank's own memory), else with process_vm_readv.
void read_from(const ShmComm& shm, int q, const void* remote, void* local, std::size_t bytes)
{
    if (bytes == 0) return;
    if (const std::byte* view = shm.view(q, remote, bytes)) {
        std::memcpy(local, view, bytes);
        return;
    }
    const auto pid = pid_t(shm.mailbox(q).pid);
    std::size_t done = 0;
    while (done < bytes) {
        iovec to{bytes_of(local) + done, bytes - done};
        iovec from{const_cast<std::byte*>(bytes_of(remote)) + done, bytes - done};
        const ssize_t n = process_vm_readv(pid, &to, 1, &from, 1, 0);
        if (n > 0) {
            done += std::size_t(n);
        } else if (n == 0 || errno != EINTR) { // 0: nothing more can be read there; never spin
            throw TransportError(LOOM_ERR_INTERNAL,
                                 "cma: process_vm_readv from rank " + std::to_string(q) +
                                     " failed: " + (n == 0 ? "no bytes read" : std::strerror(errno)));
        }
    }
}

// Rank q's buffer `which` (0: input, 1: output) as published in its mailbox for this call.
const std::byte* peer_buffer(const ShmComm& shm, int q, int which) { return bytes_of(shm.mailbox(q).addr[which]); }

// dst[0, count) = in_0 op in_1 op ... op in_{P-1}, where in_q is the `count` elements at byte
// `at` of rank q's input (mailbox addr[0]) and `mine` this rank's own (which dst may alias).
// Reduced right to left (inout = in op inout), so non-commutative ops get MPI's order. With a
// mapping each term is reduced straight from its owner's buffer; without, it is read into a
// bounce buffer first.
void reduce_from_all(const ShmComm& shm, MemoryOps& mem, const Reduction& op, std::size_t at, const std::byte* mine,
                     std::byte* dst, std::size_t count)
{
    const int P = shm.size(), me = shm.rank();
    const std::size_t es = op.elem_size, per = std::min(count, std::max<std::size_t>(1, kPieceBytes / es));
    // Buffers of one piece, no more than this call reduces (none for an empty slice or a mapping).
    // The bounce buffer holds the terms read after the first, which goes straight to `out`:
    // the last rank reads one of those if P > 1, the others only if P > 2 (at P = 2, rank 0
    // reduces rank 1's piece, read into out, with its own).
    const bool reads_terms = me == P - 1 ? P > 1 : P > 2;
    Scratch bounce = reads_terms && per != 0 && shm.peer_map() == nullptr ? mem.scratch(per * es) : no_scratch();
    // In place, this rank's input is overwritten by the first term: keep it first.
    const bool keep_mine = mine == dst && me != P - 1 && per != 0;
    Scratch kept = keep_mine ? mem.scratch(per * es) : no_scratch();
    // With a mapping, each other rank's slice is mapped once, whole (a range per peer, so
    // the mapping's cache keeps one attachment for all the pieces, call after call).
    PerRank<const std::byte*, 65> views(shm.peer_map() != nullptr ? std::size_t(P) : 0);
    for (int q = 0; q < int(views.size()); ++q)
        views[std::size_t(q)] = count == 0 ? nullptr : shm.view(q, peer_buffer(shm, q, 0) + at, count * es);
    // Term q of the piece at byte `off * es` of the slice: mapped, or read into the bounce buffer.
    auto term = [&](int q, std::size_t off, std::size_t bytes) {
        if (views.size() != 0) return views[std::size_t(q)] + off * es;
        read_from(shm, q, peer_buffer(shm, q, 0) + at + off * es, bounce.get(), bytes);
        return static_cast<const std::byte*>(bounce.get());
    };
    for (std::size_t off = 0; off < count; off += per) {
        const std::size_t k = std::min(per, count - off), bytes = k * es;
        std::byte* out = dst + off * es;
        const std::byte* own = mine + off * es;
        if (keep_mine) {
            mem.copy(kept.get(), own, bytes);
            own = kept.get();
        }
        int q = P - 2; // the next term to reduce into out
        if (P - 1 != me) {
            if (views.size() != 0)
                mem.copy(out, term(P - 1, off, bytes), bytes);
            else
                read_from(shm, P - 1, peer_buffer(shm, P - 1, 0) + at + off * es, out, bytes);
        } else if (q < 0) {
            if (out != own) mem.copy(out, own, bytes);
        } else { // the last rank: its own term and the next one in one pass
            mem.reduce_into(op, term(q, off, bytes), own, out, k);
            --q;
        }
        for (; q >= 0; --q) mem.reduce(op, q == me ? own : term(q, off, bytes), out, k);
    }
}

// Publishes this call's buffers in the mailbox and waits until every rank has.
void exchange_addresses(ShmComm& shm, const void* input, const void* output)
{
    ShmComm::Mailbox& box = shm.mailbox(shm.rank());
    box.addr[0] = input;
    box.addr[1] = output;
    shm.sync();
}

} // namespace

void cma_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank();
    const std::size_t es = args.op.elem_size;
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    std::byte* out = bytes_of(args.recvbuf);
    exchange_addresses(shm, in, out);
    // Two ranks, up to kWholeReduceBytes, out of place: each rank reduces the whole vector
    // itself instead of its half and then reading the other half of the result. It reads as
    // many bytes (all of the other's input, instead of half of it and half of the result),
    // reduces twice as many, and saves a sync and reading lines the other rank has just
    // written. In place the other rank is still reading the input this would overwrite.
    if (P == 2 && !args.in_place() && args.count * es <= kWholeReduceBytes) {
        reduce_from_all(shm, mem, args.op, 0, in, out, args.count);
        shm.sync(); // the other rank has read this rank's input
        return;
    }
    const BlockPartition part(args.count, P);
    const std::size_t at = part.begin(me) * es;
    reduce_from_all(shm, mem, args.op, at, in + at, out + at, part.length(me));
    shm.sync(); // every slice of the result is in its owner's output; every input read
    for (int q = 0; q < P; ++q)
        if (q != me)
            read_from(shm, q, peer_buffer(shm, q, 1) + part.begin(q) * es, out + part.begin(q) * es,
                      part.length(q) * es);
    shm.sync(); // nobody reads this rank's output any more
}

void cma_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank();
    const bool root = me == args.root;
    const std::size_t es = args.op.elem_size;
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    const BlockPartition part(args.count, P);
    const std::size_t at = part.begin(me) * es, n = part.length(me);
    // Every rank reduces its slice: the root into its output, the others into scratch the root
    // then reads (published as this call's output address).
    Scratch slice = !root && n != 0 ? mem.scratch(n * es) : no_scratch();
    std::byte* dst = root ? bytes_of(args.recvbuf) + at : slice.get();
    exchange_addresses(shm, in, dst);
    reduce_from_all(shm, mem, args.op, at, in + at, dst, n);
    shm.sync(); // every slice reduced; every input read
    if (root) {
        for (int q = 0; q < P; ++q)
            if (q != me)
                read_from(shm, q, peer_buffer(shm, q, 1), bytes_of(args.recvbuf) + part.begin(q) * es,
                          part.length(q) * es);
    }
    shm.publish();                                   // the root: done reading the slices
    if (!root) shm.wait_for(args.root, shm.phase()); // keep the slice until the root has it
}

void cma_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int me = shm.rank();
    const std::size_t es = args.op.elem_size;
    const BlockOffsets blocks(args.counts);
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    const std::size_t at = blocks.begin(me) * es, count = blocks.length(me);
    exchange_addresses(shm, in, nullptr);
    // In place the result goes to the start of the input, which rank 0 reads: reduce into
    // scratch, and copy once every rank is done reading.
    Scratch result = args.in_place() && count != 0 ? mem.scratch(count * es) : no_scratch();
    std::byte* dst = args.in_place() ? result.get() : bytes_of(args.recvbuf);
    reduce_from_all(shm, mem, args.op, at, in + at, dst, count);
    shm.sync();
    if (args.in_place() && count != 0) mem.copy(args.recvbuf, dst, count * es);
}

void cma_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank();
    const BlockOffsets blocks(args.bytes);
    std::byte* out = bytes_of(args.recvbuf);
    const std::byte* mine = args.in_place() ? out + blocks.begin(me) : bytes_of(args.sendbuf);
    exchange_addresses(shm, mine, nullptr);
    // Start with the next rank, so the ranks do not all read rank 0 first.
    for (int i = 1; i < P; ++i) {
        const int q = (me + i) % P;
        read_from(shm, q, peer_buffer(shm, q, 0), out + blocks.begin(q), blocks.length(q));
    }
    if (!args.in_place() && blocks.length(me) != 0) mem.copy(out + blocks.begin(me), mine, blocks.length(me));
    shm.sync();
}

void cma_bcast(Transport& net, MemoryOps&, const BcastArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    if (shm.rank() == args.root) {
        shm.mailbox(shm.rank()).addr[0] = args.buf;
        shm.publish();
        shm.publish();
        shm.wait_all(shm.phase()); // every rank has read the buffer
        return;
    }
    shm.publish();
    shm.wait_for(args.root, shm.phase()); // the root's address, and only that
    read_from(shm, args.root, peer_buffer(shm, args.root, 0), args.buf, args.bytes);
    shm.publish();
}

void cma_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank(), root = args.root;
    const std::size_t own = args.bytes[std::size_t(me)];
    if (me != root) {
        const std::byte* mine = bytes_of(args.sendbuf);
        if (args.in_place()) mine = bytes_of(args.recvbuf) + BlockOffsets(args.bytes.first(std::size_t(me))).total();
        shm.mailbox(me).addr[0] = mine;
        shm.publish();
        if (own != 0) shm.wait_for(root, shm.phase()); // keep the block until the root has read it
        return;
    }
    const BlockOffsets blocks(args.bytes);
    std::byte* out = bytes_of(args.recvbuf);
    const std::uint64_t published = shm.phase() + 1; // the others' addresses are out
    for (int i = 1; i < P; ++i) {
        const int q = (root + i) % P;
        if (blocks.length(q) == 0) continue; // q does not wait: its mailbox may be the next call's
        shm.wait_for(q, published);
        read_from(shm, q, peer_buffer(shm, q, 0), out + blocks.begin(q), blocks.length(q));
    }
    if (!args.in_place() && own != 0) mem.copy(out + blocks.begin(me), args.sendbuf, own);
    shm.publish(); // every block read
}

void cma_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank(), root = args.root;
    // A non-root of MPI_Scatterv knows only its own count: the root writes each rank's offset in
    // its sendbuf into that rank's slot of the next small region (every rank takes the same one).
    const int region = shm.begin_chunk(shm.chunk_bytes(sizeof(std::size_t)));
    if (me == root) {
        const BlockOffsets blocks(args.bytes);
        for (int q = 0; q < P; ++q) {
            const std::size_t at = blocks.begin(q);
            if (q != me && blocks.length(q) != 0) std::memcpy(shm.slot(region, q), &at, sizeof at);
        }
        shm.mailbox(me).addr[0] = args.sendbuf;
        shm.publish();
        shm.end_chunk(region);
        if (!args.root_in_place() && blocks.length(me) != 0)
            mem.copy(args.recvbuf, bytes_of(args.sendbuf) + blocks.begin(me), blocks.length(me));
        shm.wait_all(shm.phase()); // every rank has read its block
        return;
    }
    if (const std::size_t own = args.bytes[std::size_t(me)]; own != 0) {
        shm.wait_for(root, shm.phase() + 1); // the root's address and offsets, and only those
        std::size_t at;
        std::memcpy(&at, shm.slot(region, me), sizeof at);
        read_from(shm, root, peer_buffer(shm, root, 0) + at, args.recvbuf, own);
    }
    shm.publish(); // done with the root's sendbuf and the region
    shm.end_chunk(region);
}

void cma_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank();
    const std::size_t b = args.block_bytes, total = b * std::size_t(P);
    std::byte* out = bytes_of(args.recvbuf);
    // In place the output overwrites the input the others read: they read a copy.
    Scratch copy = args.in_place() && total != 0 ? mem.scratch(total) : no_scratch();
    if (copy) mem.copy(copy.get(), out, total);
    const std::byte* in = copy ? copy.get() : bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    exchange_addresses(shm, in, nullptr);
    for (int i = 1; i < P; ++i) {
        const int q = (me + i) % P;
        read_from(shm, q, peer_buffer(shm, q, 0) + std::size_t(me) * b, out + std::size_t(q) * b, b);
    }
    if (!args.in_place() && b != 0) mem.copy(out + std::size_t(me) * b, in + std::size_t(me) * b, b);
    shm.sync();
}

void cma_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args)
{
    const SegmentTurn turn(net);
    ShmComm& shm = single_copy_comm(turn);
    const int P = shm.size(), me = shm.rank();
    const BlockOffsets sends(args.send_bytes), recvs(args.recv_bytes);
    std::byte* out = bytes_of(args.recvbuf);
    // In place the output overwrites the input the others read: they read a copy.
    Scratch copy = args.in_place() && recvs.total() != 0 ? mem.scratch(recvs.total()) : no_scratch();
    if (copy) mem.copy(copy.get(), out, recvs.total());
    const std::byte* in = copy ? copy.get() : bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    // Where each block starts in the input: published as this call's second address, so a reader
    // first reads its own entry from the peer (the peer alone knows its send_bytes).
    PerRank<std::size_t, 65> offsets{std::size_t(P)};
    for (int q = 0; q < P; ++q) offsets[std::size_t(q)] = sends.begin(q);
    exchange_addresses(shm, in, offsets.data());
    for (int i = 1; i < P; ++i) {
        const int q = (me + i) % P;
        const std::size_t n = args.recv_bytes[std::size_t(q)];
        if (n == 0) continue;
        std::size_t offset = 0;
        read_from(shm, q, peer_buffer(shm, q, 1) + std::size_t(me) * sizeof offset, &offset, sizeof offset);
        read_from(shm, q, peer_buffer(shm, q, 0) + offset, out + recvs.begin(q), n);
    }
    if (!args.in_place() && recvs.length(me) != 0)
        mem.copy(out + recvs.begin(me), in + sends.begin(me), recvs.length(me));
    shm.sync(); // nobody reads this rank's input or offsets any more
}

} // namespace loom
