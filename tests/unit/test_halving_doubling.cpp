// Tests of the halving_doubling family: see test_support.hpp for the shared helpers.
// Allreduce, reduce-scatter (uniform and irregular counts, zeros included) and reduce (several
// roots) on the in-process transport, against the sequential rank-ordered reference, for
// every size in comm_sizes(), in place and not, plus other types and ops at a few sizes.
#include "halving_doubling.hpp"
#include "registry.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <functional>
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
    const auto [results, stats] = run_allreduce(&halving_doubling_allreduce, inputs, count, op, in_place);
    const bool pow2 = (P & (P - 1)) == 0;
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected, es) == "");
        CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(2 * floor_lg(P) + 1));
        // Rabenseifner on a power of two with equal ranges: 2(P-1)/P S out of every rank.
        if (pow2 && count % std::size_t(P) == 0)
            CHECK(stats.bytes_sent[std::size_t(r)] == 2 * std::size_t(P - 1) * (count / std::size_t(P)) * es);
    }
}

// Per-rank counts for reduce-scatter, derived from a total around `c`.
std::vector<std::size_t> uniform_counts(int P, std::size_t c)
{
    return std::vector<std::size_t>(std::size_t(P), (c + std::size_t(P) - 1) / std::size_t(P));
}
std::vector<std::size_t> partition_counts(int P, std::size_t c) // uneven tail, zeros if c < P
{
    const BlockPartition part(c, P);
    std::vector<std::size_t> v;
    for (int i = 0; i < P; ++i) v.push_back(part.length(i));
    return v;
}
std::vector<std::size_t> irregular_counts(int P, std::size_t c) // zeros and very uneven blocks
{
    std::vector<std::size_t> v;
    for (int i = 0; i < P; ++i) {
        const std::size_t h = (std::size_t(i) * 2654435761u + c) % 7;
        v.push_back(h < 2 ? 0 : (c / std::size_t(P)) * h / 4 + h % 3);
    }
    return v;
}

void check_reduce_scatter(int P, const std::vector<std::size_t>& counts, const Reduction& op, const InputFn& make,
                          bool in_place)
{
    const std::size_t es = op.elem_size;
    const BlockOffsets blocks(counts);
    const std::size_t total = blocks.total();
    const auto inputs = all_inputs(P, total, make);
    const Bytes full = fold(op, inputs, total);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " total=" << total << " in_place=" << in_place);
    run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        Bytes send = inputs[std::size_t(r)], recv(counts[std::size_t(r)] * es, std::byte{0x5a});
        HostMemory mem;
        if (in_place) {
            halving_doubling_reduce_scatter(net, mem, ReduceScatterArgs{nullptr, send.data(), counts, op});
            rank_check(tail_intact(send, inputs[std::size_t(r)], counts[std::size_t(r)] * es),
                       "in place, the input past the result was changed");
            send.resize(counts[std::size_t(r)] * es);
            results[std::size_t(r)] = send;
        } else {
            halving_doubling_reduce_scatter(net, mem, ReduceScatterArgs{send.data(), recv.data(), counts, op});
            results[std::size_t(r)] = recv;
        }
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r << " count=" << counts[std::size_t(r)]);
        const auto block = std::span(full).subspan(blocks.begin(r) * es, blocks.length(r) * es);
        REQUIRE(first_difference(results[std::size_t(r)], block, es) == "");
    }
}

void check_reduce(int P, std::size_t count, int root, const Reduction& op, const InputFn& make, bool in_place)
{
    const std::size_t es = op.elem_size;
    const auto inputs = all_inputs(P, count, make);
    const Bytes expected = fold(op, inputs, count);
    Bytes result;
    INFO("P=" << P << " count=" << count << " root=" << root << " in_place=" << in_place);
    run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        Bytes send = inputs[std::size_t(r)];
        HostMemory mem;
        if (r != root) { // no result buffer off the root
            halving_doubling_reduce(net, mem, ReduceArgs{send.data(), nullptr, count, op, root});
        } else if (in_place) {
            halving_doubling_reduce(net, mem, ReduceArgs{nullptr, send.data(), count, op, root});
            result = send;
        } else {
            Bytes recv(count * es, std::byte{0x5a});
            halving_doubling_reduce(net, mem, ReduceArgs{send.data(), recv.data(), count, op, root});
            result = recv;
        }
    });
    REQUIRE(first_difference(result, expected, es) == "");
}

