// Ring allreduce on the in-process transport, against a sequential reference, for every
// communicator size 1..33 and 64 and the counts that stress the block split.
#include "inproc_transport.hpp"
#include "reduce_kernels.hpp"
#include "registry.hpp"
#include "ring.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace loom;
using loom::test::run_ranks;

namespace {

// Counts that stress the block split: empty, fewer elements than ranks, one per rank, an
// uneven tail, a prime, and a large count.
std::vector<std::size_t> counts_for(int P)
{
    std::vector<std::size_t> c{0, 1, std::size_t(P) + 1, std::size_t(P), 97, 10007};
    if (P > 1) c.push_back(std::size_t(P) - 1);
    if (P <= 8) c.push_back(1u << 18);
    return c;
}

// Rank r's input element i: small values, so float sums are exact in any order.
template <class T>
T input(int r, std::size_t i)
{
    return T((r * 7 + int(i % 13)) % 11) - T(3);
}

template <class T>
void check_allreduce(int P, std::size_t count, loom_op_t op, loom_type_t type, bool in_place)
{
    auto kernel = find_kernel(op, type);
    REQUIRE(kernel);
    // Reference: fold the inputs of ranks 0..P-1 with the same kernel, sequentially.
    std::vector<T> expected(count);
    for (std::size_t i = 0; i < count; ++i) expected[i] = input<T>(P - 1, i);
    for (int r = P - 2; r >= 0; --r) {
        std::vector<T> in(count);
        for (std::size_t i = 0; i < count; ++i) in[i] = input<T>(r, i);
        kernel->fn(in.data(), expected.data(), count, kernel->ctx);
    }

    std::vector<std::vector<T>> results(P);
    auto stats = run_ranks(P, [&](test::InprocTransport& net) {
        const int r = net.rank();
        std::vector<T> send(count), recv(count, T(99));
        for (std::size_t i = 0; i < count; ++i) send[i] = input<T>(r, i);
        HostMemory mem;
        if (in_place) {
            ring_allreduce(net, mem, AllreduceArgs{nullptr, send.data(), count, *kernel});
            results[r] = send;
        } else {
            ring_allreduce(net, mem, AllreduceArgs{send.data(), recv.data(), count, *kernel});
            results[r] = recv;
        }
    });
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " count=" << count << " rank=" << r << " in_place=" << in_place);
        REQUIRE(results[r] == expected);
        // Bandwidth-optimal: 2(P-1) blocks out of P, i.e. each element crosses two links
        // per rank on average; the exact total over all ranks is 2(P-1) x count elements.
    }
    std::size_t total = 0, messages = 0;
    for (int r = 0; r < P; ++r) {
        total += stats.bytes_sent[r];
        messages += stats.messages_sent[r];
        CHECK(stats.messages_sent[r] <= std::size_t(2 * (P - 1)));
    }
    CHECK(total == 2 * std::size_t(P - 1) * count * sizeof(T));
    if (count >= std::size_t(P)) CHECK(messages == std::size_t(2 * P * (P - 1)));
}

} // namespace

TEST_CASE("ring allreduce: int32 sum, every P in 1..33 and 64, in place and not", "[ring][allreduce]")
{
    std::vector<int> sizes;
    for (int p = 1; p <= 33; ++p) sizes.push_back(p);
    sizes.push_back(64);
    for (int P : sizes)
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true}) check_allreduce<std::int32_t>(P, count, LOOM_OP_SUM, LOOM_TYPE_INT32, in_place);
}

TEST_CASE("ring allreduce: other types and ops", "[ring][allreduce]")
{
    for (int P : {2, 3, 5, 7, 8, 13}) {
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(P - 1), std::size_t(31), std::size_t(1000)}) {
            check_allreduce<float>(P, count, LOOM_OP_SUM, LOOM_TYPE_FLOAT, false);
            check_allreduce<double>(P, count, LOOM_OP_MAX, LOOM_TYPE_DOUBLE, true);
            check_allreduce<double>(P, count, LOOM_OP_MIN, LOOM_TYPE_DOUBLE, false);
            check_allreduce<std::int64_t>(P, count, LOOM_OP_PROD, LOOM_TYPE_INT64, false);
            check_allreduce<std::uint8_t>(P, count, LOOM_OP_BXOR, LOOM_TYPE_UINT8, true);
            check_allreduce<std::int16_t>(P, count, LOOM_OP_LOR, LOOM_TYPE_INT16, false);
        }
    }
}

TEST_CASE("the ring declines non-commutative ops", "[ring][registry]")
{
    const Algorithm* ring = find_algorithm(Collective::allreduce, "ring");
    REQUIRE(ring != nullptr);
    CHECK(why_not(*ring, CallShape{4, 100, false}).has_value());
    CHECK_FALSE(why_not(*ring, CallShape{4, 100, true}).has_value());
    CHECK_FALSE(why_not(*ring, CallShape{7, 0, true}).has_value());
}
