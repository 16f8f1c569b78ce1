// Tests of the k-nomial family (algorithms/knomial.hpp) on the in-process transport: bcast and
// order-preserving reduce for every P in comm_sizes(), radices 2, 3, 4, 8 and 16 (and 0: the
// default), roots 0, a middle rank and P-1, in place and not, against pattern() and the
// rank-ordered fold(), with a commutative kernel and with matmul(); allreduce (recursive k-ing)
// gives every rank the same bits; the barrier lets no rank
// out before every rank has entered. The tree's depth bounds each rank's waits.
#include "knomial.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <set>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;
constexpr std::size_t kRadices[] = {0, 2, 3, 4, 8, 16};

// ceil(log_k P): the tree's depth.
std::size_t depth(int P, std::size_t radix)
{
    const long long k = radix == 0 ? static_cast<long long>(kDefaultRadix) : static_cast<long long>(radix);
    std::size_t d = 0;
    for (long long m = 1; m < P; m *= k) ++d;
    return d;
}

std::vector<int> roots_for(int P)
{
    const std::set<int> roots{0, P / 2, P - 1};
    return {roots.begin(), roots.end()};
}

bool guard_intact(const Bytes& buf)
{
    return std::all_of(buf.end() - kGuard, buf.end(), [](std::byte b) { return b == kCanary; });
}

void check_bcast(int P, std::size_t bytes, int root, std::size_t radix)
{
    const auto expected = pattern(root, bytes);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        Bytes buf(bytes + kGuard, kCanary);
        if (r == root) std::copy(expected.begin(), expected.end(), buf.begin());
        HostMemory mem;
        knomial_bcast(net, mem, BcastArgs{buf.data(), bytes, root, 0, nullptr, radix});
        results[std::size_t(r)] = std::move(buf);
    });
    std::size_t messages = 0;
    for (int r = 0; r < P; ++r) {
        INFO("P=" << P << " bytes=" << bytes << " root=" << root << " radix=" << radix << " rank=" << r);
        REQUIRE(first_difference(prefix(results[std::size_t(r)], bytes), expected) == "");
        REQUIRE(guard_intact(results[std::size_t(r)]));
        // At most k-1 children a level: the root sends at most (k-1) ceil(log_k P).
        const std::size_t k = radix == 0 ? kDefaultRadix : radix;
        CHECK(stats.messages_sent[std::size_t(r)] <= (bytes == 0 ? 0 : (k - 1) * depth(P, radix)));
        messages += stats.messages_sent[std::size_t(r)];
    }
    // Every rank but the root receives the data exactly once.
    CHECK(messages == (bytes == 0 ? 0 : std::size_t(P - 1)));
}

struct Case {
    Reduction op;
    Bytes (*input)(int rank, std::size_t count);
};
template <class T>
Bytes typed(int rank, std::size_t count)
{
    return as_bytes(rank_input<T>(rank, count));
}

void check_reduce(int P, std::size_t count, const Case& c, int root, bool in_place, std::size_t radix)
{
    const Reduction& op = c.op;
    const std::size_t S = count * op.elem_size;
    std::vector<Bytes> inputs;
    for (int r = 0; r < P; ++r) inputs.push_back(c.input(r, count));
    const auto expected = fold(op, inputs, count);
    Bytes result;
    INFO("P=" << P << " count=" << count << " root=" << root << " in_place=" << in_place << " radix=" << radix
              << " commutative=" << op.commutative);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& mine = inputs[std::size_t(r)];
        HostMemory mem;
        if (r != root) {
            const auto send = mine; // non-roots pass no recvbuf; their sendbuf stays intact
            knomial_reduce(net, mem, ReduceArgs{send.data(), nullptr, count, op, root, nullptr, radix});
            LOOM_RANK_CHECK(send == mine);
            return;
        }
        Bytes recv(S + kGuard, kCanary);
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin());
            knomial_reduce(net, mem, ReduceArgs{nullptr, recv.data(), count, op, root, nullptr, radix});
        } else {
            const auto send = mine;
            knomial_reduce(net, mem, ReduceArgs{send.data(), recv.data(), count, op, root, nullptr, radix});
            LOOM_RANK_CHECK(send == mine);
        }
        result = std::move(recv);
    });
    REQUIRE(first_difference(prefix(result, S), expected, op.elem_size) == "");
    REQUIRE(guard_intact(result));
    for (int r = 0; r < P; ++r) {
        // Every rank but the root sends its partial result once; a rank waits once per level it
        // owns and once for its parent.
        CHECK(stats.messages_sent[std::size_t(r)] == (count == 0 || r == root ? 0u : 1u));
        CHECK(stats.bytes_sent[std::size_t(r)] == (r == root ? 0 : S));
        CHECK(stats.waits[std::size_t(r)] <= depth(P, radix == 0 ? kDefaultRadix : radix) + 1);
    }
}

} // namespace