std::vector<int> roots_for(int P)
{
    std::vector<int> roots{0, P / 2, P - 1};
    if (P > 2) roots.push_back(2); // an even rank inside the fold pairs for most P
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    return roots;
}

// Other types and ops, at a few sizes (powers of two and not).
const std::vector<int> kFewSizes{2, 3, 5, 6, 7, 8, 12, 13};
std::vector<std::size_t> few_counts(int P) { return {0, 1, std::size_t(P - 1), 31, 1000}; }

struct TypedOp {
    Reduction op;
    InputFn make;
};
std::vector<TypedOp> other_ops()
{
    return {{kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), typed_input<float>()},
            {kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(1)},
            {kernel(LOOM_OP_MIN, LOOM_TYPE_DOUBLE), typed_input<double>(2)},
            {kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(3)},
            {kernel(LOOM_OP_PROD, LOOM_TYPE_INT64), typed_input<std::int64_t>(4)}};
}

} // namespace

TEST_CASE("halving_doubling allreduce: int32 sum, every P, every count, in place and not",
          "[halving_doubling][allreduce]")
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true}) check_allreduce(P, count, sum, typed_input<std::int32_t>(), in_place);
}

TEST_CASE("halving_doubling allreduce: other types and ops", "[halving_doubling][allreduce]")
{
    for (int P : kFewSizes)
        for (std::size_t count : few_counts(P))
            for (const auto& t : other_ops())
                for (bool in_place : {false, true}) check_allreduce(P, count, t.op, t.make, in_place);
}

TEST_CASE("halving_doubling reduce_scatter: int32 sum, uniform and irregular counts",
          "[halving_doubling][reduce_scatter]")
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes())
        for (std::size_t c : counts_for(P))
            for (auto counts_of : {uniform_counts, partition_counts, irregular_counts})
                for (bool in_place : {false, true})
                    check_reduce_scatter(P, counts_of(P, c), sum, typed_input<std::int32_t>(), in_place);
}

TEST_CASE("halving_doubling reduce_scatter: other types and ops", "[halving_doubling][reduce_scatter]")
{
    for (int P : kFewSizes)
        for (std::size_t c : few_counts(P))
            for (const auto& t : other_ops())
                for (bool in_place : {false, true}) {
                    check_reduce_scatter(P, uniform_counts(P, c), t.op, t.make, in_place);
                    check_reduce_scatter(P, irregular_counts(P, c), t.op, t.make, in_place);
                }
}

TEST_CASE("halving_doubling reduce: int32 sum, every P, roots 0, P/2, P-1 and 2", "[halving_doubling][reduce]")
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (int root : roots_for(P))
                for (bool in_place : {false, true})
                    check_reduce(P, count, root, sum, typed_input<std::int32_t>(), in_place);
}

TEST_CASE("halving_doubling reduce: other types and ops", "[halving_doubling][reduce]")
{
    for (int P : kFewSizes)
        for (std::size_t count : few_counts(P))
            for (const auto& t : other_ops())
                for (int root : roots_for(P)) check_reduce(P, count, root, t.op, t.make, root % 2 == 0);
}

TEST_CASE("halving_doubling declines non-commutative ops", "[halving_doubling][registry]")
{
    for (Collective c :
         {Collective::allreduce, Collective::reduce_scatter, Collective::reduce_scatter_block, Collective::reduce}) {
        const Algorithm* algo = find_algorithm(c, "halving_doubling");
        REQUIRE(algo != nullptr);
        CHECK(why_not(*algo, CallShape{6, 100, false}).has_value());
        CHECK_FALSE(why_not(*algo, CallShape{6, 100, true}).has_value());
    }
}
