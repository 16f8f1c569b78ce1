// Staging of device buffers through host buffers (see staging.hpp for the schedule).
#include "staging.hpp"

#include "collectives.hpp"

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

void stage_segments(AsyncCopier& copier, const void* src, void* dst, std::size_t bytes, std::size_t segment,
                    const std::function<void(std::byte* slot, std::size_t offset, std::size_t length)>& communicate)
{
    using Lane = AsyncCopier::Lane;
    if (bytes == 0) return; // the same on every rank: the message size is
    if (segment == 0) throw std::invalid_argument("stage_segments: zero segment size");
    const std::size_t segments = (bytes + segment - 1) / segment;
    const std::size_t slots = std::min<std::size_t>(segments, kStagingSlots);
    const std::size_t slot_bytes = std::min(segment, bytes);
    Scratch buffer = copier.host_buffer(slots * slot_bytes);
    auto slot = [&](std::size_t i) { return buffer.get() + (i % slots) * slot_bytes; };
    auto offset = [&](std::size_t i) { return i * segment; };
    auto length = [&](std::size_t i) { return std::min(segment, bytes - i * segment); };

    // Per slot: the in-lane ticket of its current input, the out-lane ticket of its last result.
    std::array<std::uint64_t, kStagingSlots> filled{}, emptied{};
    auto copy_in = [&](std::size_t i) {
        const std::size_t k = i % slots;
        // The slot's previous segment (i - slots) must have been copied out before it is refilled.
        if (i >= slots && dst != nullptr) copier.wait(Lane::out, emptied[k]);
        if (src != nullptr) copier.copy(Lane::in, slot(i), static_cast<const std::byte*>(src) + offset(i), length(i));
        filled[k] = copier.mark(Lane::in);
    };

    copy_in(0);
    for (std::size_t i = 0; i < segments; ++i) {
        if (i + 1 < segments) copy_in(i + 1); // overlaps the communication of segment i
        copier.wait(Lane::in, filled[i % slots]);
        communicate(slot(i), offset(i), length(i));
        if (dst != nullptr) {
            copier.copy(Lane::out, static_cast<std::byte*>(dst) + offset(i), slot(i), length(i));
            emptied[i % slots] = copier.mark(Lane::out);
        }
    }
    // The slots are freed on return: every copy must be complete.
    copier.wait(Lane::out, copier.mark(Lane::out));
    copier.wait(Lane::in, copier.mark(Lane::in));
}

// ---- every collective -----------------------------------------------------------------------

namespace {

using Lane = AsyncCopier::Lane;

std::size_t total(const loom_call_t& call, int n)
{
    std::size_t t = 0;
    for (int i = 0; i < n; ++i) t += call.counts[i];
    return t;
}

// A call of the same collective on host staging memory.
loom_call_t host_call(const loom_call_t& call)
{
    loom_call_t c = call;
    c.memory = LOOM_MEMORY_HOST;
    c.copier = nullptr;
    return c;
}

// Copies in `in` bytes from `src` to host + in_offset, runs `body` on the host buffer, and
// copies `out` bytes from host + out_offset to `dst`.
template <class Body>
void stage_whole(AsyncCopier& copier, std::size_t host_bytes, const void* src, std::size_t in_offset, std::size_t in,
                 void* dst, std::size_t out_offset, std::size_t out, Body&& body)
{
    Scratch host = copier.host_buffer(host_bytes);
    if (src != nullptr && in != 0) copier.copy(Lane::in, host.get() + in_offset, src, in);
    copier.wait(Lane::in, copier.mark(Lane::in));
    body(host.get());
    if (dst != nullptr && out != 0) copier.copy(Lane::out, dst, host.get() + out_offset, out);
    copier.wait(Lane::out, copier.mark(Lane::out));
}

} // namespace

