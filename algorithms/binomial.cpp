// Binomial trees: broadcast, order-preserving reduce, and allreduce as reduce + broadcast.
//
// Terms: P ranks, rank r, S bytes of data, L = ceil(lg P).
//
// Bcast. Virtual rank v = (r - root) mod P. The parent of v != 0 is v with its lowest set bit
// cleared; its children are v + m for the powers of two m below that bit (below the first
// power of two >= P for the root) with v + m < P, largest subtree (largest m) first. A rank
// receives the data from its parent, then forwards it to its children. With segment_bytes
// > 0 the data moves in segments of that size, pipelined: while a rank receives segment i
// from its parent it forwards segment i - 1 to its children.
// Worked example, P = 6, root 2 (v: r): 0: 2, 1: 3, 2: 4, 3: 5, 4: 0, 5: 1
//   step   messages (real ranks)
//   1      2 -> 0          (v 0 -> 4)
//   2      2 -> 4, 0 -> 1  (v 0 -> 2, 4 -> 5)
//   3      2 -> 3, 4 -> 5  (v 0 -> 1, 2 -> 3)
// Cost: L steps; a rank with c children sends c S bytes (the root L S at most), every other
// rank receives S once. Segmented into n segments: about L + n - 1 steps of one segment
// each at every level (more at the root, which feeds up to L children per segment).
//
// Reduce, order-preserving. The tree is built over real ranks, so every partial result
// covers a contiguous range of ranks: the range [0, P) with owner `root` is split into a
// lower half of ceil(n/2) ranks and an upper half; the half holding the owner keeps it, the
// other half gets as owner its rank next to the owner's half (its lowest rank if it is the
// upper half, its highest if it is the lower half), and both halves recurse. Bottom up, each
// owner receives the other half's partial result from that half's owner and combines the
// two lower range first: x_lo op x_hi, `in` = the lower range. For root 0 this is the
// classic binomial tree (children at distance 1, 2, 4, ...); for any root it takes L steps
// and no extra hop to the root.
// Worked example, P = 6, root 2 ("a..b" is the partial result of ranks a to b):
//   split      [0,3) owner 2 | [3,6) owner 3;  [0,2) owner 1 | [2,3);  [3,5) owner 3 | [5,6)
//   step 1     0 -> 1 (0..0),  4 -> 3 (4..4)   rank 1 holds 0..1, rank 3 holds 3..4
//   step 2     1 -> 2 (0..1),  5 -> 3 (5..5)   rank 2 holds 0..2, rank 3 holds 3..5
//   step 3     3 -> 2 (3..5)                   rank 2 holds 0..5 = x_0 op ... op x_5
// Buffers: combining "mine op theirs" leaves the result in the buffer that received theirs,
// "theirs op mine" leaves it in mine, so the partial result ping-pongs between two buffers;
// the first buffer is chosen so the root's final result lands in its result buffer. A rank
// copies S at most once: when its first partner is below it (its own input must become the
// writable right operand), or at an in-place root when the result ends in the other buffer.
// Towards root 0 every partner is above: no copies at all.
// Cost: L steps; every rank but the root sends S once; an owner receives and reduces S per
// child, the root at most L S. Memory: up to 2 S of scratch at an inner rank, S at the root
// (its result buffer is the other); leaves need none.
//
// Allreduce: reduce to rank 0, then bcast from rank 0. Cost: 2 L steps; rank 0 receives and
// sends up to L S each. Order-preserving, and every rank gets the same bits (computed once).
// Non-root ranks use their result buffer as one of the two reduce buffers.
//
// Limits: any P >= 1 and root; count / bytes 0 is a no-op. Reduce never writes the sendbuf,
// nor the recvbuf of a rank other than the root.
#include "binomial.hpp"

#include <algorithm>
#include <vector>

namespace loom {
namespace {

// This rank's part of the reduce tree: the owners it receives from, innermost (smallest
// range) first, each with whether that owner's range lies below ours; and its parent.
struct ReducePlan {
    struct Child {
        int rank;
        bool lower;
    };
    FixedList<Child> children; // at most lg P
    int parent = -1;           // -1: the root
};

ReducePlan reduce_plan(int P, int r, int root)
{
    ReducePlan plan;
    int lo = 0, hi = P, owner = root;
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo + 1) / 2;
        const bool owner_low = owner < mid;
        const int other = owner_low ? mid : mid - 1; // the other half's owner, next to ours
        if (r == owner) plan.children.push_back({other, !owner_low});
        if (r == other) plan.parent = owner;
        if ((r < mid) != owner_low) owner = other; // r is in the other half
        if (r < mid)
            hi = mid;
        else
            lo = mid;
    }
    std::reverse(plan.children.begin(), plan.children.end());
    return plan;
}

