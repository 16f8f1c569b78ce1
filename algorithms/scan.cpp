#include "scan.hpp"

#include <algorithm>
#include <utility>

namespace loom {

namespace {

std::byte* at(void* p, std::size_t off) { return static_cast<std::byte*>(p) + off; }
const std::byte* at(const void* p, std::size_t off) { return static_cast<const std::byte*>(p) + off; }

// The chain's segments: whole elements, at least one.
struct Segments {
    std::size_t elems, count, es;
    Segments(const ScanArgs& args)
        : elems(std::max<std::size_t>(
              1, (args.segment_bytes != 0 ? args.segment_bytes : kDefaultSegmentBytes) / args.op.elem_size)),
          count(args.count), es(args.op.elem_size)
    {}
    std::size_t number() const { return (count + elems - 1) / elems; }
    std::size_t offset(std::size_t i) const { return i * elems * es; } // bytes
    std::size_t length(std::size_t i) const { return std::min(elems, count - i * elems); } // elements
};

} // namespace

// Iteration i receives segment i from the left and sends segment i-1 to the right, so a
// segment's transfer to the right overlaps the next one's arrival from the left.
void linear_scan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const int P = net.size(), me = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0) return; // the count is the same on every rank: nobody sends
    if (!args.in_place()) mem.copy(args.recvbuf, args.sendbuf, bytes);
    const Segments seg(args);
    const std::size_t m = seg.number();
    Scratch prefix = me > 0 ? mem.scratch(std::min(bytes, seg.elems * seg.es)) : no_scratch();
    for (std::size_t i = 0; i <= m; ++i) {
        if (me > 0 && i < m) net.post_recv(me - 1, prefix.get(), seg.length(i) * seg.es);
        if (me + 1 < P && i > 0) net.post_send(me + 1, at(args.recvbuf, seg.offset(i - 1)), seg.length(i - 1) * seg.es);
        net.wait_all();
        // recvbuf = prefix(0..me-1) op x_me: the prefix is the left operand.
        if (me > 0 && i < m) mem.reduce(args.op, prefix.get(), at(args.recvbuf, seg.offset(i)), seg.length(i));
    }
}

// Rank r > 0 receives the prefix of 0..r-1 (its result) and sends prefix op x_r, made in a
// buffer of its own once the previous segment's send is done; the last rank receives straight
// into recvbuf. Rank 0 sends its input and leaves recvbuf alone.
void linear_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const int P = net.size(), me = net.rank();
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0 || P == 1) return;
    const void* input = args.in_place() ? args.recvbuf : args.sendbuf;
    const Segments seg(args);
    const std::size_t m = seg.number(), seg_bytes = std::min(bytes, seg.elems * seg.es);
    const bool middle = me > 0 && me + 1 < P;
    Scratch prefix = middle ? mem.scratch(seg_bytes) : no_scratch();
    Scratch out = middle ? mem.scratch(seg_bytes) : no_scratch();
    for (std::size_t i = 0; i <= m; ++i) {
        const bool recv = me > 0 && i < m, send = me + 1 < P && i > 0;
        void* into = middle ? static_cast<void*>(prefix.get()) : static_cast<void*>(at(args.recvbuf, seg.offset(i)));
        if (recv) net.post_recv(me - 1, into, seg.length(i) * seg.es);
        if (send) {
            const void* from = me == 0 ? static_cast<const void*>(at(input, seg.offset(i - 1)))
                                       : static_cast<const void*>(out.get());
            net.post_send(me + 1, from, seg.length(i - 1) * seg.es);
        }
        net.wait_all();
        if (middle && i < m) {
            // What goes right: prefix(0..me-1) op x_me, made before x_me (in place: recvbuf) is
            // overwritten with the prefix.
            mem.reduce_into(args.op, prefix.get(), at(input, seg.offset(i)), out.get(), seg.length(i));
            mem.copy(at(args.recvbuf, seg.offset(i)), prefix.get(), seg.length(i) * seg.es);
        }
    }
}

namespace {

// The exchanges of recursive doubling. `partial` holds this rank's input; `fold(tmp)` takes a
// lower partner's partial into the result. After step k partial is the reduction of the aligned
// block of 2^(k+1) ranks holding this rank (cut at P), in rank order.
template <class Fold>
void doubling(Transport& net, MemoryOps& mem, const Reduction& op, std::size_t count, std::byte* partial,
              std::byte* tmp, Fold fold)
{
    const int P = net.size(), me = net.rank();
    const std::size_t bytes = count * op.elem_size;
    for (int mask = 1; mask < P; mask <<= 1) {
        const int partner = me ^ mask;
        if (partner >= P) continue;
        net.post_send(partner, partial, bytes);
        net.post_recv(partner, tmp, bytes);
        net.wait_all();
        if (partner < me) {
            fold(tmp);                          // result = tmp op result
            mem.reduce(op, tmp, partial, count); // partial = tmp op partial
        } else {
            mem.reduce(op, partial, tmp, count); // tmp = partial op tmp, the higher block on the right
            std::swap(partial, tmp);
        }
    }
}

} // namespace

void recursive_doubling_scan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0) return;
    if (!args.in_place()) mem.copy(args.recvbuf, args.sendbuf, bytes);
    if (net.size() == 1) return;
    Scratch partial = mem.scratch(bytes), tmp = mem.scratch(bytes);
    mem.copy(partial.get(), args.recvbuf, bytes);
    doubling(net, mem, args.op, args.count, partial.get(), tmp.get(),
             [&](const std::byte* lower) { mem.reduce(args.op, lower, args.recvbuf, args.count); });
}

void recursive_doubling_exscan(Transport& net, MemoryOps& mem, const ScanArgs& args)
{
    const std::size_t bytes = args.count * args.op.elem_size;
    if (bytes == 0 || net.size() == 1) return;
    Scratch partial = mem.scratch(bytes), tmp = mem.scratch(bytes);
    mem.copy(partial.get(), args.in_place() ? args.recvbuf : args.sendbuf, bytes);
    bool have = false; // rank 0 never gets a lower partial: its recvbuf stays as it was
    doubling(net, mem, args.op, args.count, partial.get(), tmp.get(), [&](const std::byte* lower) {
        if (have)
            mem.reduce(args.op, lower, args.recvbuf, args.count);
        else
            mem.copy(args.recvbuf, lower, bytes);
        have = true;
    });
}

} // namespace loom