void run_staged(const Algorithm& algorithm, Transport& net, AsyncCopier& copier, const loom_call_t& call)
{
    const int P = net.size(), rank = net.rank();
    // One HostMemory per segment call: its small scratch lives for one call.
    auto run_host = [&](const loom_call_t& c) {
        HostMemory mem;
        run_call(algorithm, net, mem, c);
    };
    switch (algorithm.collective) {
    case Collective::allreduce: {
        const std::size_t elem = call.op.elem_size;
        const void* src = call.sbuf != nullptr ? call.sbuf : call.rbuf;
        stage_segments(copier, src, call.rbuf, call.count * elem, staging_segment_bytes(call.staging_bytes, elem),
                       [&](std::byte* slot, std::size_t, std::size_t length) {
                           loom_call_t c = host_call(call);
                           c.sbuf = nullptr; // in place on the slot
                           c.rbuf = slot;
                           c.count = length / elem;
                           run_host(c);
                       });
        return;
    }
    case Collective::reduce: {
        const std::size_t elem = call.op.elem_size;
        const bool root = rank == call.root;
        const void* src = root && call.sbuf == nullptr ? call.rbuf : call.sbuf;
        stage_segments(copier, src, root ? call.rbuf : nullptr, call.count * elem,
                       staging_segment_bytes(call.staging_bytes, elem),
                       [&](std::byte* slot, std::size_t, std::size_t length) {
                           loom_call_t c = host_call(call);
                           // The root reduces in place on its slot; the others send theirs.
                           c.sbuf = root ? nullptr : slot;
                           c.rbuf = root ? slot : nullptr;
                           c.count = length / elem;
                           run_host(c);
                       });
        return;
    }
    case Collective::bcast: {
        const bool root = rank == call.root;
        stage_segments(copier, root ? call.rbuf : nullptr, root ? nullptr : call.rbuf, call.count,
                       staging_segment_bytes(call.staging_bytes, 1),
                       [&](std::byte* slot, std::size_t, std::size_t length) {
                           loom_call_t c = host_call(call);
                           c.rbuf = slot;
                           c.count = length;
                           run_host(c);
                       });
        return;
    }
    case Collective::reduce_scatter:
    case Collective::reduce_scatter_block: {
        // Staged whole, in place: the host buffer holds the whole input, the result comes
        // back from its start.
        const std::size_t elem = call.op.elem_size;
        const std::size_t all = total(call, P) * elem;
        const void* src = call.sbuf != nullptr ? call.sbuf : call.rbuf;
        stage_whole(copier, all, src, 0, all, call.rbuf, 0, call.counts[rank] * elem, [&](std::byte* host) {
            loom_call_t c = host_call(call);
            c.sbuf = nullptr;
            c.rbuf = host;
            run_host(c);
        });
        return;
    }
    case Collective::allgather:
    case Collective::allgatherv: {
        // Staged whole, in place: this rank's block goes to its place in the host buffer.
        std::size_t own = 0;
        for (int i = 0; i < rank; ++i) own += call.counts[i];
        const std::size_t all = total(call, P);
        const void* src = call.sbuf != nullptr ? call.sbuf : static_cast<const std::byte*>(call.rbuf) + own;
        stage_whole(copier, all, src, own, call.counts[rank], call.rbuf, 0, all, [&](std::byte* host) {
            loom_call_t c = host_call(call);
            c.sbuf = nullptr;
            c.rbuf = host;
            run_host(c);
        });
        return;
    }
    case Collective::alltoall: {
        // Staged whole, in place.
        const std::size_t all = call.count * std::size_t(P);
        const void* src = call.sbuf != nullptr ? call.sbuf : call.rbuf;
        stage_whole(copier, all, src, 0, all, call.rbuf, 0, all, [&](std::byte* host) {
            loom_call_t c = host_call(call);
            c.sbuf = nullptr;
            c.rbuf = host;
            run_host(c);
        });
        return;
    }
    case Collective::barrier: run_host(host_call(call)); return;
    }
}

} // namespace loom
