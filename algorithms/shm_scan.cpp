// scan and exscan on the shm segment: the schedule and its cost are in shm_scan.hpp.
#include "shm_scan.hpp"

#include "shm.hpp"

#include <algorithm>

namespace loom {

namespace {

auto* bytes_of(const void* p) { return static_cast<const std::byte*>(p); }
auto* bytes_of(void* p) { return static_cast<std::byte*>(p); }

void scan_chunks(ShmComm& shm, MemoryOps& mem, const ScanArgs& args, bool exclusive)
{
    const int P = shm.size(), me = shm.rank();
    const Reduction& op = args.op;
    const std::size_t es = op.elem_size, chunk = shm.chunk_bytes(args.count * es), per_chunk = chunk / es;
    // Packed: the lower ranks run ahead of the higher ones (rank 0 never waits), as a reduce's
    // non-roots do, so several calls share a line (shm.hpp, "Inline calls").
    const std::size_t inline_size = shm.inline_slot(args.count * es);
    const std::byte* in = bytes_of(args.in_place() ? args.recvbuf : args.sendbuf);
    std::byte* out = bytes_of(args.recvbuf);
    const int last = exclusive ? me - 1 : me; // the output reduces ranks 0 .. last
    const bool read = me < P - 1;             // a higher rank reads this rank's input
    for (std::size_t off = 0; off < args.count; off += per_chunk) {
        const std::size_t n = std::min(per_chunk, args.count - off);
        const int region = shm.begin_chunk(chunk);
        const std::uint64_t phase = shm.phase() + 1;
        const std::byte* mine = in + off * es;
        std::byte* dst = out + off * es;
        if (read && inline_size != 0) {
            mem.copy(shm.inline_data(region, me, inline_size), mine, n * es);
            shm.publish_inline(region, inline_size);
        } else {
            if (read) mem.copy(shm.slot(region, me), mine, n * es);
            shm.publish();
        }
        auto from = [&](int q) -> const std::byte* {
            if (q == me) return mine;
            if (inline_size != 0) {
                shm.wait_inline(region, q, phase, inline_size);
                return shm.inline_data(region, q, inline_size);
            }
            shm.wait_for(q, phase);
            return shm.slot(region, q);
        };
        if (last == 0) {
            if (const std::byte* x0 = from(0); x0 != dst) mem.copy(dst, x0, n * es); // in place at rank 0: there
        } else if (last > 0) {
            // Right to left, each operand in its place: x_q op (x_{q+1} op ...). In place the
            // last operand is the output itself (reduce_into allows that); the others are slots.
            const std::byte* right = from(last);
            mem.reduce_into(op, from(last - 1), right, dst, n);
            for (int q = last - 2; q >= 0; --q) mem.reduce(op, from(q), dst, n);
        }
        shm.end_chunk_at_next_publish(region); // the next chunk's or call's publish says so
    }
}

} // namespace

void shm_scan(ShmComm& shm, MemoryOps& mem, const ScanArgs& args) { scan_chunks(shm, mem, args, false); }

void shm_exscan(ShmComm& shm, MemoryOps& mem, const ScanArgs& args) { scan_chunks(shm, mem, args, true); }

void shm_scan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const SegmentTurn turn(net);
    shm_scan(turn.comm_fitting(args.op.elem_size), mem, args);
}

void shm_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const SegmentTurn turn(net);
    shm_exscan(turn.comm_fitting(args.op.elem_size), mem, args);
}

} // namespace loom
