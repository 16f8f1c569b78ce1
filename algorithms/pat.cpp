// PAT, Parallel Aggregated Trees (Jeaugey, NVIDIA 2025; NCCL 2.23+): allgather(v),
// reduce-scatter(v) and allreduce with few messages on any number of ranks and an
// intermediate buffer bounded independently of the operation's size.
//
// Terms: n ranks, L = ceil(lg n) (0 for n = 1), "block" the data of one rank (allgather:
// its contribution; reduce-scatter: its share of the result). Allgather view: the block of
// origin s must reach every rank s + t, t = 1..n-1 (mod n); t is the block's offset.
//
// Unlimited buffer: n binomial trees, one rooted at each rank, with REVERSED dimensions
// (farthest first), the blocks that travel the same distance in the same step aggregated
// into one message: at distance d = 2^j, j = L-1 down to 0, rank c sends to c + d the blocks
// of origin c - h for h = 0, 2d, 4d, ... with h + d < n (offsets >= n do not exist and are
// skipped). L messages per rank, n - 1 blocks in all, the last message carrying n/2 blocks.
//
// Bounded buffer: aggregation A (a power of two, 1 <= A <= 2^L / 2): at most A blocks per
// message. D = 2^L / A. Write an offset t = hi D + lo (hi in [0, A), lo in [0, D)). The top of
// the trees runs logarithmically, the sub-trees of size D run flat (linearly):
//   logarithmic part, lg A steps, k = lg A - 1 down to 0: distance d = D 2^k, stride 2d,
//     count = #{m >= 0 : m 2d + d < n} = ceil((n - d) / 2d); rank c sends to c + d the blocks
//     of origin c - m 2d; at most A/2 blocks. (d <= 2^(L-1) < n: never empty.)
//   linear part, D - 1 steps, lo = D - 1 down to 1: distance lo, stride D,
//     count = min(A, ceil((n - lo) / D)) (0 if lo >= n); rank c sends to c + lo the blocks
//     of origin c - hi D; at most A blocks.
// pat_step(plan, i) is step i of this list (far first); distances strictly decrease.
// Why it is an allgather: a message at distance d with offset h delivers offset t = d + h.
// The log steps deliver t = D 2^k (2m + 1): exactly the multiples of D in [1, n) (each has
// one 2-adic valuation k of t/D, and t/D < A since n <= A D); the linear steps deliver
// t = hi D + lo, lo != 0: exactly the non-multiples. So every rank gets every other block
// once: n - 1 blocks per rank in all. A rank holds what it forwards: at log step k the offsets
// h = m 2^(k+1) D are 0 or multiples of D of valuation > k, delivered by earlier log steps;
// the linear steps forward only multiples of D, all delivered by the log part.
// For n = 2^L there are lg A + D - 1 messages per rank: A = 2^(L-1) (D = 2) gives the L
// messages above, A = 1 (D = 2^L) the fully linear schedule (every rank sends its block
// straight to every other, n - 1 messages). For A >= 2 and any n all steps are non-empty.
//
// Worked example, allgather, n = 8, A = 2 (D = 4), at rank 0 (every rank the same, shifted):
//   step  part        distance  stride  sends to  blocks   receives from  blocks
//   0     log k = 0   4         8       4         0        4              4
//   1     linear      3         4       3         0 4      5              5 1
//   2     linear      2         4       2         0 4      6              6 2
//   3     linear      1         4       1         0 4      7              7 3
// 4 messages, 7 blocks. A = 4 (D = 2): d = 4 {0}, 2 {0 4}, 1 {0 6 4 2}: 3 messages (the
// binomial trees); A = 1: 7 messages of one block.
//
// Reduce-scatter is the mirror: the same steps in reverse order (near first: linear
// lo = 1..D-1, then log k = 0..lg A-1), data flowing backwards (at distance d rank x sends to
// x - d and receives from x + d). Rank x keeps accumulators acc[hi] for blocks x - hi D
// (hi D < n), initialised with its own input. Linear step lo: x sends to x - lo its INPUT
// for blocks x - lo - hi D (hi D + lo < n) and reduces the message from x + lo, its input
// for blocks x - hi D, into acc[hi]. After the linear part acc[hi] holds the contributions
// of ranks x + [0, D). Log step k (d = D 2^k): x sends to x - d acc[hi] for the hi whose
// lowest set bit is k (blocks x - d - m 2d; final: only steps k' < k write them) and reduces
// the message from x + d (blocks x - m 2d) into acc[m 2^(k+1)]; afterwards acc[hi], hi a
// multiple of 2^(k+1), covers ranks x + [0, 2d). At the end acc[0] covers all n ranks. In the
// example above rank 0 sends its input for blocks {7 3}, {6 2}, {5 1} to ranks 7, 6, 5, then
// acc[1] (block 4, ranks 4..7) to rank 4, receiving blocks {0 4} three times, then block 0.
// Allreduce: PAT reduce-scatter of the vector's n blocks (BlockPartition), leaving each
// block in place, then PAT allgather of the blocks.
//
// Plan (pat_plan): A is the largest power of two with staging x A x largest block <= buffer
// (allgather staging 2: send and receive areas; reduce-scatter 3: accumulators too), clamped
// to [1, 2^L / 2]. With A = 1 and a block larger than the buffer, blocks travel in pieces of
// the buffer's size (more messages, none larger than the buffer).
//
// Cost, per rank, blocks of b bytes: lg A + D - 1 messages (n - 1 when A = 1; times the pieces
// per block when blocks are cut), (n - 1) b bytes sent and received; the reduce-scatter also
// reduces (n - 1) b bytes. Allreduce: twice that on blocks of S/n. Latency-optimal (L
// messages) for small blocks, the direct (linear, bandwidth-optimal) schedule for large ones.
// Limits: commutative op only (blocks are combined in tree order, not rank order); each
// allreduce block is reduced once, on its owner, then copied, so results are bit-identical
// on all ranks. Steps are not pipelined: a step starts when the previous one completed.
// n <= 2^30. A reduce-scatter piece is at least one element, even if the buffer is smaller.
// Memory (buffer B, largest block b, M <= A the most blocks in one message of the plan):
// allgather 2 M b <= 2 A b <= B of staging (none when A = 1: blocks go straight from and to
// the result buffer); reduce-scatter (ceil(n/D) - 1 + 2 M) b <= (3A - 1) b <= B (the
// accumulators but acc[0], which lives in the result buffer, then send and receive staging;
// with A = 1 one piece of receive staging: sends go straight from the input). In place, a
// rank whose block is not the first also needs its own block b of scratch for acc[0]: MPI
// defines only the first counts[x] elements of recvbuf as output, and the rest, the input the
// schedule still reads, must be left as it was. Plus O(n) offsets; never anything
// proportional to n x b.
#include "pat.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace loom {

