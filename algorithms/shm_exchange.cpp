// gather(v), scatter(v), alltoallv on the shm segment: the schedules and their costs are in
// shm_exchange.hpp.
#include "shm_exchange.hpp"

#include "shm.hpp"

#include <algorithm>
#include <cstring>

namespace loom {

namespace {

auto* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }
auto* bytes_of(void* p) { return static_cast<std::byte*>(p); }

// Where rank q's block goes (gather) or comes from (scatter), chosen alike at both ends from
// the block's size: nowhere (empty), through q's slot of the call's small region (inline: q's
// inline slot of that size), or by message.
struct Route {
    enum Kind { empty, slot, message } kind;
    std::size_t inline_size; // slot: ShmComm::inline_slot, 0 when through the slot itself
};
Route route(const ShmComm& shm, std::size_t bytes, bool may_inline)
{
    if (bytes == 0) return {Route::empty, 0};
    if (bytes > shm.small_slot_bytes()) return {Route::message, 0};
    return {Route::slot, may_inline ? shm.inline_slot(bytes) : 0};
}

} // namespace

void shm_gather(ShmComm& shm, Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int P = shm.size(), me = shm.rank(), root = args.root;
    const int region = shm.begin_chunk(shm.small_slot_bytes()); // one small region per call
    const std::uint64_t phase = shm.phase() + 1;                // what every rank publishes in it
    const std::size_t own = args.bytes[std::size_t(me)];
    if (me != root) {
        // In place away from the root (device staging): the block is at its place in recvbuf.
        const std::byte* mine = args.in_place() ? bytes_of(args.recvbuf) +
                                                      BlockOffsets(args.bytes.first(std::size_t(me))).total()
                                                : bytes_of(args.sendbuf);
        const Route r = route(shm, own, true);
        if (r.kind == Route::message) net.post_send(root, mine, own);
        if (r.kind == Route::slot && r.inline_size != 0) {
            mem.copy(shm.inline_data(region, me, r.inline_size), mine, own);
            shm.publish_inline(region, r.inline_size);
        } else {
            if (r.kind == Route::slot) mem.copy(shm.slot(region, me), mine, own);
            shm.publish();
        }
        shm.end_chunk(region); // free again once the root has published this phase: it has read
        if (r.kind == Route::message) net.wait_all();
        return;
    }
    const BlockOffsets blocks(args.bytes);
    std::byte* out = bytes_of(args.recvbuf);
    bool messages = false;
    for (int q = 0; q < P; ++q)
        if (q != me && route(shm, blocks.length(q), true).kind == Route::message) {
            net.post_recv(q, out + blocks.begin(q), blocks.length(q));
            messages = true;
        }
    if (!args.in_place() && own != 0) mem.copy(out + blocks.begin(me), args.sendbuf, own);
    for (int i = 1; i < P; ++i) {
        const int q = (root + i) % P;
        const Route r = route(shm, blocks.length(q), true);
        if (r.kind != Route::slot) continue;
        const std::byte* from;
        if (r.inline_size != 0) {
            shm.wait_inline(region, q, phase, r.inline_size);
            from = shm.inline_data(region, q, r.inline_size);
        } else {
            shm.wait_for(q, phase);
            from = shm.slot(region, q);
        }
        mem.copy(out + blocks.begin(q), from, blocks.length(q));
    }
    shm.publish(); // every block read
    shm.end_chunk(region);
    if (messages) net.wait_all();
}

void shm_scatter(ShmComm& shm, Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    const int P = shm.size(), me = shm.rank(), root = args.root;
    const int region = shm.begin_chunk(shm.small_slot_bytes()); // one small region per call
    if (me == root) {
        const BlockOffsets blocks(args.bytes);
        const std::byte* in = bytes_of(args.sendbuf);
        bool messages = false;
        for (int q = 0; q < P; ++q) {
            if (q == me) continue;
            const Route r = route(shm, blocks.length(q), false);
            if (r.kind == Route::message) {
                net.post_send(q, in + blocks.begin(q), blocks.length(q));
                messages = true;
            } else if (r.kind == Route::slot) {
                mem.copy(shm.slot(region, q), in + blocks.begin(q), blocks.length(q));
            }
        }
        shm.publish();
        shm.end_chunk(region); // free again once every rank has published this phase: read
        if (!args.root_in_place() && blocks.length(me) != 0)
            mem.copy(args.recvbuf, in + blocks.begin(me), blocks.length(me));
        if (messages) net.wait_all();
        return;
    }
    const std::size_t own = args.bytes[std::size_t(me)];
    const Route r = route(shm, own, false);
    if (r.kind == Route::message) {
        net.post_recv(root, args.recvbuf, own);
    } else if (r.kind == Route::slot) {
        shm.wait_for(root, shm.phase() + 1); // the root's copies, and only those
        mem.copy(args.recvbuf, shm.slot(region, me), own);
    }
    shm.publish(); // done with the region
    shm.end_chunk(region);
    if (r.kind == Route::message) net.wait_all();
}

