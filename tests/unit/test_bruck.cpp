// Tests of the bruck family: see test_support.hpp for the shared helpers.
// Allgather(v), alltoall and the dissemination barrier on the in-process transport, for every
// P in comm_sizes(), against expected byte patterns, in place and not.
#include "bruck.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16; // canary bytes after every result buffer

int ceil_lg(int P)
{
    int steps = 0;
    while ((1 << steps) < P) ++steps;
    return steps;
}

// Rank i's block of an allgather: pattern(i, bytes[i]).
void check_allgather(int P, const std::vector<std::size_t>& bytes, bool in_place)
{
    const BlockOffsets blocks(bytes);
    std::vector<std::byte> expected;
    for (int i = 0; i < P; ++i) {
        const auto block = pattern(i, bytes[std::size_t(i)]);
        expected.insert(expected.end(), block.begin(), block.end());
    }
    std::vector<std::vector<std::byte>> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " total=" << blocks.total() << " in_place=" << in_place);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto mine = pattern(r, bytes[std::size_t(r)]);
        std::vector<std::byte> recv(blocks.total() + kGuard, kCanary);
        HostMemory mem;
        if (in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin() + std::ptrdiff_t(blocks.begin(r)));
            bruck_allgather(net, mem, AllgatherArgs{nullptr, recv.data(), bytes});
        } else {
            const auto send = mine;
            bruck_allgather(net, mem, AllgatherArgs{send.data(), recv.data(), bytes});
            LOOM_RANK_CHECK(send == mine);
        }
        results[std::size_t(r)] = std::move(recv);
    });
    bool all_nonempty = true;
    for (std::size_t b : bytes) all_nonempty = all_nonempty && b != 0;
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        const auto& got = results[std::size_t(r)];
        REQUIRE(first_difference(prefix(got, expected.size()), expected) == "");
        REQUIRE(std::all_of(got.end() - kGuard, got.end(), [](std::byte b) { return b == kCanary; }));
        CHECK(stats.messages_sent[std::size_t(r)] <= std::size_t(ceil_lg(P)));
        if (all_nonempty) {
            // One message per step.
            CHECK(stats.messages_sent[std::size_t(r)] == std::size_t(ceil_lg(P)));
        }
        if (blocks.total() == 0) CHECK(stats.messages_sent[std::size_t(r)] == 0);
    }
    // Each rank sends P - 1 blocks in all (its own once per step): for equal blocks, (P - 1) x block bytes.
    if (std::all_of(bytes.begin(), bytes.end(), [&](std::size_t b) { return b == bytes[0]; }))
        for (int r = 0; r < P; ++r) CHECK(stats.bytes_sent[std::size_t(r)] == std::size_t(P - 1) * bytes[0]);
}

// Irregular block sizes, some zero, derived from a block-size scale.
std::vector<std::vector<std::size_t>> irregular_sizes(int P, std::size_t scale)
{
    const std::size_t p = std::size_t(P);
    std::vector<std::vector<std::size_t>> cases;
    std::vector<std::size_t> v(p);
    for (std::size_t i = 0; i < p; ++i) v[i] = (i % 3 == 1) ? 0 : (i * 37 + 11) % (scale + 1); // every third empty
    cases.push_back(v);
    for (std::size_t i = 0; i < p; ++i) v[i] = (i == p / 2) ? scale + 3 : 0; // one non-empty block
    cases.push_back(v);
    for (std::size_t i = 0; i < p; ++i) v[i] = (i == 0 || i == p - 1) ? 0 : i % 5 + scale * (i % 2); // ends empty
    cases.push_back(v);
    for (std::size_t i = 0; i < p; ++i) v[i] = (i * i) % 7; // small, several zeros
    cases.push_back(v);
    return cases;
}

