// Staging of device buffers through host buffers (see staging.hpp for the schedule).
#include "staging.hpp"

#include "collectives.hpp"
#include "layouts.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <new>

namespace loom {

// ---- DeferredHostCopier ---------------------------------------------------------------------

namespace {
void free_host(std::byte* p) { std::free(p); }
} // namespace

Scratch DeferredHostCopier::host_buffer(std::size_t bytes)
{
    auto* p = static_cast<std::byte*>(std::malloc(bytes == 0 ? 1 : bytes));
    if (p == nullptr) throw std::bad_alloc();
    return Scratch(p, &free_host);
}

void DeferredHostCopier::copy(Lane lane, void* dst, const void* src, std::size_t bytes)
{
    LaneState& s = state(lane);
    s.queue.push_back({dst, src, bytes});
    ++s.posted;
    log_.push_back((lane == Lane::in ? "in " : "out ") + std::to_string(bytes));
}

std::uint64_t DeferredHostCopier::mark(Lane lane) { return state(lane).posted; }

void DeferredHostCopier::wait(Lane lane, std::uint64_t ticket)
{
    LaneState& s = state(lane);
    if (ticket > s.posted) throw std::logic_error("DeferredHostCopier: wait for a ticket never given");
    if (ticket <= s.done) return;
    log_.push_back(lane == Lane::in ? "wait in" : "wait out");
    const auto n = static_cast<std::size_t>(ticket - s.done);
    for (std::size_t i = 0; i < n; ++i) {
        const Pending& c = s.queue[i];
        if (c.bytes != 0) std::memmove(c.dst, c.src, c.bytes);
        ++copies_;
    }
    s.queue.erase(s.queue.begin(), s.queue.begin() + static_cast<std::ptrdiff_t>(n));
    s.done = ticket;
}

// ---- the segmented pipeline -----------------------------------------------------------------

std::size_t staging_segment_bytes(std::size_t requested, std::size_t elem_size)
{
    const std::size_t elem = std::max<std::size_t>(elem_size, 1);
    const std::size_t want = requested != 0 ? requested : kDefaultStagingSegment;
    return std::max(elem, want / elem * elem);
}

void stage_pipeline(AsyncCopier& copier, std::size_t segments, std::size_t slot_bytes,
                    const std::function<void(std::size_t i, std::byte* slot, const PostCopy& post)>& fill,
                    const std::function<void(std::size_t i, std::byte* slot)>& communicate,
                    const std::function<void(std::size_t i, std::byte* slot, const PostCopy& post)>& drain)
{
    using Lane = AsyncCopier::Lane;
    if (segments == 0) return;
    const std::size_t slots = std::min<std::size_t>(segments, kStagingSlots);
    Scratch buffer = copier.host_buffer(slots * slot_bytes);
    auto slot = [&](std::size_t i) { return buffer.get() + (i % slots) * slot_bytes; };
    const PostCopy post_in = [&](void* dst, const void* src, std::size_t bytes) {
        if (bytes != 0) copier.copy(Lane::in, dst, src, bytes);
    };
    const PostCopy post_out = [&](void* dst, const void* src, std::size_t bytes) {
        if (bytes != 0) copier.copy(Lane::out, dst, src, bytes);
    };

    // Per slot: the in-lane ticket of its current input, the out-lane ticket of its last result.
    std::array<std::uint64_t, kStagingSlots> filled{}, emptied{};
    auto copy_in = [&](std::size_t i) {
        const std::size_t k = i % slots;
        // The slot's previous segment (i - slots) must have been copied out before it is refilled.
        if (i >= slots) copier.wait(Lane::out, emptied[k]);
        fill(i, slot(i), post_in);
        filled[k] = copier.mark(Lane::in);
    };

    copy_in(0);
    for (std::size_t i = 0; i < segments; ++i) {
        if (i + 1 < segments) copy_in(i + 1); // overlaps the communication of segment i
        copier.wait(Lane::in, filled[i % slots]);
        communicate(i, slot(i));
        drain(i, slot(i), post_out);
        emptied[i % slots] = copier.mark(Lane::out);
    }
    // The slots are freed on return: every copy must be complete.
    copier.wait(Lane::out, copier.mark(Lane::out));
    copier.wait(Lane::in, copier.mark(Lane::in));
}

void stage_segments(AsyncCopier& copier, const void* src, void* dst, std::size_t bytes, std::size_t segment,
                    const std::function<void(std::byte* slot, std::size_t offset, std::size_t length)>& communicate)
{
    if (bytes == 0) return; // the same on every rank: the message size is
    if (segment == 0) throw std::invalid_argument("stage_segments: zero segment size");
    auto offset = [&](std::size_t i) { return i * segment; };
    auto length = [&](std::size_t i) { return std::min(segment, bytes - i * segment); };
    stage_pipeline(
        copier, (bytes + segment - 1) / segment, std::min(segment, bytes),
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            if (src != nullptr) post(slot, static_cast<const std::byte*>(src) + offset(i), length(i));
        },
        [&](std::size_t i, std::byte* slot) { communicate(slot, offset(i), length(i)); },
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            if (dst != nullptr) post(static_cast<std::byte*>(dst) + offset(i), slot, length(i));
        });
}

