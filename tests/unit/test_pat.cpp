// Tests of PAT: see test_support.hpp for the shared helpers.
// The pure schedule (every offset delivered once, message counts, aggregation, far first) for
// n = 1..300 and every aggregation; the plan; and the executors on the in-process transport
// against the references for n = 1..130 and every aggregation (driven through buffer_bytes;
// the full grid up to n = 64, see runs()): allgather(v), reduce_scatter(_block) and allreduce,
// in place and not, with their traffic (messages, bytes, message sizes) and peak scratch
// checked against the plan and the buffer.
#include "pat.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <climits>
#include <cstdint>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

int ceil_lg(int n)
{
    int L = 0;
    while ((1 << L) < n) ++L;
    return L;
}

// Every allowed aggregation for n ranks: 1, 2, 4, ..., 2^L / 2.
std::vector<int> aggregations(int n)
{
    std::vector<int> a{1};
    while (a.back() * 4 <= (1 << ceil_lg(n))) a.push_back(a.back() * 2);
    return a;
}

int nonempty_steps(const PatPlan& plan)
{
    int m = 0;
    for (int i = 0; i < pat_step_count(plan); ++i) m += pat_step(plan, i).count != 0;
    return m;
}

// What every rank of a run did, beyond the result.
struct Traffic {
    RunStats stats;
    std::vector<std::size_t> peak; // peak scratch bytes per rank
    std::vector<std::vector<InprocTransport::SentMessage>> sent;
};

// Runs body(net, mem) on n ranks with a CountingMemory and message recording per rank.
template <class Body>
Traffic run_counted(int n, Body body)
{
    Traffic t;
    t.peak.resize(static_cast<std::size_t>(n));
    t.sent.resize(static_cast<std::size_t>(n));
    t.stats = run_ranks(n, [&](InprocTransport& net) {
        CountingMemory mem;
        net.record_messages(true);
        body(net, mem);
        t.peak[std::size_t(net.rank())] = mem.peak();
        t.sent[std::size_t(net.rank())] = net.sent_messages();
    });
    return t;
}

// The traffic of a run with equal blocks of `block` bytes under `plan`: every message at most
// the buffer, (nonempty steps) x (pieces per block) messages and n - 1 blocks per rank, and
// the peak scratch within the buffer, plus `result_scratch` on the ranks whose block is not
// first (an in-place reduce-scatter keeps their result apart from the input it still reads).
void check_traffic(const Traffic& t, const PatPlan& plan, std::size_t block, std::size_t buffer,
                   std::size_t result_scratch = 0)
{
    const int n = int(t.peak.size());
    const std::size_t pieces = block == 0              ? 0
                               : plan.piece_bytes == 0 ? 1
                                                       : (block + plan.piece_bytes - 1) / plan.piece_bytes;
    for (int r = 0; r < n; ++r) {
        INFO("n=" << n << " A=" << plan.aggregation << " block=" << block << " buffer=" << buffer << " rank=" << r);
        CHECK(t.stats.messages_sent[std::size_t(r)] == std::size_t(nonempty_steps(plan)) * pieces);
        CHECK(t.stats.bytes_sent[std::size_t(r)] == std::size_t(n - 1) * block);
        for (const auto& m : t.sent[std::size_t(r)]) CHECK(m.bytes <= buffer);
        CHECK(t.peak[std::size_t(r)] <= buffer + (r > 0 ? result_scratch : 0));
    }
}

// Allgather(v) of bytes[r] bytes per rank with the given buffer; checks the result.
Traffic check_allgather(const std::vector<std::size_t>& bytes, std::size_t buffer, bool in_place)
{
    const int n = int(bytes.size());
    Bytes expected;
    for (int r = 0; r < n; ++r) {
        const Bytes p = pattern(r, bytes[std::size_t(r)]);
        expected.insert(expected.end(), p.begin(), p.end());
    }
    const BlockOffsets blocks(bytes);
    std::vector<Bytes> results(static_cast<std::size_t>(n));
    INFO("allgather n=" << n << " total=" << blocks.total() << " buffer=" << buffer << " in_place=" << in_place);
    Traffic t = run_counted(n, [&](InprocTransport& net, CountingMemory& mem) {
        const int r = net.rank();
        const Bytes mine = pattern(r, bytes[std::size_t(r)]);
        Bytes recv(blocks.total(), std::byte{0x5a});
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin() + std::ptrdiff_t(blocks.begin(r)));
            pat_allgather(net, mem, AllgatherArgs{nullptr, recv.data(), bytes, buffer});
        } else {
            pat_allgather(net, mem, AllgatherArgs{mine.data(), recv.data(), bytes, buffer});
        }
        results[std::size_t(r)] = recv;
    });
    for (int r = 0; r < n; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected) == "");
    }
    return t;
}

