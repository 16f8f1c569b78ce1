// The neighbourhood collectives' linear algorithm (algorithms/neighbour.hpp) on the in-process
// transport: every test topology of topologies_for(P) (Cartesian grids of 1-3 dimensions,
// periodic or not, with dimensions of size 1 and 2; graphs and dist graphs with and without
// repeated edges and self loops) at every P of comm_sizes(), for the allgather (one block to
// every destination) and alltoall forms, with equal blocks (0, 1, odd, large) and sizes that
// differ block by block (zeros among them). Every receive block must hold the send block that
// block_source (tests/support/neighbourhoods.hpp) names, computed from MPI's definition; a block
// of kNoNeighbour and the bytes past the output stay as they were, the input is left alone, and
// the messages and waits are those the header promises.
#include "neighbour.hpp"
#include "neighbourhoods.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

// The bytes of rank q's send block b.
using Sizes = std::function<std::size_t(int q, int b)>;

struct Outcome {
    RunStats stats;
    std::vector<std::size_t> messages; // per rank: the messages it should send
};

Outcome check(const Topology& t, bool same_block, const Sizes& bytes)
{
    const int P = t.size();
    Outcome out{{}, std::vector<std::size_t>(std::size_t(P), 0)};
    out.stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& dst = t.destinations[std::size_t(r)];
        const auto& src = t.sources[std::size_t(r)];
        std::vector<std::size_t> send_bytes, recv_bytes;
        Bytes send, want;
        const std::size_t blocks = same_block ? 1 : dst.size();
        for (std::size_t b = 0; b < blocks; ++b) {
            send_bytes.push_back(bytes(r, int(b)));
            for (std::size_t i = 0; i < send_bytes.back(); ++i) send.push_back(tag(r, int(b) + 1, i));
        }
        for (std::size_t i = 0; i < dst.size(); ++i) {
            const std::size_t n = send_bytes[same_block ? 0 : i];
            if (dst[i] != kNoNeighbour && dst[i] != r && n != 0) ++out.messages[std::size_t(r)];
        }
        for (std::size_t j = 0; j < src.size(); ++j) {
            const BlockSource s = block_source(t, r, int(j));
            // A kNoNeighbour block: any size (here 3), never written.
            const std::size_t n = s.rank < 0 ? 3 : bytes(s.rank, same_block ? 0 : s.block);
            recv_bytes.push_back(n);
            for (std::size_t i = 0; i < n; ++i)
                want.push_back(s.rank < 0 ? kCanary : tag(s.rank, (same_block ? 0 : s.block) + 1, i));
        }
        CountingMemory mem;
        Bytes recv(want.size() + kGuard, kCanary);
        const Bytes kept = send;
        NeighbourArgs args{t.of(r), send.data(), recv.data(), send_bytes, recv_bytes, same_block};
        linear_neighbour(net, mem, args);
        rank_check_bytes(send, kept, "the input was written");
        rank_check_bytes(prefix(recv, want.size()), want, "the blocks received (a kNoNeighbour block untouched)");
        rank_check(std::all_of(recv.end() - kGuard, recv.end(), [](std::byte b) { return b == kCanary; }),
                   "a byte past the output was written");
        rank_check(mem.peak() == 0, "scratch memory used");
    });
    return out;
}

void check_all(const Topology& t, bool same_block, const Sizes& bytes, const std::string& sizes)
{
    INFO(t.name << ", " << (same_block ? "allgather" : "alltoall") << ", " << sizes);
    const Outcome o = check(t, same_block, bytes);
    for (int r = 0; r < t.size(); ++r) {
        INFO("rank " << r);
        CHECK(o.stats.messages_sent[std::size_t(r)] == o.messages[std::size_t(r)]);
        CHECK(o.stats.waits[std::size_t(r)] <= 1); // one round
    }
}

} // namespace

TEST_CASE("linear neighbour exchange: every block from its sender, over every test topology", "[neighbour]")
{
    for (int P : comm_sizes())
        for (const Topology& t : topologies_for(P, std::uint32_t(P) * 3 + 1))
            for (bool same_block : {true, false}) {
                const std::size_t large = P <= 8 ? 40000 : P <= 33 ? 4099 : 257;
                for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), large})
                    check_all(t, same_block, [n](int, int) { return n; }, "blocks of " + std::to_string(n));
                // Sizes by sender and block, zeros among them (a pair agrees: the receiver reads
                // the sender's size through block_source).
                check_all(t, same_block, [](int q, int b) { return std::size_t((q * 7 + b * 3) % 11); }, "mixed");
            }
}

TEST_CASE("linear neighbour exchange: a periodic dimension of size 2 keeps its two directions apart",
          "[neighbour]")
{
    // Rank 0 of a periodic ring of 2 sends block 0 (to its -1 neighbour, rank 1) and block 1 (to
    // its +1 neighbour, rank 1 too): rank 1 receives block 0 at its +1 side (block 1) and block 1
    // at its -1 side (block 0), though both come from one rank with one tag.
    const Topology ring = cartesian({2}, {1});
    REQUIRE(block_source(ring, 1, 0).block == 1);
    REQUIRE(block_source(ring, 1, 1).block == 0);
    check_all(ring, false, [](int q, int b) { return std::size_t(5 + q + 2 * b); }, "sizes by direction");
    // Size 1: the rank's own blocks, swapped, by local copy (no message).
    const Topology self = cartesian({1, 1}, {1, 1});
    const Outcome o = check(self, false, [](int, int b) { return std::size_t(3 + b); });
    CHECK(o.stats.messages_sent[0] == 0);
}
