// Tests of the scatter family (algorithms/scatter.hpp) on the in-process transport: linear,
// binomial and k-nomial (radices default, 2, 3, 16) for every P in comm_sizes(), roots 0, a
// middle rank and P-1, equal blocks of 0, 1, odd and large sizes and unequal blocks (some
// empty), the root in place and not. Every rank's recvbuf must hold exactly its block with the
// guard after it untouched, and the root's sendbuf must stay as it was; linear runs again as
// MPI_Scatterv, where a non-root's bytes[] holds only its own count. Messages and scratch are
// counted too: the root sends a child's range in at most two pieces and packs nothing.
#include "knomial.hpp"
#include "scatter.hpp"
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
    void (*run)(Transport&, MemoryOps&, const ScatterArgs&);
    std::size_t radix;
};
const Named kScatters[] = {{"linear", &linear_scatter, 0},   {"binomial", &binomial_scatter, 0},
                           {"knomial", &knomial_scatter, 0}, {"knomial", &knomial_scatter, 2},
                           {"knomial", &knomial_scatter, 3}, {"knomial", &knomial_scatter, 16}};

std::vector<int> roots_for(int P)
{
    const std::set<int> roots{0, P / 2, P - 1};
    return {roots.begin(), roots.end()};
}

// `v`: MPI_Scatterv's view, where a non-root's bytes[] is 0 but for its own entry.
void check_scatter(const Named& g, int P, const std::vector<std::size_t>& bytes, int root, bool in_place, bool v)
{
    const BlockOffsets blocks(bytes);
    Bytes whole;
    for (int i = 0; i < P; ++i) {
        const auto block = pattern(i, bytes[std::size_t(i)]);
        whole.insert(whole.end(), block.begin(), block.end());
    }
    const bool linear = g.run == &linear_scatter;
    const int k = g.run == &binomial_scatter ? 2 : knomial_radix(g.radix); // a tree's radix
    INFO(g.name << " radix=" << g.radix << " P=" << P << " total=" << blocks.total() << " root=" << root
                << " in_place=" << in_place << " v=" << v);
    std::vector<std::size_t> peaks(std::size_t(P), 0);
    const auto stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto R = std::size_t(r);
        CountingMemory mem;
        std::vector<std::size_t> mine = bytes;
        if (v && r != root)
            for (std::size_t i = 0; i < mine.size(); ++i)
                if (i != R) mine[i] = 0;
        Bytes recv(bytes[R] + kGuard, kCanary);
        ScatterArgs a{nullptr, recv.data(), mine, root, g.radix};
        const Bytes send = whole;
        if (r == root) {
            a.sendbuf = send.data();
            if (in_place) a.recvbuf = nullptr;
        }
        g.run(net, mem, a);
        peaks[R] = mem.peak();
        if (r == root) rank_check_bytes(send, whole, "the root's sendbuf changed");
        if (r == root && in_place) {
            rank_check(std::all_of(recv.begin(), recv.end(), [](std::byte b) { return b == kCanary; }),
                       "in place, the root's recvbuf was written");
            return;
        }
        rank_check_bytes(prefix(recv, bytes[R]), pattern(r, bytes[R]), "the rank's block");
        rank_check(
            std::all_of(recv.begin() + std::ptrdiff_t(bytes[R]), recv.end(), [](std::byte b) { return b == kCanary; }),
            "the guard after the block was written");
    });
    for (int r = 0; r < P; ++r) {
        INFO("rank=" << r);
        if (linear) { // linear: the root sends each block once, the others nothing
            CHECK(stats.messages_sent[std::size_t(r)] <= (r == root ? std::size_t(P - 1) : 0u));
            CHECK(peaks[std::size_t(r)] == 0);
            continue;
        }
        // A tree: one message per child, and one more from the root for the range that wraps;
        // scratch only at an inner rank, its subtree's bytes.
        const int vr = mod(r - root, P);
        const KnomialTree t = knomial_tree(P, vr, k);
        CHECK(stats.messages_sent[std::size_t(r)] <= t.children.size() + (r == root ? 1 : 0));
        std::size_t subtree = 0;
        for (int i = vr; i < vr + t.extent; ++i) subtree += bytes[std::size_t(mod(i + root, P))];
        CHECK(peaks[std::size_t(r)] == (r == root || t.children.empty() ? 0 : subtree));
    }
}

} // namespace

TEST_CASE("scatter: equal blocks, every algorithm, P, root and size, the root in place and not", "[scatter]")
{
    for (const Named& g : kScatters)
        for (int P : comm_sizes())
            for (std::size_t block : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000)})
                for (int root : roots_for(P))
                    for (bool in_place : {false, true})
                        check_scatter(g, P, std::vector<std::size_t>(std::size_t(P), block), root, in_place, false);
}

TEST_CASE("scatter: unequal blocks, some empty", "[scatter]")
{
    for (const Named& g : kScatters)
        for (int P : {1, 2, 3, 5, 8, 13, 33})
            for (int root : roots_for(P)) {
                std::vector<std::size_t> bytes;
                for (int i = 0; i < P; ++i) bytes.push_back(std::size_t(i % 3 == 1 ? 0 : 5 + 3 * i));
                for (bool in_place : {false, true}) check_scatter(g, P, bytes, root, in_place, false);
            }
}

TEST_CASE("scatter: linear as MPI_Scatterv, a non-root knowing only its own count", "[scatter]")
{
    const Named& linear = kScatters[0];
    for (int P : comm_sizes())
        for (int root : roots_for(P)) {
            std::vector<std::size_t> bytes;
            for (int i = 0; i < P; ++i) bytes.push_back(std::size_t(i % 3 == 1 ? 0 : 5 + 3 * i));
            for (bool in_place : {false, true}) {
                check_scatter(linear, P, bytes, root, in_place, true);
                check_scatter(linear, P, std::vector<std::size_t>(std::size_t(P), 7), root, in_place, true);
            }
        }
}

TEST_CASE("scatter: the root sends the range that wraps past rank P-1 as two pieces", "[scatter]")
{
    // P = 6, binomial, root 3: virtual 2 (real 5) gets real blocks 5 and 0 (scatter.hpp's example).
    const std::vector<std::size_t> bytes(6, 4);
    const auto stats = run_ranks(6, [&](InprocTransport& net) {
        HostMemory mem;
        Bytes recv(4);
        const Bytes whole(24, std::byte{1});
        binomial_scatter(net, mem, ScatterArgs{net.rank() == 3 ? whole.data() : nullptr, recv.data(), bytes, 3});
    });
    CHECK(stats.messages_sent[3] == 4); // real 1 (b1..b2), 5 (b5, then b0), 4 (b4)
    CHECK(stats.messages_sent[1] == 1); // to 2
    CHECK(stats.messages_sent[5] == 1); // to 0
    CHECK(total_messages(stats) == 6);
}