Traffic check_reduce_scatter(const std::vector<std::size_t>& counts, const Reduction& op, const InputFn& make,
                             std::size_t buffer, bool in_place)
{
    const int n = int(counts.size());
    const std::size_t es = op.elem_size;
    const BlockOffsets blocks(counts);
    const auto inputs = all_inputs(n, blocks.total(), make);
    const Bytes full = fold(op, inputs, blocks.total());
    std::vector<Bytes> results(static_cast<std::size_t>(n));
    INFO("reduce_scatter n=" << n << " total=" << blocks.total() << " buffer=" << buffer << " in_place=" << in_place);
    Traffic t = run_counted(n, [&](InprocTransport& net, CountingMemory& mem) {
        const auto r = std::size_t(net.rank());
        Bytes send = inputs[r], recv(counts[r] * es, std::byte{0x5a});
        if (in_place) {
            pat_reduce_scatter(net, mem, ReduceScatterArgs{nullptr, send.data(), counts, op, buffer});
            rank_check(tail_intact(send, inputs[r], counts[r] * es), "in place, the input past the result was changed");
            send.resize(counts[r] * es);
            results[r] = send;
        } else {
            pat_reduce_scatter(net, mem, ReduceScatterArgs{send.data(), recv.data(), counts, op, buffer});
            results[r] = recv;
            rank_check_bytes(send, inputs[r], "out of place, the input was written", es);
        }
    });
    for (int r = 0; r < n; ++r) {
        INFO("rank=" << r << " count=" << counts[std::size_t(r)]);
        const auto block = std::span(full).subspan(blocks.begin(r) * es, blocks.length(r) * es);
        REQUIRE(first_difference(results[std::size_t(r)], block, es) == "");
    }
    return t;
}

Traffic check_allreduce(int n, std::size_t count, const Reduction& op, const InputFn& make, std::size_t buffer,
                        bool in_place)
{
    const auto inputs = all_inputs(n, count, make);
    const Bytes expected = fold(op, inputs, count);
    std::vector<Bytes> results(static_cast<std::size_t>(n));
    INFO("allreduce n=" << n << " count=" << count << " buffer=" << buffer << " in_place=" << in_place);
    Traffic t = run_counted(n, [&](InprocTransport& net, CountingMemory& mem) {
        const auto r = std::size_t(net.rank());
        Bytes send = inputs[r], recv(count * op.elem_size, std::byte{0x5a});
        AllreduceArgs args{in_place ? nullptr : send.data(), in_place ? send.data() : recv.data(), count, op};
        args.buffer_bytes = buffer;
        pat_allreduce(net, mem, args);
        results[r] = in_place ? send : recv;
        if (!in_place) rank_check_bytes(send, inputs[r], "out of place, the input was written", op.elem_size);
    });
    for (int r = 0; r < n; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected, op.elem_size) == "");
    }
    return t;
}

// Irregular sizes around `base`: zeros and very uneven blocks.
std::vector<std::size_t> irregular(int n, std::size_t base, std::size_t salt)
{
    std::vector<std::size_t> v;
    for (int i = 0; i < n; ++i) {
        const std::size_t h = (std::size_t(i) * 2654435761u + salt) % 7;
        v.push_back(h < 2 ? 0 : base * h / 3 + h % 3);
    }
    return v;
}
std::size_t max_of(const std::vector<std::size_t>& v) { return *std::max_element(v.begin(), v.end()); }

// The buffer that makes the executor pick aggregation A for blocks of at most `block` bytes.
std::size_t buffer_for(int A, std::size_t block, int staging)
{
    return std::size_t(staging) * std::size_t(A) * std::max<std::size_t>(block, 1);
}

