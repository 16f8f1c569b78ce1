// Tests of the scan family (algorithms/scan.hpp) on the in-process transport: for every P in
// comm_sizes() and counts_for(P), in place and not, rank r's result must be the rank-ordered
// prefix x_0 op ... op x_r, with a commutative kernel and with the non-commutative matmul();
// nothing past the result may be written and an out-of-place input must stay as it was.
#include "scan.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

void check_scan(int P, std::size_t count, const Reduction& op, const InputFn& input, bool in_place)
{
    const std::size_t S = count * op.elem_size;
    const auto inputs = all_inputs(P, count, input);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " count=" << count << " in_place=" << in_place << " commutative=" << op.commutative);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const auto r = std::size_t(net.rank());
        Bytes recv(S + kGuard, kCanary);
        HostMemory mem;
        if (in_place) {
            std::copy(inputs[r].begin(), inputs[r].end(), recv.begin());
            linear_scan(net, mem, ScanArgs{nullptr, recv.data(), count, op});
        } else {
            const Bytes send = inputs[r];
            linear_scan(net, mem, ScanArgs{send.data(), recv.data(), count, op});
            rank_check_bytes(send, inputs[r], "out of place, the input was written");
        }
        results[r] = std::move(recv);
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        const std::vector<Bytes> below(inputs.begin(), inputs.begin() + r + 1);
        REQUIRE(first_difference(prefix(results[std::size_t(r)], S), fold(op, below, count), op.elem_size) == "");
        for (std::size_t i = S; i < S + kGuard; ++i) REQUIRE(results[std::size_t(r)][i] == kCanary);
        // One message of S to the next rank, none from the last.
        CHECK(stats.messages_sent[std::size_t(r)] == (count == 0 || r == P - 1 ? 0u : 1u));
        CHECK(stats.bytes_sent[std::size_t(r)] == (r == P - 1 ? 0 : S));
    }
}

} // namespace

TEST_CASE("linear scan: int32 sum, every P and count, in place and not", "[scan]")
{
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true})
                check_scan(P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>(), in_place);
}

TEST_CASE("linear scan keeps rank order: matmul, every P", "[scan]")
{
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true})
                check_scan(P, std::min<std::size_t>(count, 4099), matmul(), &matmul_input, in_place);
}

TEST_CASE("linear scan: double max and uint8 sum (wrapping)", "[scan]")
{
    for (int P : {1, 2, 3, 7, 16, 33})
        for (std::size_t count : {std::size_t(1), std::size_t(37), std::size_t(1000)}) {
            check_scan(P, count, kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(), false);
            check_scan(P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(3), true);
        }
}