namespace {

// Each of P pieces of a slot: whole 64-byte lines where pieces are that large.
std::size_t piece_of(std::size_t slot, int P)
{
    const std::size_t piece = slot / std::size_t(P);
    return piece >= 64 ? piece & ~std::size_t(63) : piece;
}

// A block this large goes by message even where it fits its piece (2 ranks: a 16 KiB piece).
// Measured at 2 ranks on one node: a 16 KiB block through the segment took 4.1 us a call, by
// message (as Open MPI's linear alltoallv) 2.9-3.1; 8 KiB tied, smaller blocks were 1.1-2x
// faster through the segment (tools/lab/RESULTS.md, "Issue 57 on a quiet machine").
constexpr std::size_t kMessageFrom = 16 * 1024;

} // namespace

void shm_alltoallv(ShmComm& shm, Transport& net, MemoryOps& mem, const AlltoallvArgs& args)
{
    const int P = shm.size(), me = shm.rank();
    const BlockOffsets sends(args.send_bytes), recvs(args.recv_bytes);
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    std::byte* out = bytes_of(args.recvbuf);
    const int region = shm.begin_chunk(shm.slot_bytes()); // one large region per call
    const std::uint64_t phase = shm.phase() + 1;
    const std::size_t piece = piece_of(shm.slot_bytes(), P);
    auto by_message = [&](std::size_t bytes) { return bytes > piece || bytes >= kMessageFrom; };
    // Blocks over a piece (or of kMessageFrom bytes or more) go by message. In place their input
    // is copied aside first: the receives write the same places (MPI's in place has send_bytes ==
    // recv_bytes).
    std::size_t aside = 0;
    for (int j = 0; j < P; ++j)
        if (j != me && by_message(sends.length(j))) aside += sends.length(j);
    Scratch copy = args.in_place() && aside != 0 ? mem.scratch(aside) : no_scratch();
    std::size_t at = 0;
    for (int i = 1; aside != 0 && i < P; ++i) { // from the next rank on, as a linear alltoallv posts
        const int j = (me + i) % P;
        const std::size_t len = sends.length(j);
        if (!by_message(len)) continue;
        const std::byte* from = in + sends.begin(j);
        if (copy) {
            mem.copy(copy.get() + at, from, len); // before any receive is posted
            from = copy.get() + at;
            at += len;
        }
        net.post_send(j, from, len);
    }
    bool messages = aside != 0;
    for (int i = 1; i < P; ++i) {
        const int q = (me - i + P) % P;
        if (by_message(recvs.length(q))) {
            net.post_recv(q, out + recvs.begin(q), recvs.length(q));
            messages = true;
        }
    }
    // The others: block j's piece at j x piece of this rank's slot.
    std::byte* slot = shm.slot(region, me);
    for (int j = 0; j < P; ++j)
        if (const std::size_t len = sends.length(j); j != me && len != 0 && !by_message(len))
            mem.copy(slot + std::size_t(j) * piece, in + sends.begin(j), len);
    shm.publish();
    // Only the ranks that send this rank a block through the segment are waited for. In place
    // this overwrites block q, copied in above.
    for (int i = 1; i < P; ++i) {
        const int q = (me + i) % P;
        if (const std::size_t len = recvs.length(q); len != 0 && !by_message(len)) {
            shm.wait_for(q, phase);
            mem.copy(out + recvs.begin(q), shm.slot(region, q) + std::size_t(me) * piece, len);
        }
    }
    shm.end_chunk_at_next_publish(region); // every rank's next publish comes after its reads
    if (!args.in_place() && recvs.length(me) != 0)
        mem.copy(out + recvs.begin(me), in + sends.begin(me), recvs.length(me));
    if (messages) net.wait_all();
}

void shm_gather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const SegmentTurn turn(net);
    shm_gather(turn.comm(), net, mem, args);
}

void shm_scatter(Transport& net, MemoryOps& mem, const ScatterArgs& args)
{
    const SegmentTurn turn(net);
    shm_scatter(turn.comm(), net, mem, args);
}

void shm_alltoallv(Transport& net, MemoryOps& mem, const AlltoallvArgs& args)
{
    const SegmentTurn turn(net);
    shm_alltoallv(turn.comm(), net, mem, args);
}

} // namespace loom