// Which runs of the (n, A) grid a collective's test makes. Every n in 1..130 and every
// aggregation A run on the executors. Up to n = 64 every collective runs every (n, A), in
// several shapes, and up to n = 24 both in place and not. Above 64 (about 7/8 of the cost,
// which grows as n^2 per aggregation) each (n, A) runs one collective, rotating allgather,
// reduce-scatter, allreduce (whose two phases both run with aggregation A) with n, and one
// shape, alternating in place and not: every collective still meets every aggregation at
// neighbouring n.
constexpr int kFullGrid = 64;
bool runs(int which, int n, int variant) { return n <= kFullGrid || (n + variant) % 3 == which; }
std::vector<bool> placements(int n, int variant)
{
    if (n <= 24) return {false, true};
    return {(n / 3 + variant) % 2 == 0};
}
bool both_shapes(int n) { return n <= kFullGrid; }

const Reduction kSum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);

} // namespace

TEST_CASE("pat schedule: every offset once, lg A + D - 1 messages, far first", "[pat][schedule]")
{
    for (int n = 1; n <= 300; ++n)
        for (int A : aggregations(n)) {
            INFO("n=" << n << " A=" << A);
            const PatPlan plan = pat_plan_with_aggregation(n, A);
            const int L = ceil_lg(n), lg_a = ceil_lg(A), D = (1 << L) / A;
            REQUIRE(plan.aggregation == A);
            REQUIRE(plan.subtree == D);
            REQUIRE(pat_step_count(plan) == lg_a + D - 1);
            std::vector<int> hits(std::size_t(n), 0), held(std::size_t(n), 0);
            held[0] = 1; // offset 0: the rank's own block
            int prev = INT_MAX, messages = 0;
            for (int i = 0; i < pat_step_count(plan); ++i) {
                const PatStep st = pat_step(plan, i);
                INFO("step " << i << " distance=" << st.distance << " count=" << st.count);
                REQUIRE(st.distance < prev);
                prev = st.distance;
                REQUIRE(st.linear == (i >= lg_a));
                REQUIRE(st.count <= (st.linear ? A : A / 2));
                messages += st.count != 0;
                std::vector<int> got;
                for (int j = 0; j < st.count; ++j) {
                    const int h = j * st.stride, t = st.distance + h;
                    REQUIRE(held[std::size_t(h)] == 1); // a rank forwards only what it holds
                    REQUIRE(t >= 1);
                    REQUIRE(t < n);
                    ++hits[std::size_t(t)];
                    got.push_back(t);
                }
                for (int t : got) held[std::size_t(t)] = 1;
            }
            for (int t = 1; t < n; ++t) REQUIRE(hits[std::size_t(t)] == 1); // volume n - 1 blocks
            if ((n & (n - 1)) == 0) REQUIRE(messages == lg_a + D - 1);
            REQUIRE(messages <= lg_a + D - 1);
            if (n > 1 && A == (1 << L) / 2) REQUIRE(messages == L);
            if (A == 1) REQUIRE(messages == n - 1);
        }
}