// ---- every collective -----------------------------------------------------------------------

namespace {

// A call of the same collective on host staging memory.
loom_call_t host_call(const loom_call_t& call)
{
    loom_call_t c = call;
    c.memory = LOOM_MEMORY_HOST;
    c.copier = nullptr;
    return c;
}

// P blocks of counts[b] units laid end to end, cut into pieces for segmented staging: piece i
// of block b is units [i q, (i+1) q) of the block (shorter or empty at its end), and segment i
// holds piece i of every block, in rank order. A piece is S/P bytes for a staging segment of S
// bytes, but at least min(S, 16 KiB), so that at large P a segment's call is not all latency.
struct Pieces {
    Pieces(const std::size_t* counts_in, int P, std::size_t unit, std::size_t requested)
        : counts(counts_in, counts_in + P), start(std::size_t(P), 0)
    {
        const std::size_t seg = requested != 0 ? requested : kDefaultStagingSegment;
        const std::size_t piece_bytes =
            std::max((seg + std::size_t(P) - 1) / std::size_t(P), std::min<std::size_t>(seg, 16 << 10));
        q = std::max<std::size_t>(1, piece_bytes / std::max<std::size_t>(unit, 1));
        std::size_t largest = 0;
        for (int b = 0; b < P; ++b) {
            if (b > 0) start[std::size_t(b)] = start[std::size_t(b) - 1] + counts[std::size_t(b) - 1];
            largest = std::max(largest, counts[std::size_t(b)]);
        }
        segments = (largest + q - 1) / q;
        for (std::size_t c : counts) slot_units += std::min(c, q);
    }
    std::size_t length(std::size_t i, int b) const
    {
        const std::size_t c = counts[std::size_t(b)];
        return c > i * q ? std::min(q, c - i * q) : 0;
    }
    // Piece i of block b: its first unit within the block, and within the whole vector.
    std::size_t offset(std::size_t i, int b) const { return std::min(i * q, counts[std::size_t(b)]); }
    std::size_t source(std::size_t i, int b) const { return start[std::size_t(b)] + offset(i, b); }
    std::vector<std::size_t> lengths(std::size_t i) const
    {
        std::vector<std::size_t> v(counts.size());
        for (std::size_t b = 0; b < counts.size(); ++b) v[b] = length(i, int(b));
        return v;
    }

    std::vector<std::size_t> counts, start;
    std::size_t q = 1, segments = 0, slot_units = 0;
};

// One HostMemory per segment call: its small scratch lives for one call.
void run_host(const Algorithm& algorithm, Transport& net, const loom_call_t& c)
{
    HostMemory mem;
    run_call(algorithm, net, mem, c);
}

// The call on segment i of a blocked collective: piece i of every block, in place on the slot.
void run_pieces_in_place(const Algorithm& algorithm, Transport& net, const loom_call_t& call, const Pieces& pieces,
                         std::size_t i, std::byte* slot)
{
    const std::vector<std::size_t> counts = pieces.lengths(i);
    loom_call_t c = host_call(call);
    c.sbuf = nullptr;
    c.rbuf = slot;
    c.counts = counts.data();
    run_host(algorithm, net, c);
}

} // namespace