namespace {

int ceil_lg(int n)
{
    int L = 0;
    while ((std::int64_t(1) << L) < n) ++L;
    return L;
}

int floor_lg(int a)
{
    int k = 0;
    while ((std::int64_t(2) << k) <= a) ++k;
    return k;
}

// The most blocks one message of the plan carries (<= A; fewer when n < 2^L).
std::size_t largest_count(const PatPlan& plan)
{
    int most = 0;
    for (int i = 0; i < pat_step_count(plan); ++i) most = std::max(most, pat_step(plan, i).count);
    return std::size_t(most);
}

std::size_t effective_buffer(std::size_t buffer_bytes)
{
    return buffer_bytes != 0 ? buffer_bytes : kPatDefaultBufferBytes;
}

// The reduce-scatter schedule. `input` holds the n blocks (element offsets `blocks`),
// `own` is acc[0] and holds rank x's input block on entry, its result on return (it may be
// the input's own block: that block is never sent).
void reduce_scatter_core(Transport& net, MemoryOps& mem, const Reduction& op, const BlockOffsets& blocks,
                         const std::byte* input, std::byte* own, std::size_t buffer_bytes)
{
    const int n = net.size();
    const int x = net.rank();
    const std::size_t es = op.elem_size;
    std::size_t max_count = 0;
    for (int b = 0; b < n; ++b) max_count = std::max(max_count, blocks.length(b));
    if (n == 1 || max_count == 0) return;

    const PatPlan plan = pat_plan(n, max_count * es, buffer_bytes, 3);
    const int A = plan.aggregation;
    const int D = plan.subtree;
    const int steps = pat_step_count(plan);
    auto len = [&](int b) { return blocks.length(b); };
    auto in_block = [&](int b) { return input + blocks.begin(b) * es; };

    if (A == 1) { // only linear steps, one block per message: send straight from the input
        const std::size_t piece = plan.piece_bytes != 0 ? std::max<std::size_t>(1, plan.piece_bytes / es) : max_count;
        Scratch incoming = mem.scratch(std::min(piece, max_count) * es);
        for (int i = steps - 1; i >= 0; --i) {
            const PatStep st = pat_step(plan, i);
            if (st.count == 0) continue;
            const int to = mod(x - st.distance, n), from = mod(x + st.distance, n);
            const std::size_t ns = len(to), nr = len(x); // send block `to`, receive block x
            for (std::size_t off = 0; off < std::max(ns, nr); off += piece) {
                const std::size_t r = off < nr ? std::min(piece, nr - off) : 0;
                const std::size_t s = off < ns ? std::min(piece, ns - off) : 0;
                if (r != 0) net.post_recv(from, incoming.get(), r * es);
                if (s != 0) net.post_send(to, in_block(to) + off * es, s * es);
                net.wait_all();
                mem.reduce(op, incoming.get(), own + off * es, r);
            }
        }
        return;
    }

    // acc[1..accs] (hi D < n), then send and receive staging of the largest message.
    const std::size_t mb = max_count * es, accs = std::size_t((n + D - 1) / D - 1), most = largest_count(plan);
    Scratch area = mem.scratch((accs + 2 * most) * mb);
    std::byte* const out = area.get() + accs * mb;
    std::byte* const in = out + most * mb;
    auto acc = [&](int hi) { return hi == 0 ? own : area.get() + std::size_t(hi - 1) * mb; };
    for (int hi = 1; hi < A && std::int64_t(hi) * D < n; ++hi) {
        const int b = mod(x - hi * D, n);
        mem.copy(acc(hi), in_block(b), len(b) * es);
    }
    for (int i = steps - 1; i >= 0; --i) {
        const PatStep st = pat_step(plan, i);
        if (st.count == 0) continue;
        const int d = st.distance, to = mod(x - d, n), from = mod(x + d, n);
        std::size_t sent = 0, expected = 0;
        for (int j = 0; j < st.count; ++j) { // blocks x - d - j stride, for rank x - d
            const int b = mod(x - d - j * st.stride, n);
            const std::byte* src = st.linear ? in_block(b) : acc((d + j * st.stride) / D);
            mem.copy(out + sent, src, len(b) * es);
            sent += len(b) * es;
            expected += len(mod(x - j * st.stride, n)) * es;
        }
        if (expected != 0) net.post_recv(from, in, expected);
        if (sent != 0) net.post_send(to, out, sent);
        net.wait_all();
        std::size_t at = 0;
        for (int j = 0; j < st.count; ++j) { // blocks x - j stride, into acc[j stride / D]
            const std::size_t c = len(mod(x - j * st.stride, n));
            mem.reduce(op, in + at, acc(j * st.stride / D), c);
            at += c * es;
        }
    }
}

} // namespace

