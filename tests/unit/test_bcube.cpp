// BCube allreduce (algorithms/bcube.hpp) on the in-process transport: every P of comm_sizes()
// and some larger, radices 2, 3, 4, 8, 16 and 0 (the default), the counts of counts_for(P), in
// place and not, int32 sums against the rank-ordered fold(); float sums of inexact values, whose
// result depends on the order of the additions, must still be the same bits on every rank (each
// element reduced once, then copied); double max and uint8 bxor; the bytes, messages and waits
// of a full grid and of a folded one are those the header gives; and the registry's record.
#include "bcube.hpp"
#include "registry.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;
constexpr std::size_t kRadices[] = {0, 2, 3, 4, 8, 16};

struct Case {
    Reduction op;
    InputFn input;
};

// Every rank's result (with the guard after it), checked for the guard and, out of place, an
// untouched input.
std::vector<Bytes> run(int P, std::size_t count, const Case& c, bool in_place, std::size_t radix,
                       RunStats* stats = nullptr)
{
    const std::size_t S = count * c.op.elem_size;
    const auto inputs = all_inputs(P, count, c.input);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    const RunStats s = run_ranks(P, [&](InprocTransport& net) {
        const auto r = std::size_t(net.rank());
        Bytes recv(S + kGuard, kCanary);
        HostMemory mem;
        AllreduceArgs a{nullptr, recv.data(), count, c.op};
        a.radix = radix;
        if (in_place) {
            std::copy(inputs[r].begin(), inputs[r].end(), recv.begin());
            bcube_allreduce(net, mem, a);
        } else {
            const Bytes send = inputs[r];
            a.sendbuf = send.data();
            bcube_allreduce(net, mem, a);
            rank_check_bytes(send, inputs[r], "out of place, the input was written");
        }
        rank_check(std::all_of(recv.end() - kGuard, recv.end(), [](std::byte b) { return b == kCanary; }),
                   "a byte past the result was written");
        recv.resize(S);
        results[r] = std::move(recv);
    });
    if (stats != nullptr) *stats = s;
    return results;
}

void check(int P, std::size_t count, const Case& c, bool in_place, std::size_t radix)
{
    INFO("P=" << P << " count=" << count << " in_place=" << in_place << " radix=" << radix);
    const auto results = run(P, count, c, in_place, radix);
    const Bytes expected = fold(c.op, all_inputs(P, count, c.input), count);
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(results[std::size_t(r)], expected, c.op.elem_size) == "");
    }
}

// Floats whose sums round differently in different orders.
Bytes inexact_floats(int rank, std::size_t count)
{
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i)
        v[i] = 0.1f * float(rank + 1) + 1e-3f * float((i * 13 + std::size_t(rank) * 5) % 17) + 1e7f * float(i % 3 == 0);
    return as_bytes(v);
}

// The grid's size (bcube.hpp): P if its prime factors are at most B, else c B^m.
int grid_size(int P, int B)
{
    int n = P;
    for (int p = 2; p <= B; ++p)
        while (n % p == 0) n /= p;
    if (n == 1) return P;
    int m = 1;
    while (m <= P / B) m *= B;
    return m * (P / m);
}

} // namespace

TEST_CASE("bcube allreduce: int32 sum, every P, count and radix, in place and not", "[bcube][allreduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>()};
    for (int P : comm_sizes())
        for (std::size_t radix : kRadices)
            for (std::size_t count : counts_for(P))
                for (bool in_place : {false, true})
                    if (count <= 10007 || radix == 3 || radix == 4) check(P, count, sum, in_place, radix);
}

TEST_CASE("bcube allreduce: larger P, grids and folds", "[bcube][allreduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>()};
    // 121 = 11^2 (a grid at radix >= 11, folded below), 125 = 5^3, 128 = 2^7, 162 = 2 x 3^4,
    // 131 prime: folded at every radix.
    for (int P : {121, 125, 128, 131, 162})
        for (std::size_t radix : {2, 3, 4, 5, 8, 11, 16})
            for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(P - 1), std::size_t(1031)})
                check(P, count, sum, count == 1031, radix);
}

TEST_CASE("bcube allreduce: float sums are the same bits on every rank", "[bcube][allreduce]")
{
    const Case fsum{kernel(LOOM_OP_SUM, LOOM_TYPE_FLOAT), &inexact_floats};
    for (int P : comm_sizes())
        for (std::size_t radix : {2, 3, 4, 8})
            for (std::size_t count : {std::size_t(P) + 1, std::size_t(997)}) {
                INFO("P=" << P << " count=" << count << " radix=" << radix);
                const auto results = run(P, count, fsum, P % 2 == 0, radix);
                // Near the sum in double (the order of the additions may differ from rank order).
                std::vector<double> want(count, 0.0);
                for (int r = 0; r < P; ++r) {
                    const Bytes in = inexact_floats(r, count);
                    for (std::size_t i = 0; i < count; ++i) {
                        float x;
                        std::memcpy(&x, in.data() + i * 4, 4);
                        want[i] += x;
                    }
                }
                for (int r = 0; r < P; ++r) {
                    INFO("rank=" << r);
                    REQUIRE(results[std::size_t(r)] == results[0]);
                }
                for (std::size_t i = 0; i < count; ++i) {
                    float got;
                    std::memcpy(&got, results[0].data() + i * 4, 4);
                    REQUIRE(std::fabs(double(got) - want[i]) <= 1e-5 * std::fabs(want[i]) + 1e-3);
                }
            }
}