// The reduce of `count` elements from `input` to `root`. `result` is the root's result
// buffer; elsewhere it may be nullptr or a buffer the reduce may use as workspace (whose
// content is then undefined). `input_in_result`: the input is in `result` (in place).
void reduce_to(Transport& net, MemoryOps& mem, const std::byte* input, std::byte* result, bool input_in_result,
               std::size_t count, const Reduction& op, int root)
{
    const std::size_t S = count * op.elem_size;
    const ReducePlan plan = reduce_plan(net.size(), net.rank(), root);

    // Two buffers, allocated on first use: 0 is `result` when given.
    Scratch owned[2] = {Scratch(nullptr, nullptr), Scratch(nullptr, nullptr)};
    std::byte* bufs[2] = {result, nullptr};
    auto buf = [&](int i) {
        if (bufs[i] == nullptr) {
            owned[i] = mem.scratch(S);
            bufs[i] = owned[i].get();
        }
        return bufs[i];
    };
    // Where the partial result is: -1 the (read-only) input, else a buffer index. The first
    // combine moves it to buffer `first`; later "mine op theirs" combines flip it.
    int at = input_in_result ? 0 : -1;
    int first = 0;
    if (!input_in_result) {
        int flips = 0;
        for (std::size_t i = 1; i < plan.children.size(); ++i) flips += plan.children[i].lower ? 0 : 1;
        first = flips % 2; // so the last combine lands in buffer 0
    }
    auto partial = [&]() -> const std::byte* { return at < 0 ? input : buf(at); };

    for (const auto& child : plan.children) {
        if (!child.lower) { // partial op theirs: the result lands in the receive buffer
            const int into = at < 0 ? first : 1 - at;
            net.post_recv(child.rank, buf(into), S);
            net.wait_all();
            mem.reduce(op, partial(), buf(into), count);
            at = into;
        } else { // theirs op partial: the result lands in the partial's buffer
            const int into = at < 0 ? 1 - first : 1 - at;
            net.post_recv(child.rank, buf(into), S);
            if (at < 0) {
                mem.copy(buf(first), input, S);
                at = first;
            }
            net.wait_all();
            mem.reduce(op, buf(into), buf(at), count);
        }
    }
    if (plan.parent >= 0) {
        net.post_send(plan.parent, partial(), S);
        net.wait_all();
    } else if (partial() != result) {
        mem.copy(result, partial(), S);
    }
}

} // namespace

void binomial_bcast(Transport& net, MemoryOps&, const BcastArgs& args)
{
    const int P = net.size();
    const int r = net.rank();
    if (P == 1 || args.bytes == 0) return;
    auto* data = static_cast<std::byte*>(args.buf);

    const int v = mod(r - args.root, P);
    int parent = -1;
    int mask = 1;
    for (; mask < P; mask *= 2) {
        if (v & mask) {
            parent = mod(r - mask, P);
            break;
        }
    }
    FixedList<int> children; // at most lg P
    for (int m = mask / 2; m > 0; m /= 2)
        if (v + m < P) children.push_back(mod(r + m, P));

    const std::size_t seg = args.segment_bytes == 0 ? args.bytes : std::min(args.segment_bytes, args.bytes);
    const std::size_t segments = (args.bytes + seg - 1) / seg;
    auto segment = [&](std::size_t i) { return data + i * seg; };
    auto length = [&](std::size_t i) { return std::min(seg, args.bytes - i * seg); };

    // Iteration i: receive segment i from the parent while forwarding the previous one (the
    // root has them all and forwards segment i).
    const std::size_t lag = parent >= 0 ? 1 : 0;
    for (std::size_t i = 0; i < segments + lag; ++i) {
        const bool receiving = parent >= 0 && i < segments;
        const bool forwarding = !children.empty() && i >= lag;
        if (receiving) net.post_recv(parent, segment(i), length(i));
        if (forwarding)
            for (int child : children) net.post_send(child, segment(i - lag), length(i - lag));
        if (receiving || forwarding) net.wait_all();
    }
}

void binomial_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args)
{
    if (args.count == 0) return;
    const bool root = net.rank() == args.root;
    auto* result = root ? static_cast<std::byte*>(args.recvbuf) : nullptr;
    const auto* input = args.in_place() ? result : static_cast<const std::byte*>(args.sendbuf);
    reduce_to(net, mem, input, result, root && args.in_place(), args.count, args.op, args.root);
}

void binomial_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    if (args.count == 0) return;
    auto* result = static_cast<std::byte*>(args.recvbuf);
    const auto* input = args.in_place() ? result : static_cast<const std::byte*>(args.sendbuf);
    // Every rank's recvbuf is overwritten by the bcast, so the reduce may use it as workspace.
    reduce_to(net, mem, input, result, args.in_place(), args.count, args.op, 0);
    binomial_bcast(net, mem, BcastArgs{result, args.count * args.op.elem_size, 0});
}

} // namespace loom
