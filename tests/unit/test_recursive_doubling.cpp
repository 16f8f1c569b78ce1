// Tests of the recursive_doubling family: see test_support.hpp for the shared helpers.
// Allreduce (commutative ops against the sequential reference, and a non-commutative matrix
// product checking rank order on every rank), allgather(v) with equal, uneven and empty
// blocks, and the barrier (no rank leaves before all entered), for every size in
// comm_sizes(), in place and not.
#include "recursive_doubling.hpp"
#include "registry.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

void check_allreduce(int P, std::size_t count, const Reduction& op, const InputFn& make, bool in_place)
{
    const std::size_t es = op.elem_size;
    const auto inputs = all_inputs(P, count, make);
    const Bytes expected = fold(op, inputs, count);
    INFO("P=" << P << " count=" << count << " in_place=" << in_place);
    const auto [results, stats] = run_allreduce(&recursive_doubling_allreduce, inputs, count, op, in_place);
    const int lg = floor_lg(P);
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected, es) == ""); // rank-ordered, identical everywhere
        // Full-vector exchanges: lg p2 of them, plus one for each side of the fold.
        if (count != 0 && P > 1) CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(lg + 1));
        if (count != 0 && (P & (P - 1)) == 0) CHECK(stats.bytes_sent[std::size_t(r)] == std::size_t(lg) * count * es);
    }
}

// Allgatherv with the given block sizes; in place the block is already in recvbuf.
void check_allgather(int P, const std::vector<std::size_t>& bytes, bool in_place)
{
    const BlockOffsets blocks(bytes);
    Bytes expected;
    for (int r = 0; r < P; ++r) {
        const Bytes b = pattern(r, bytes[std::size_t(r)]);
        expected.insert(expected.end(), b.begin(), b.end());
    }
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const Bytes mine = pattern(r, bytes[std::size_t(r)]);
        Bytes recv(blocks.total(), std::byte{0x5a});
        HostMemory mem;
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin() + std::ptrdiff_t(blocks.begin(r)));
            recursive_doubling_allgather(net, mem, AllgatherArgs{nullptr, recv.data(), bytes});
        } else {
            recursive_doubling_allgather(net, mem, AllgatherArgs{mine.data(), recv.data(), bytes});
        }
        results[std::size_t(r)] = recv;
    });
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " total=" << blocks.total() << " rank=" << r << " in_place=" << in_place);
        REQUIRE(first_difference(results[std::size_t(r)], expected) == "");
        CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(floor_lg(P) + 2));
    }
}

std::vector<std::size_t> equal_bytes(int P, std::size_t c) { return std::vector<std::size_t>(std::size_t(P), c); }
std::vector<std::size_t> irregular_bytes(int P, std::size_t c) // zeros and very uneven blocks
{
    std::vector<std::size_t> v;
    for (int i = 0; i < P; ++i) {
        const std::size_t h = (std::size_t(i) * 2654435761u + c) % 7;
        v.push_back(h < 2 ? 0 : c * h / 4 + h % 3);
    }
    return v;
}

} // namespace

TEST_CASE("recursive_doubling allreduce: int32 sum, every P, every count, in place and not",
          "[recursive_doubling][allreduce]")
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true}) check_allreduce(P, count, sum, typed_input<std::int32_t>(), in_place);
}

TEST_CASE("recursive_doubling allreduce: other types and ops", "[recursive_doubling][allreduce]")
{
    const std::vector<std::pair<Reduction, InputFn>> ops{
        {kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), typed_input<float>()},
        {kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(1)},
        {kernel(LOOM_OP_MIN, LOOM_TYPE_DOUBLE), typed_input<double>(2)},
        {kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(3)},
        {kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), typed_input<std::int64_t>(4)}};
    for (int P : {2, 3, 5, 6, 7, 8, 12, 13})
        for (std::size_t count :
             {std::size_t(0), std::size_t(1), std::size_t(P - 1), std::size_t(31), std::size_t(1000)})
            for (const auto& [op, make] : ops)
                for (bool in_place : {false, true}) check_allreduce(P, count, op, make, in_place);
}

TEST_CASE("recursive_doubling allreduce: non-commutative matrix product keeps rank order, every P",
          "[recursive_doubling][allreduce][noncommutative]")
{
    // Sanity: the reference op really does not commute on these inputs.
    {
        Bytes a = matmul_input(0, 3), b = matmul_input(1, 3), ab = b, ba = a;
        matmul_fn(a.data(), ab.data(), 3, nullptr);
        matmul_fn(b.data(), ba.data(), 3, nullptr);
        REQUIRE(ab != ba);
    }
    for (int P : comm_sizes())
        for (std::size_t count : {std::size_t(1), std::size_t(3), std::size_t(P), std::size_t(257)})
            for (bool in_place : {false, true})
                check_allreduce(
                    P, count, matmul(), [](int r, std::size_t n) { return matmul_input(r, n); }, in_place);
}

TEST_CASE("recursive_doubling allgather: equal and irregular blocks, every P, in place and not",
          "[recursive_doubling][allgather]")
{
    for (int P : comm_sizes())
        for (std::size_t c : counts_for(P)) {
            const std::size_t per_rank = P <= 8 ? c : c / 4; // bytes; keep big P quick
            for (bool in_place : {false, true}) {
                check_allgather(P, equal_bytes(P, per_rank), in_place);
                check_allgather(P, irregular_bytes(P, per_rank), in_place);
            }
        }
}

TEST_CASE("recursive_doubling barrier: no rank leaves before every rank entered, every P",
          "[recursive_doubling][barrier]")
{
    for (int P : comm_sizes()) {
        // Each rank in turn is late: every other rank must still be waiting for it.
        for (int late : {0, P / 2, P - 1}) {
            std::atomic<int> entered{0};
            std::atomic<int> early_exits{0};
            const auto stats = run_ranks(P, [&](InprocTransport& net) {
                HostMemory mem;
                if (net.rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(2));
                entered.fetch_add(1);
                recursive_doubling_barrier(net, mem, BarrierArgs{});
                if (entered.load() != P) early_exits.fetch_add(1);
            });
            INFO("P=" << P << " late rank=" << late);
            CHECK(early_exits.load() == 0);
            for (int r = 0; r < P; ++r) {
                CHECK(stats.bytes_sent[std::size_t(r)] == 0);
                CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(floor_lg(P) + 1));
            }
        }
    }
}

TEST_CASE("recursive_doubling allreduce accepts non-commutative ops", "[recursive_doubling][registry]")
{
    const Algorithm* algo = find_algorithm(Collective::allreduce, "recursive_doubling");
    REQUIRE(algo != nullptr);
    CHECK_FALSE(why_not(*algo, CallShape{6, 100, false}).has_value());
    CHECK_FALSE(why_not(*algo, CallShape{6, 100, true}).has_value());
}
