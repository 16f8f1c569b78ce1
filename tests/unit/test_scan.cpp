// Tests of the scan family (algorithms/scan.hpp) on the in-process transport: for every
// algorithm, every P in comm_sizes() and counts_for(P), in place and not, rank r's result must
// be the rank-ordered prefix x_0 op ... op x_r (scan) or x_0 op ... op x_{r-1} (exscan; rank 0's
// buffer untouched), with a commutative kernel and with the non-commutative matmul(); nothing
// past the result may be written and an out-of-place input must stay as it was.
#include "scan.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

struct ScanAlgorithm {
    const char* name;
    void (*run)(Transport&, MemoryOps&, const ScanArgs&);
    bool exclusive;
};
const ScanAlgorithm kScans[] = {{"linear scan", &linear_scan, false},
                                {"recursive_doubling scan", &recursive_doubling_scan, false},
                                {"linear exscan", &linear_exscan, true},
                                {"recursive_doubling exscan", &recursive_doubling_exscan, true}};

void check_scan(const ScanAlgorithm& alg, int P, std::size_t count, const Reduction& op, const InputFn& input,
                bool in_place, std::size_t segment_bytes = 0)
{
    const std::size_t S = count * op.elem_size;
    const auto inputs = all_inputs(P, count, input);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO(alg.name << " P=" << P << " count=" << count << " in_place=" << in_place << " commutative="
                  << op.commutative << " segment=" << segment_bytes);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const auto r = std::size_t(net.rank());
        Bytes recv(S + kGuard, kCanary);
        HostMemory mem;
        if (in_place) {
            std::copy(inputs[r].begin(), inputs[r].end(), recv.begin());
            alg.run(net, mem, ScanArgs{nullptr, recv.data(), count, op, segment_bytes});
        } else {
            const Bytes send = inputs[r];
            alg.run(net, mem, ScanArgs{send.data(), recv.data(), count, op, segment_bytes});
            rank_check_bytes(send, inputs[r], "out of place, the input was written");
        }
        results[r] = std::move(recv);
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        const auto& got = results[std::size_t(r)];
        const int last = alg.exclusive ? r - 1 : r; // the result reduces ranks 0..last
        if (last >= 0) {
            const std::vector<Bytes> below(inputs.begin(), inputs.begin() + last + 1);
            REQUIRE(first_difference(prefix(got, S), fold(op, below, count), op.elem_size) == "");
        } else if (in_place) { // exscan's rank 0: left as it was
            REQUIRE(first_difference(prefix(got, S), inputs[0], op.elem_size) == "");
        } else {
            for (std::size_t i = 0; i < S; ++i) REQUIRE(got[i] == kCanary);
        }
        for (std::size_t i = S; i < S + kGuard; ++i) REQUIRE(got[i] == kCanary);
        if (std::string(alg.name).starts_with("linear") && segment_bytes == 0 && S <= (std::size_t(256) << 10)) {
            // One message of S to the next rank, none from the last.
            CHECK(stats.messages_sent[std::size_t(r)] == (count == 0 || r == P - 1 ? 0u : 1u));
            CHECK(stats.bytes_sent[std::size_t(r)] == (r == P - 1 ? 0 : S));
        }
    }
}

} // namespace

TEST_CASE("scan and exscan: int32 sum, every P and count, in place and not", "[scan]")
{
    for (const ScanAlgorithm& alg : kScans)
        for (int P : comm_sizes())
            for (std::size_t count : counts_for(P))
                for (bool in_place : {false, true})
                    check_scan(alg, P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>(),
                               in_place);
}

TEST_CASE("scan and exscan keep rank order: matmul, every P", "[scan]")
{
    for (const ScanAlgorithm& alg : kScans)
        for (int P : comm_sizes())
            for (std::size_t count : counts_for(P))
                for (bool in_place : {false, true})
                    check_scan(alg, P, std::min<std::size_t>(count, 4099), matmul(), &matmul_input, in_place);
}

TEST_CASE("scan and exscan: double max and uint8 sum (wrapping)", "[scan]")
{
    for (const ScanAlgorithm& alg : kScans)
        for (int P : {1, 2, 3, 7, 16, 33})
            for (std::size_t count : {std::size_t(1), std::size_t(37), std::size_t(1000)}) {
                check_scan(alg, P, count, kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(), false);
                check_scan(alg, P, count, kernel(LOOM_OP_SUM, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(3), true);
            }
}

TEST_CASE("linear scan and exscan in segments: every segment count, partial last segment", "[scan]")
{
    // Segments of 1 element, of a few, of one byte (rounded up to one element), and the last
    // segment short; int32 sum and the non-commutative matmul.
    for (const ScanAlgorithm& alg : kScans) {
        if (!std::string(alg.name).starts_with("linear")) continue;
        for (int P : {1, 2, 3, 5, 8, 13})
            for (std::size_t segment : {std::size_t(1), std::size_t(4), std::size_t(12), std::size_t(1000)})
                for (bool in_place : {false, true}) {
                    check_scan(alg, P, 37, kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>(),
                               in_place, segment);
                    check_scan(alg, P, 9, matmul(), &matmul_input, in_place, segment * 16);
                }
    }
}
