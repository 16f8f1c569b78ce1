// Tests of the gather family (algorithms/gather.hpp) on the in-process transport: linear,
// binomial and k-nomial (radices 2, 3, 4, 16) for every P in comm_sizes(), roots 0, a middle
// rank and P-1, equal blocks of 0, 1, odd and large sizes and unequal blocks (some empty), in
// place and not. The root's recvbuf must hold every block in rank order and nothing past it;
// another rank's sendbuf must stay as it was and its recvbuf (nullptr) is never touched; the
// staged form (a non-root's own block in place in a buffer) must not write outside it.
#include "gather.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <set>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

struct Named {
    const char* name;
    void (*run)(Transport&, MemoryOps&, const AllgatherArgs&);
    std::size_t radix;
};
const Named kGathers[] = {{"linear", &linear_gather, 0},    {"binomial", &binomial_gather, 0},
                          {"knomial", &knomial_gather, 0}, {"knomial", &knomial_gather, 3},
                          {"knomial", &knomial_gather, 2}, {"knomial", &knomial_gather, 16}};

std::vector<int> roots_for(int P)
{
    const std::set<int> roots{0, P / 2, P - 1};
    return {roots.begin(), roots.end()};
}

// staged: the non-roots pass their block in place in a buffer of the whole vector, as device
// staging does (sendbuf nullptr); the root may be in place or not either way.
void check_gather(const Named& g, int P, const std::vector<std::size_t>& bytes, int root, bool in_place, bool staged)
{
    const BlockOffsets blocks(bytes);
    Bytes expected;
    for (int i = 0; i < P; ++i) {
        const auto block = pattern(i, bytes[std::size_t(i)]);
        expected.insert(expected.end(), block.begin(), block.end());
    }
    Bytes result;
    INFO(g.name << " radix=" << g.radix << " P=" << P << " total=" << blocks.total() << " root=" << root
                << " in_place=" << in_place << " staged=" << staged);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto mine = pattern(r, bytes[std::size_t(r)]);
        HostMemory mem;
        AllgatherArgs a{nullptr, nullptr, bytes};
        a.root = root;
        a.radix = g.radix;
        if (r != root && !staged) {
            const auto send = mine;
            a.sendbuf = send.data();
            g.run(net, mem, a);
            LOOM_RANK_CHECK(send == mine);
            return;
        }
        Bytes recv(blocks.total() + kGuard, kCanary);
        if (r != root || in_place) {
            std::copy(mine.begin(), mine.end(), recv.begin() + std::ptrdiff_t(blocks.begin(r)));
            a.recvbuf = recv.data();
            g.run(net, mem, a);
        } else {
            const auto send = mine;
            a.sendbuf = send.data();
            a.recvbuf = recv.data();
            g.run(net, mem, a);
            LOOM_RANK_CHECK(send == mine);
        }
        for (std::size_t i = blocks.total(); i < recv.size(); ++i) LOOM_RANK_CHECK(recv[i] == kCanary);
        if (r == root) result = std::move(recv);
    });
    REQUIRE(first_difference(prefix(result, expected.size()), expected) == "");
    for (std::size_t i = expected.size(); i < result.size(); ++i) REQUIRE(result[i] == kCanary);
    // Every rank but the root sends at most once (a leaf its block, an inner rank its subtree).
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        CHECK(stats.messages_sent[std::size_t(r)] <= (r == root ? 0u : 1u));
    }
}

} // namespace

TEST_CASE("gather: equal blocks, every algorithm, P, root and size, in place and not", "[gather]")
{
    for (const Named& g : kGathers)
        for (int P : comm_sizes())
            for (std::size_t block : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000)})
                for (int root : roots_for(P))
                    for (bool in_place : {false, true})
                        check_gather(g, P, std::vector<std::size_t>(std::size_t(P), block), root, in_place, false);
}

TEST_CASE("gather: unequal blocks, some empty, and the staged form", "[gather]")
{
    for (const Named& g : kGathers)
        for (int P : {1, 2, 3, 5, 8, 13, 33})
            for (int root : roots_for(P)) {
                std::vector<std::size_t> bytes;
                for (int i = 0; i < P; ++i) bytes.push_back(std::size_t(i % 3 == 1 ? 0 : 5 + 3 * i));
                for (bool in_place : {false, true}) {
                    check_gather(g, P, bytes, root, in_place, false);
                    check_gather(g, P, bytes, root, in_place, true);
                }
            }
}