TEST_CASE("bcube allreduce: double max and uint8 bxor", "[bcube][allreduce]")
{
    const Case dmax{kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE), typed_input<double>(5)};
    const Case bxor{kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), [](int rank, std::size_t count) {
                        Bytes b = pattern(rank, count);
                        return b;
                    }};
    for (int P : {1, 2, 3, 5, 6, 7, 9, 12, 16, 17, 27, 33})
        for (std::size_t radix : {2, 3, 4, 8})
            for (std::size_t count : {std::size_t(1), std::size_t(P - 1), std::size_t(101), std::size_t(4099)})
                for (bool in_place : {false, true}) {
                    check(P, count, dmax, in_place, radix);
                    check(P, count, bxor, in_place, radix);
                }
}

TEST_CASE("bcube allreduce: a full grid moves 2(P-1)/P S in 2 log_B P steps of B-1 messages", "[bcube][allreduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>()};
    struct Grid {
        int P;
        std::size_t radix, digits;
    };
    for (const Grid g : {Grid{4, 2, 2}, Grid{8, 2, 3}, Grid{9, 3, 2}, Grid{16, 4, 2}, Grid{64, 4, 3}, Grid{64, 8, 2},
                         Grid{27, 3, 3}, Grid{16, 16, 1}, Grid{64, 0, 3}}) {
        const std::size_t B = g.radix == 0 ? kDefaultRadix : g.radix, count = 5 * std::size_t(g.P);
        INFO("P=" << g.P << " radix=" << g.radix);
        RunStats stats;
        run(g.P, count, sum, false, g.radix, &stats);
        for (int r = 0; r < g.P; ++r) {
            INFO("rank=" << r);
            CHECK(stats.bytes_sent[std::size_t(r)] == 2 * (count - count / std::size_t(g.P)) * 4);
            CHECK(stats.messages_sent[std::size_t(r)] == 2 * g.digits * (B - 1));
            CHECK(stats.waits[std::size_t(r)] == 2 * g.digits);
        }
    }
}

TEST_CASE("bcube allreduce: off the grid, each extra rank folds into one partner", "[bcube][allreduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>()};
    // P = 6 at radix 4 is the grid 3 x 2 (no fold); 7 at radix 4 folds into 4; 11 into 8 (4 x 2);
    // 6 at radix 2 into 4; 100 at radix 16 (5^2 x 2^2: 10 x 10, a grid); 101 into 96 (16 x 6).
    for (const auto& [P, radix] :
         std::vector<std::pair<int, int>>{{6, 4}, {7, 4}, {11, 4}, {6, 2}, {100, 16}, {101, 16}}) {
        const int Q = grid_size(P, radix);
        const std::size_t count = 7 * std::size_t(P), S = count * 4;
        INFO("P=" << P << " radix=" << radix << " grid=" << Q);
        RunStats stats;
        run(P, count, sum, true, std::size_t(radix), &stats);
        for (int r = Q; r < P; ++r) {
            INFO("extra rank " << r);
            CHECK(stats.bytes_sent[std::size_t(r)] == S);
            CHECK(stats.waits[std::size_t(r)] == 2);
        }
        // The same steps on every rank of the grid (rank Q-1 is no partner: P - Q < Q), two more
        // on a partner, which also sends S back.
        const std::size_t steps = stats.waits[std::size_t(Q - 1)], sent = stats.bytes_sent[std::size_t(Q - 1)];
        for (int r = 0; r < Q; ++r) {
            INFO("grid rank " << r);
            const bool partner = r + Q < P;
            CHECK(stats.waits[std::size_t(r)] == steps + (partner ? 2 : 0));
            CHECK(stats.bytes_sent[std::size_t(r)] >= sent + (partner ? S : 0) - 4 * 16); // parts differ by 1
        }
    }
    CHECK(grid_size(6, 4) == 6);
    CHECK(grid_size(7, 4) == 4);
    CHECK(grid_size(11, 4) == 8);
    CHECK(grid_size(101, 16) == 96);
}

TEST_CASE("bcube is registered for commutative allreduces and reads the radix", "[bcube][registry]")
{
    const Algorithm* a = find_algorithm(Collective::allreduce, "bcube");
    REQUIRE(a != nullptr);
    CHECK(a->reads.radix);
    CHECK(a->needs.commutative_op);
    CHECK_FALSE(why_not(*a, CallShape{7, 1000, true}).has_value());
    CHECK(why_not(*a, CallShape{7, 1000, false}).has_value());
}