void check_alltoall(int P, std::size_t B, bool in_place)
{
    // Rank r's block j (for rank j) is pattern(r, B, j); rank r receives pattern(j, B, r).
    std::vector<std::vector<std::byte>> results(static_cast<std::size_t>(P));
    INFO("P=" << P << " block_bytes=" << B << " in_place=" << in_place);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        std::vector<std::byte> send;
        for (int j = 0; j < P; ++j) {
            const auto block = pattern(r, B, std::size_t(j));
            send.insert(send.end(), block.begin(), block.end());
        }
        std::vector<std::byte> recv(std::size_t(P) * B + kGuard, kCanary);
        HostMemory mem;
        if (in_place) {
            std::copy(send.begin(), send.end(), recv.begin());
            bruck_alltoall(net, mem, AlltoallArgs{nullptr, recv.data(), B});
        } else {
            const auto input = send;
            bruck_alltoall(net, mem, AlltoallArgs{send.data(), recv.data(), B});
            LOOM_RANK_CHECK(send == input);
        }
        results[std::size_t(r)] = std::move(recv);
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        const auto& got = results[std::size_t(r)];
        for (int j = 0; j < P; ++j) {
            INFO("the block from rank " << j);
            REQUIRE(first_difference(std::span(got).subspan(std::size_t(j) * B, B), pattern(j, B, std::size_t(r))) ==
                    "");
        }
        REQUIRE(std::all_of(got.end() - kGuard, got.end(), [](std::byte b) { return b == kCanary; }));
        // One packed message per step; step k carries the blocks whose index has bit k set.
        const std::size_t steps = (P == 1 || B == 0) ? 0 : std::size_t(ceil_lg(P));
        CHECK(stats.messages_sent[std::size_t(r)] == steps);
        std::size_t blocks_sent = 0;
        for (int d = 1; d < P; d *= 2)
            for (int i = 1; i < P; ++i) blocks_sent += (i & d) ? 1 : 0;
        CHECK(stats.bytes_sent[std::size_t(r)] == blocks_sent * B);
    }
}

} // namespace

TEST_CASE("bruck allgather: equal blocks, every P, counts_for(P) bytes per rank", "[bruck][allgather]")
{
    for (int P : comm_sizes())
        for (std::size_t count : counts_for(P))
            for (bool in_place : {false, true})
                check_allgather(P, std::vector<std::size_t>(std::size_t(P), count), in_place);
}

TEST_CASE("bruck allgatherv: irregular block sizes with empty blocks", "[bruck][allgatherv]")
{
    for (int P : comm_sizes())
        for (std::size_t scale : {std::size_t(1), std::size_t(13), std::size_t(1000)})
            for (const auto& bytes : irregular_sizes(P, scale))
                for (bool in_place : {false, true}) check_allgather(P, bytes, in_place);
}

TEST_CASE("bruck alltoall: every P, block bytes 0, 1, 7, 64 and a large block", "[bruck][alltoall]")
{
    for (int P : comm_sizes()) {
        const std::size_t large = P <= 33 ? 4099 : 1031;
        for (std::size_t B : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(64), large})
            for (bool in_place : {false, true}) check_alltoall(P, B, in_place);
    }
}

TEST_CASE("bruck barrier: no rank leaves before every rank has entered", "[bruck][barrier]")
{
    constexpr int kRounds = 3;
    for (int P : comm_sizes()) {
        const auto run = barrier_rounds(P, kRounds, [](InprocTransport& net, MemoryOps& mem) {
            bruck_barrier(net, mem, BarrierArgs{});
        });
        for (int r = 0; r < P; ++r) {
            INFO("P=" << P << " rank=" << r);
            for (int round = 0; round < kRounds; ++round)
                CHECK(run.seen[std::size_t(r)][std::size_t(round)] >= (round + 1) * P);
            CHECK(run.stats.messages_sent[std::size_t(r)] == std::size_t(kRounds * ceil_lg(P)));
            CHECK(run.stats.bytes_sent[std::size_t(r)] == 0);
        }
    }
}