// The staging of each layout (collectives.def), the stage of its record in kLayouts
// (layouts.cpp): a vector is staged in segments, each a call of its own; blocks are staged
// piece by piece, each segment holding piece i of every block.
namespace staged {

void vector(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    const Collective coll = algorithm.collective;
    const bool result_here = has_result(coll, net.rank(), call.root);
    if (!reduces(coll)) { // bcast: the root's source
        const bool root = net.rank() == call.root;
        stage_segments(copier, root ? call.rbuf : nullptr, root ? nullptr : call.rbuf, call.count,
                       staging_segment_bytes(call.staging_bytes, 1),
                       [&](std::byte* slot, std::size_t, std::size_t length) {
                           loom_call_t c = host_call(call);
                           c.rbuf = slot;
                           c.count = length;
                           run_host(algorithm, net, c);
                       });
        return;
    }
    const std::size_t elem = call.op.elem_size;
    if (result_ranks(coll) == ResultRanks::root) {
        // reduce: the root reduces in place on its slot; the others send theirs
        const void* src = result_here && call.sbuf == nullptr ? call.rbuf : call.sbuf;
        stage_segments(copier, src, result_here ? call.rbuf : nullptr, call.count * elem,
                       staging_segment_bytes(call.staging_bytes, elem),
                       [&](std::byte* slot, std::size_t, std::size_t length) {
                           loom_call_t c = host_call(call);
                           c.sbuf = result_here ? nullptr : slot;
                           c.rbuf = result_here ? slot : nullptr;
                           c.count = length / elem;
                           run_host(algorithm, net, c);
                       });
        return;
    }
    // allreduce, scan, exscan: elementwise, so each segment is a call of its own, in place on the
    // slot; a rank without a result (exscan's rank 0) leaves its buffer as it was.
    const void* src = call.sbuf != nullptr ? call.sbuf : call.rbuf;
    stage_segments(copier, src, result_here ? call.rbuf : nullptr, call.count * elem,
                   staging_segment_bytes(call.staging_bytes, elem),
                   [&](std::byte* slot, std::size_t, std::size_t length) {
                       loom_call_t c = host_call(call);
                       c.sbuf = nullptr;
                       c.rbuf = slot;
                       c.count = length / elem;
                       run_host(algorithm, net, c);
                   });
}

void split(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    // Segment i: piece i of every block, reduced in place on the slot; this rank's piece
    // of the result is at the slot's start.
    const int P = net.size(), rank = net.rank();
    const std::size_t elem = call.op.elem_size;
    const Pieces pieces(call.counts, P, elem, call.staging_bytes);
    const auto* src = static_cast<const std::byte*>(call.sbuf != nullptr ? call.sbuf : call.rbuf);
    auto* dst = static_cast<std::byte*>(call.rbuf);
    stage_pipeline(
        copier, pieces.segments, pieces.slot_units * elem,
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            std::size_t packed = 0;
            for (int b = 0; b < P; ++b) {
                post(slot + packed * elem, src + pieces.source(i, b) * elem, pieces.length(i, b) * elem);
                packed += pieces.length(i, b);
            }
        },
        [&](std::size_t i, std::byte* slot) { run_pieces_in_place(algorithm, net, call, pieces, i, slot); },
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            post(dst + pieces.offset(i, rank) * elem, slot, pieces.length(i, rank) * elem);
        });
}

void gathered(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    // Segment i: piece i of every block; this rank's piece goes to its place in the slot, the
    // algorithm runs in place there, and every piece goes to its place in rbuf on the ranks that
    // get a result (a gather's root only).
    const int P = net.size(), rank = net.rank();
    const bool result_here = has_result(algorithm.collective, rank, call.root);
    const Pieces pieces(call.counts, P, 1, call.staging_bytes);
    const auto* own = call.sbuf != nullptr
                          ? static_cast<const std::byte*>(call.sbuf)
                          : static_cast<const std::byte*>(call.rbuf) + pieces.start[std::size_t(rank)];
    auto* dst = static_cast<std::byte*>(call.rbuf);
    stage_pipeline(
        copier, pieces.segments, pieces.slot_units,
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            std::size_t packed = 0;
            for (int b = 0; b < rank; ++b) packed += pieces.length(i, b);
            post(slot + packed, own + pieces.offset(i, rank), pieces.length(i, rank));
        },
        [&](std::size_t i, std::byte* slot) { run_pieces_in_place(algorithm, net, call, pieces, i, slot); },
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            if (!result_here) return;
            std::size_t packed = 0;
            for (int b = 0; b < P; ++b) {
                post(dst + pieces.source(i, b), slot + packed, pieces.length(i, b));
                packed += pieces.length(i, b);
            }
        });
}