PatPlan pat_plan_with_aggregation(int ranks, int aggregation)
{
    if (ranks < 1 || ranks > (1 << 30)) throw std::invalid_argument("pat: ranks out of range");
    PatPlan plan;
    plan.ranks = ranks;
    plan.levels = ceil_lg(ranks);
    const int max_a = plan.levels >= 1 ? 1 << (plan.levels - 1) : 1;
    plan.aggregation = 1 << floor_lg(std::clamp(aggregation, 1, max_a));
    plan.subtree = (1 << plan.levels) / plan.aggregation;
    return plan;
}

PatPlan pat_plan(int ranks, std::size_t max_block_bytes, std::size_t buffer_bytes, int staging)
{
    // floor(buffer / (staging x block)) without overflow; blocks of 0 bytes: no limit.
    const std::size_t fit = max_block_bytes == 0 ? std::size_t(1) << 30
                                                 : buffer_bytes / std::size_t(std::max(staging, 1)) / max_block_bytes;
    const int a = int(std::min<std::size_t>(fit, std::size_t(1) << 30));
    PatPlan plan = pat_plan_with_aggregation(ranks, std::max(a, 1));
    if (plan.aggregation == 1 && max_block_bytes > buffer_bytes)
        plan.piece_bytes = std::max<std::size_t>(buffer_bytes, 1); // pieces of at least one byte
    return plan;
}

int pat_step_count(const PatPlan& plan) { return floor_lg(plan.aggregation) + plan.subtree - 1; }

PatStep pat_step(const PatPlan& plan, int i)
{
    const int lg_a = floor_lg(plan.aggregation);
    const std::int64_t n = plan.ranks, D = plan.subtree;
    if (i < lg_a) {
        const std::int64_t d = D << (lg_a - 1 - i);
        return {int(d), int(2 * d), d < n ? int((n - d + 2 * d - 1) / (2 * d)) : 0, false};
    }
    const std::int64_t lo = D - 1 - (i - lg_a);
    const int count = lo < n ? int(std::min<std::int64_t>(plan.aggregation, (n - lo + D - 1) / D)) : 0;
    return {int(lo), int(D), count, true};
}