TEST_CASE("pat_plan: aggregation from the buffer, pieces for blocks larger than it", "[pat][plan]")
{
    CHECK(pat_plan(8, 1024, 64 << 10, 2).aggregation == 4); // clamped to 2^L / 2
    CHECK(pat_plan(100, 1024, 64 << 10, 2).aggregation == 32);
    CHECK(pat_plan(100, 1024, 64 << 10, 3).aggregation == 16);
    CHECK(pat_plan(100, 1024, 4 << 10, 2).aggregation == 2);
    const PatPlan one = pat_plan(100, 1024, 4 << 10, 3);
    CHECK(one.aggregation == 1);
    CHECK(one.subtree == 128);
    CHECK(one.piece_bytes == 0); // the block fits in the buffer
    CHECK(pat_plan(100, 10000, 4096, 3).piece_bytes == 4096);
    CHECK(pat_plan(100, 10000, 0, 2).piece_bytes == 1); // never a 0-byte piece
    CHECK(pat_plan(2, 1, 1 << 20, 2).aggregation == 1);
    CHECK(pat_plan(1, 1, 1 << 20, 2).aggregation == 1);
    CHECK(pat_plan(1, 1, 1 << 20, 2).subtree == 1);
    CHECK(pat_plan(300, 0, 1, 3).aggregation == 256); // empty blocks: no limit
    CHECK(pat_plan_with_aggregation(100, 100).aggregation == 64);
    CHECK(pat_plan_with_aggregation(100, 1000).aggregation == 64);
    CHECK(pat_plan_with_aggregation(100, 0).aggregation == 1);
    for (int n : {3, 5, 16, 17, 100, 1000})
        for (std::size_t block : {1u, 3u, 100u, 1024u, 4097u})
            for (std::size_t buffer : {1u, 100u, 4096u, 65536u, 1u << 20})
                for (int staging : {2, 3}) {
                    INFO("n=" << n << " block=" << block << " buffer=" << buffer << " staging=" << staging);
                    const PatPlan p = pat_plan(n, block, buffer, staging);
                    const std::size_t a = std::size_t(p.aggregation), cap = std::size_t(1) << (ceil_lg(n) - 1);
                    CHECK((a & (a - 1)) == 0);
                    CHECK(a <= cap);
                    if (a > 1) CHECK(staging * a * block <= buffer);
                    if (a < cap) CHECK(staging * 2 * a * block > buffer); // the largest that fits
                    CHECK(p.piece_bytes == (a == 1 && block > buffer ? buffer : 0));
                }
}

TEST_CASE("pat allgather(v): every n 1..130, every aggregation, in place and not", "[pat][allgather]")
{
    for (int n = 1; n <= 130; ++n) {
        int variant = 0;
        for (int A : aggregations(n)) {
            if (!runs(0, n, ++variant)) continue;
            // Equal blocks: result, plan, traffic.
            const std::size_t b = 1 + std::size_t(n * 7 + A) % 13;
            const std::vector<std::size_t> equal(std::size_t(n), b);
            const std::size_t buffer = buffer_for(A, b, 2);
            const PatPlan plan = pat_plan(n, b, buffer, 2);
            REQUIRE(plan.aggregation == A);
            if (both_shapes(n) || n % 2 == 0)
                for (bool in_place : placements(n, variant))
                    check_traffic(check_allgather(equal, buffer, in_place), plan, b, buffer);
            // Irregular blocks (allgatherv), zeros included.
            const auto sizes = irregular(n, b + 2, std::size_t(A));
            if (both_shapes(n) || n % 2 == 1)
                for (bool in_place : placements(n, variant + 1))
                    check_allgather(sizes, buffer_for(A, max_of(sizes), 2), in_place);
        }
        if (n <= 24) check_allgather(std::vector<std::size_t>(std::size_t(n), 0), 0, n % 2 == 0); // nothing to send
    }
}

TEST_CASE("pat reduce_scatter: every n 1..130, every aggregation, uniform and uneven counts", "[pat][reduce_scatter]")
{
    for (int n = 1; n <= 130; ++n) {
        int variant = 0;
        for (int A : aggregations(n)) {
            if (!runs(1, n, ++variant)) continue;
            const std::size_t c = 1 + std::size_t(n * 5 + A) % 7; // reduce_scatter_block
            const std::vector<std::size_t> uniform(std::size_t(n), c);
            const std::size_t buffer = buffer_for(A, c * 4, 3);
            const PatPlan plan = pat_plan(n, c * 4, buffer, 3);
            REQUIRE(plan.aggregation == A);
            if (both_shapes(n) || n % 2 == 0)
                for (bool in_place : placements(n, variant))
                    check_traffic(check_reduce_scatter(uniform, kSum, typed_input<std::int32_t>(), buffer, in_place),
                                  plan, c * 4, buffer, in_place ? c * 4 : 0);
            // Uneven counts (reduce_scatter), zeros included: a BlockPartition with fewer
            // elements than ranks on small n, irregular blocks otherwise.
            std::vector<std::size_t> counts = irregular(n, c + 3, std::size_t(A));
            if (n <= 24 && variant == 1) {
                const BlockPartition part(std::size_t(n / 2 + 1), n);
                for (int i = 0; i < n; ++i) counts[std::size_t(i)] = part.length(i);
            }
            if (both_shapes(n) || n % 2 == 1)
                for (bool in_place : placements(n, variant + 1))
                    check_reduce_scatter(counts, kSum, typed_input<std::int32_t>(),
                                         buffer_for(A, max_of(counts) * 4, 3), in_place);
        }
    }
}