void scattered(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    // Segment i: piece i of every block. The root packs them into its slot and scatters from
    // there (in place on the slot: its own piece stays); every rank's piece goes from its slot
    // to its place in rbuf (the root's unless MPI_IN_PLACE, where rbuf is null).
    const int P = net.size(), rank = net.rank();
    const bool root = rank == call.root;
    const Pieces pieces(call.counts, P, 1, call.staging_bytes);
    const auto* src = static_cast<const std::byte*>(call.sbuf);
    auto* dst = static_cast<std::byte*>(call.rbuf);
    auto own_at = [&](std::size_t i) { // this rank's piece in segment i's slot
        std::size_t packed = 0;
        for (int b = 0; root && b < rank; ++b) packed += pieces.length(i, b);
        return packed;
    };
    stage_pipeline(
        copier, pieces.segments, pieces.slot_units,
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            if (!root) return;
            std::size_t packed = 0;
            for (int b = 0; b < P; ++b) {
                post(slot + packed, src + pieces.source(i, b), pieces.length(i, b));
                packed += pieces.length(i, b);
            }
        },
        [&](std::size_t i, std::byte* slot) {
            const std::vector<std::size_t> counts = pieces.lengths(i);
            loom_call_t c = host_call(call);
            c.sbuf = root ? slot : nullptr;
            c.rbuf = root ? nullptr : slot;
            c.counts = counts.data();
            run_host(algorithm, net, c);
        },
        [&](std::size_t i, std::byte* slot, const PostCopy& post) {
            if (dst != nullptr) post(dst + pieces.offset(i, rank), slot + own_at(i), pieces.length(i, rank));
        });
}

void per_peer(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    // Segment i: piece i of every block, in place on the slot (all pieces of one segment
    // have the same length, as alltoall's blocks do).
    const int P = net.size();
    const std::vector<std::size_t> blocks(std::size_t(P), call.count);
    const Pieces pieces(blocks.data(), P, 1, call.staging_bytes);
    const auto* src = static_cast<const std::byte*>(call.sbuf != nullptr ? call.sbuf : call.rbuf);
    auto* dst = static_cast<std::byte*>(call.rbuf);
    auto move = [&](std::size_t i, std::byte* slot, const PostCopy& post, bool in) {
        const std::size_t len = pieces.length(i, 0);
        for (int b = 0; b < P; ++b) {
            if (in)
                post(slot + std::size_t(b) * len, src + pieces.source(i, b), len);
            else
                post(dst + pieces.source(i, b), slot + std::size_t(b) * len, len);
        }
    };
    stage_pipeline(
        copier, pieces.segments, pieces.slot_units,
        [&](std::size_t i, std::byte* slot, const PostCopy& post) { move(i, slot, post, true); },
        [&](std::size_t i, std::byte* slot) {
            loom_call_t c = host_call(call);
            c.sbuf = nullptr;
            c.rbuf = slot;
            c.count = pieces.length(i, 0);
            run_host(algorithm, net, c);
        },
        [&](std::size_t i, std::byte* slot, const PostCopy& post) { move(i, slot, post, false); });
}

void per_peer_v(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&)
{
    // The glue runs these on host copies (counts_differ_by_rank): no two ranks cut alike.
    throw std::logic_error("run_staged: alltoallv and alltoallw are not staged");
}

void neighbours(const Algorithm&, Transport&, AsyncCopier&, const loom_call_t&)
{
    // As per_peer_v: each rank's counts are its own (counts per_neighbour), so the glue runs a
    // device call on host copies.
    throw std::logic_error("run_staged: the neighbourhood collectives are not staged");
}

void none(const Algorithm& algorithm, Transport& net, AsyncCopier&, const loom_call_t& call)
{
    run_host(algorithm, net, host_call(call));
}

} // namespace staged

void run_staged(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    layout_ops(layout(algorithm.collective)).stage(algorithm, net, copier, call);
}

} // namespace loom