void pat_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
{
    const int n = net.size();
    const int c = net.rank();
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const BlockOffsets blocks(args.bytes);
    auto len = [&](int b) { return blocks.length(b); };
    auto at = [&](int b) { return data + blocks.begin(b); };
    if (!args.in_place()) mem.copy(at(c), args.sendbuf, len(c));
    std::size_t max_block = 0;
    for (int b = 0; b < n; ++b) max_block = std::max(max_block, len(b));
    if (n == 1 || max_block == 0) return;

    const PatPlan plan = pat_plan(n, max_block, effective_buffer(args.buffer_bytes), 2);
    const int steps = pat_step_count(plan);
    if (plan.aggregation == 1) { // one block per message, straight from and to the result
        const std::size_t piece = plan.piece_bytes != 0 ? plan.piece_bytes : max_block;
        for (int i = 0; i < steps; ++i) {
            const PatStep st = pat_step(plan, i);
            if (st.count == 0) continue;
            const int to = mod(c + st.distance, n), from = mod(c - st.distance, n);
            for (std::size_t off = 0; off < len(from); off += piece)
                net.post_recv(from, at(from) + off, std::min(piece, len(from) - off));
            for (std::size_t off = 0; off < len(c); off += piece)
                net.post_send(to, at(c) + off, std::min(piece, len(c) - off));
            net.wait_all();
        }
        return;
    }

    const std::size_t area_bytes = largest_count(plan) * max_block;
    Scratch area = mem.scratch(2 * area_bytes);
    std::byte* const out = area.get();
    std::byte* const in = out + area_bytes;
    for (int i = 0; i < steps; ++i) {
        const PatStep st = pat_step(plan, i);
        if (st.count == 0) continue;
        const int to = mod(c + st.distance, n), from = mod(c - st.distance, n);
        std::size_t sent = 0, expected = 0;
        for (int j = 0; j < st.count; ++j) {
            const int b = mod(c - j * st.stride, n);
            mem.copy(out + sent, at(b), len(b));
            sent += len(b);
            expected += len(mod(from - j * st.stride, n));
        }
        if (expected != 0) net.post_recv(from, in, expected);
        if (sent != 0) net.post_send(to, out, sent);
        net.wait_all();
        std::size_t off = 0;
        for (int j = 0; j < st.count; ++j) {
            const int b = mod(from - j * st.stride, n);
            mem.copy(at(b), in + off, len(b));
            off += len(b);
        }
    }
}

void pat_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args)
{
    const int x = net.rank();
    const std::size_t es = args.op.elem_size;
    const BlockOffsets blocks(args.counts);
    auto* data = static_cast<std::byte*>(args.recvbuf);
    const std::size_t own_bytes = blocks.length(x) * es;
    const std::size_t buffer = effective_buffer(args.buffer_bytes);
    if (args.in_place()) {
        // MPI defines only the first counts[x] elements of recvbuf as output; the rest keeps
        // the input. The own block's partial sums live where the result goes when the block
        // is first (nothing else is written), else in one block of scratch copied there last.
        std::byte* own_in = data + blocks.begin(x) * es;
        if (blocks.begin(x) == 0) {
            reduce_scatter_core(net, mem, args.op, blocks, data, data, buffer);
        } else {
            Scratch own = mem.scratch(own_bytes);
            mem.copy(own.get(), own_in, own_bytes);
            reduce_scatter_core(net, mem, args.op, blocks, data, own.get(), buffer);
            mem.copy(data, own.get(), own_bytes);
        }
    } else {
        const auto* input = static_cast<const std::byte*>(args.sendbuf);
        mem.copy(data, input + blocks.begin(x) * es, own_bytes);
        reduce_scatter_core(net, mem, args.op, blocks, input, data, buffer);
    }
}

void pat_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args)
{
    const int n = net.size();
    const int r = net.rank();
    const std::size_t es = args.op.elem_size;
    auto* data = static_cast<std::byte*>(args.recvbuf);
    if (n == 1 || args.count == 0) {
        if (!args.in_place()) mem.copy(data, args.sendbuf, args.count * es);
        return;
    }
    const BlockPartition part(args.count, n);
    PerRank<std::size_t> counts(static_cast<std::size_t>(n)), bytes(static_cast<std::size_t>(n));
    for (int b = 0; b < n; ++b) {
        counts[std::size_t(b)] = part.length(b);
        bytes[std::size_t(b)] = part.length(b) * es;
    }
    const BlockOffsets blocks(counts);
    const std::size_t buffer = effective_buffer(args.buffer_bytes);
    // Reduce-scatter with each block left in its place (the input never written), then an
    // in-place allgather of the reduced blocks.
    const auto* input = args.in_place() ? data : static_cast<const std::byte*>(args.sendbuf);
    std::byte* own = data + blocks.begin(r) * es;
    if (!args.in_place()) mem.copy(own, input + blocks.begin(r) * es, blocks.length(r) * es);
    reduce_scatter_core(net, mem, args.op, blocks, input, own, buffer);
    pat_allgather(net, mem, AllgatherArgs{nullptr, data, bytes, buffer});
}

} // namespace loom