TEST_CASE("knomial bcast: every P, root and radix", "[knomial][bcast]")
{
    for (int P : comm_sizes())
        for (std::size_t radix : kRadices)
            for (int root : roots_for(P))
                for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(P), std::size_t(4099)})
                    check_bcast(P, bytes, root, radix);
}

TEST_CASE("knomial reduce: int32 sum, every P, count, root and radix, in place and not", "[knomial][reduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), &typed<std::int32_t>};
    for (int P : comm_sizes())
        for (std::size_t radix : kRadices)
            for (int root : roots_for(P))
                for (std::size_t count : counts_for(P))
                    for (bool in_place : {false, true})
                        if (count <= 4099 || radix == 3) check_reduce(P, count, sum, root, in_place, radix);
}

TEST_CASE("knomial reduce keeps rank order: matmul, every P, root and radix", "[knomial][reduce]")
{
    const Case mm{matmul(), &matmul_input};
    for (int P : comm_sizes())
        for (std::size_t radix : kRadices)
            for (int root : roots_for(P))
                for (std::size_t count : {std::size_t(1), std::size_t(P), std::size_t(37)})
                    for (bool in_place : {false, true}) check_reduce(P, count, mm, root, in_place, radix);
}

TEST_CASE("knomial barrier: no rank leaves before every rank has entered", "[knomial][barrier]")
{
    constexpr int kRounds = 3;
    for (std::size_t radix : {std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(16)})
        for (int P : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33}) {
            const auto run = barrier_rounds(P, kRounds, [radix](InprocTransport& net, MemoryOps& mem) {
                knomial_barrier(net, mem, BarrierArgs{radix});
            });
            for (int r = 0; r < P; ++r) {
                INFO("P=" << P << " radix=" << radix << " rank=" << r);
                for (int round = 0; round < kRounds; ++round)
                    CHECK(run.seen[std::size_t(r)][std::size_t(round)] >= (round + 1) * P);
                CHECK(run.stats.bytes_sent[std::size_t(r)] == 0);
            }
        }
}

namespace {
void check_allreduce(int P, std::size_t count, const Case& c, bool in_place, std::size_t radix)
{
    const Reduction& op = c.op;
    const std::size_t S = count * op.elem_size;
    std::vector<Bytes> inputs;
    for (int r = 0; r < P; ++r) inputs.push_back(c.input(r, count));
    const auto expected = fold(op, inputs, count);
    std::vector<Bytes> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " count=" << count << " in_place=" << in_place << " radix=" << radix);
    run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& mine = inputs[std::size_t(r)];
        Bytes recv(S + kGuard, kCanary);
        HostMemory mem;
        AllreduceArgs a{nullptr, recv.data(), count, op};
        a.radix = radix;
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin());
            knomial_allreduce(net, mem, a);
        } else {
            const auto send = mine;
            a.sendbuf = send.data();
            knomial_allreduce(net, mem, a);
            LOOM_RANK_CHECK(send == mine);
        }
        results[std::size_t(r)] = std::move(recv);
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        REQUIRE(first_difference(prefix(results[std::size_t(r)], S), expected, op.elem_size) == "");
        REQUIRE(guard_intact(results[std::size_t(r)]));
        // Every rank gets the same bits.
        REQUIRE(results[std::size_t(r)] == results[0]);
    }
}
} // namespace

TEST_CASE("knomial allreduce: int32 and double sums, every P, count and radix, in place and not",
          "[knomial][allreduce]")
{
    const Case sum{kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), &typed<std::int32_t>};
    const Case dsum{kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE), &typed<double>};
    for (int P : comm_sizes())
        for (std::size_t radix : kRadices)
            for (std::size_t count : counts_for(P))
                for (bool in_place : {false, true}) {
                    if (count > 4099 && radix != 3) continue;
                    check_allreduce(P, count, sum, in_place, radix);
                    if (count <= 97) check_allreduce(P, count, dsum, in_place, radix);
                }
}