TEST_CASE("pat allreduce: every n 1..130, every aggregation, in place and not", "[pat][allreduce]")
{
    for (int n = 1; n <= 130; ++n) {
        int variant = 0;
        for (int A : aggregations(n)) {
            if (!runs(2, n, ++variant)) continue;
            // Counts below n (empty blocks), n, and a few blocks per rank with a tail.
            const std::size_t counts[] = {std::size_t(n / 2), std::size_t(n), std::size_t(3 * n + variant)};
            const std::size_t count = counts[std::size_t(n + variant) % 3];
            const BlockPartition part(count, n);
            const std::size_t buffer = buffer_for(A, part.max_length() * 4, 3);
            for (bool in_place : placements(n, variant))
                check_allreduce(n, count, kSum, typed_input<std::int32_t>(), buffer, in_place);
        }
        if (n <= 24) check_allreduce(n, 0, kSum, typed_input<std::int32_t>(), 0, n % 2 == 1);
    }
}

TEST_CASE("pat: other types and ops", "[pat][reduce_scatter][allreduce]")
{
    struct TypedOp {
        Reduction op;
        InputFn make;
    };
    const std::vector<TypedOp> ops{{kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), typed_input<float>()},
                                   {kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(1)},
                                   {kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(3)},
                                   {kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), typed_input<std::int64_t>(4)}};
    for (int n : {2, 3, 6, 8, 13})
        for (const auto& t : ops)
            for (int A : aggregations(n)) {
                const std::size_t es = t.op.elem_size, count = 5 * std::size_t(n) + 3;
                const BlockPartition part(count, n);
                const std::size_t buffer = buffer_for(A, part.max_length() * es, 3);
                check_allreduce(n, count, t.op, t.make, buffer, A % 2 == 0);
                check_reduce_scatter(irregular(n, 4, 1), t.op, t.make, buffer_for(A, 6 * es, 3), A % 2 == 1);
            }
}

TEST_CASE("pat: blocks larger than the buffer travel in pieces; scratch stays within the buffer",
          "[pat][allgather][reduce_scatter][allreduce]")
{
    // Operations 10x and 100x the buffer, A = 1 with pieces (block > buffer) and A > 1 (many
    // small blocks), equal blocks so the traffic is exact.
    for (int n : {2, 5, 8, 16, 100})
        for (std::size_t total_bytes : {std::size_t(4000), std::size_t(40000)})
            for (std::size_t ratio : {10u, 100u}) {
                const std::size_t block = total_bytes / std::size_t(n) / 4 * 4, buffer = total_bytes / ratio;
                const std::vector<std::size_t> bytes(std::size_t(n), block), counts(std::size_t(n), block / 4);
                for (bool in_place : {false, true}) {
                    INFO("n=" << n << " block=" << block << " buffer=" << buffer << " in_place=" << in_place);
                    check_traffic(check_allgather(bytes, buffer, in_place), pat_plan(n, block, buffer, 2), block,
                                  buffer);
                    check_traffic(check_reduce_scatter(counts, kSum, typed_input<std::int32_t>(), buffer, in_place),
                                  pat_plan(n, block, buffer, 3), block, buffer, in_place ? block : 0);
                    const Traffic t =
                        check_allreduce(n, total_bytes / 4, kSum, typed_input<std::int32_t>(), buffer, in_place);
                    for (int r = 0; r < n; ++r) {
                        CHECK(t.peak[std::size_t(r)] <= buffer);
                        for (const auto& m : t.sent[std::size_t(r)]) CHECK(m.bytes <= buffer);
                    }
                }
            }
    // Uneven counts in place: the result moves to the front across an overlap.
    check_reduce_scatter({1000, 3000, 5, 0, 2000}, kSum, typed_input<std::int32_t>(), 256, true);
}
