// Message combining on stencils (algorithms/combining.hpp): detect_stencil over P = 1..64 and
// many offset sets (von Neumann, Moore, faces and corners, corners, upwind; as graphs and dist
// graphs), refusing what is no stencil (random graphs, Cartesian lists, a repeated or missing
// neighbour, asymmetric lists, MPI_PROC_NULL, grids whose extents of 1 or 2 make an offset
// ambiguous); balanced_dims against Open MPI's MPI_Dims_create (values printed by it);
// combining_neighbour against block_source (tests/support/neighbourhoods.hpp) over the in-process
// transport, both collectives, blocks of 0, 1, odd and large sizes, with the messages, rounds
// and bytes the header promises.
#include "combining.hpp"
#include "loom_c_api.h"
#include "neighbourhoods.hpp"
#include "registry.hpp"
#include "rules_test_support.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

using Offsets = std::vector<std::vector<int>>;

// Every rank's stencil, if detect_stencil finds one on every rank with one fingerprint (what
// the glue's allreduce decides), else empty.
std::vector<Stencil> agreed(const Topology& t)
{
    std::vector<Stencil> out;
    for (int r = 0; r < t.size(); ++r) {
        auto s = detect_stencil(t.size(), r, t.sources[std::size_t(r)], t.destinations[std::size_t(r)]);
        if (!s || (!out.empty() && s->fingerprint != out[0].fingerprint)) return {};
        out.push_back(std::move(*s));
    }
    return out;
}

std::vector<Offsets> offset_sets(int ndims)
{
    return {von_neumann(ndims), moore(ndims), faces_and_corners(ndims), corners(ndims)};
}

struct Outcome {
    RunStats stats;
    std::vector<std::size_t> scratch_peak;
};

// Runs combining_neighbour on every rank of t (a stencil every rank agreed on) with blocks of n
// bytes; checks every receive block against block_source, the input, the bytes past the output.
Outcome run(const Topology& t, bool same_block, std::size_t n)
{
    const std::vector<Stencil> stencils = agreed(t);
    REQUIRE(int(stencils.size()) == t.size());
    const int P = t.size();
    Outcome out{{}, std::vector<std::size_t>(std::size_t(P), 0)};
    out.stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto& dst = t.destinations[std::size_t(r)];
        const auto& src = t.sources[std::size_t(r)];
        const std::size_t blocks = same_block ? 1 : dst.size();
        Bytes send;
        for (std::size_t b = 0; b < blocks; ++b)
            for (std::size_t i = 0; i < n; ++i) send.push_back(tag(r, int(b) + 1, i));
        Bytes want;
        for (std::size_t j = 0; j < src.size(); ++j) {
            const BlockSource s = block_source(t, r, int(j));
            for (std::size_t i = 0; i < n; ++i) want.push_back(tag(s.rank, (same_block ? 0 : s.block) + 1, i));
        }
        const std::vector<std::size_t> send_bytes(blocks, n), recv_bytes(src.size(), n);
        constexpr std::size_t kGuard = 16;
        Bytes recv(want.size() + kGuard, std::byte{0xEE});
        const Bytes kept = send;
        Neighbourhood nb = t.of(r);
        nb.stencil = &stencils[std::size_t(r)];
        CountingMemory mem;
        combining_neighbour(net, mem, NeighbourArgs{nb, send.data(), recv.data(), send_bytes, recv_bytes, same_block});
        rank_check_bytes(send, kept, "the input was written");
        rank_check_bytes(prefix(recv, want.size()), want, "the blocks received");
        rank_check(std::all_of(recv.end() - kGuard, recv.end(), [](std::byte b) { return b == std::byte{0xEE}; }),
                   "a byte past the output was written");
        rank_check(mem.outstanding() == 0, "scratch not given back");
        out.scratch_peak[std::size_t(r)] = mem.peak();
    });
    return out;
}

// What the header promises for a stencil's offsets (destination list) with blocks of n bytes:
// per rank, messages (one per phase and direction that moves something) and bytes.
struct Promise {
    std::size_t messages = 0, bytes = 0, rounds = 0;
};
Promise promise(const Stencil& s, bool same_block, std::size_t n)
{
    Promise p;
    for (int k = 0; k < s.ndims; ++k) {
        bool any = false;
        for (int dir : {-1, +1}) {
            std::vector<std::vector<int>> groups;
            for (const StencilOffset& o : s.destinations) {
                if (o[std::size_t(k)] != dir) continue;
                std::vector<int> key = same_block ? std::vector<int>(o.begin(), o.begin() + k)
                                                  : std::vector<int>(o.begin(), o.end());
                if (std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
            }
            if (groups.empty() || n == 0) continue;
            any = true;
            ++p.messages;
            p.bytes += groups.size() * n;
        }
        p.rounds += any ? 1 : 0;
    }
    return p;
}

void check_stencil(const Topology& t, bool same_block, std::size_t n)
{
    INFO(t.name << ", " << (same_block ? "allgather" : "alltoall") << ", blocks of " << n);
    const Outcome o = run(t, same_block, n);
    const std::vector<Stencil> s = agreed(t);
    for (int r = 0; r < t.size(); ++r) {
        INFO("rank " << r);
        const Promise p = promise(s[std::size_t(r)], same_block, n);
        CHECK(o.stats.messages_sent[std::size_t(r)] == p.messages);
        CHECK(o.stats.messages_sent[std::size_t(r)] <= std::size_t(2 * s[std::size_t(r)].ndims));
        CHECK(o.stats.bytes_sent[std::size_t(r)] == p.bytes);
        CHECK(o.stats.waits[std::size_t(r)] == p.rounds);
    }
}

} // namespace

TEST_CASE("balanced_dims is Open MPI's MPI_Dims_create", "[combining]")
{
    // Printed by Open MPI 4.1.4's MPI_Dims_create (tests/integration compares every P up to 1000).
    CHECK(balanced_dims(1, 2) == std::vector<int>{1, 1});
    CHECK(balanced_dims(7, 2) == std::vector<int>{7, 1});
    CHECK(balanced_dims(12, 2) == std::vector<int>{4, 3});
    CHECK(balanced_dims(18, 2) == std::vector<int>{6, 3});
    CHECK(balanced_dims(72, 2) == std::vector<int>{12, 6}); // not 9x8: greedy, as Open MPI
    CHECK(balanced_dims(24, 3) == std::vector<int>{4, 3, 2});
    CHECK(balanced_dims(36, 3) == std::vector<int>{4, 3, 3});
    CHECK(balanced_dims(64, 3) == std::vector<int>{4, 4, 4});
    CHECK(balanced_dims(97, 3) == std::vector<int>{97, 1, 1});
    for (int P = 1; P <= 200; ++P)
        for (int d : {2, 3}) {
            const auto dims = balanced_dims(P, d);
            int product = 1;
            for (int e : dims) product *= e;
            CHECK(product == P);
            CHECK(std::is_sorted(dims.rbegin(), dims.rend()));
        }
}

TEST_CASE("detect_stencil finds every stencil on MPI's grid and nothing else", "[combining]")
{
    for (int P = 1; P <= 64; ++P) {
        INFO("P = " << P);
        for (int d : {2, 3}) {
            const std::vector<int> dims = balanced_dims(P, d);
            for (const Offsets& offsets : offset_sets(d))
                for (TopologyKind kind : {TopologyKind::graph, TopologyKind::dist_graph}) {
                    const Topology t = stencil(dims, offsets, kind, std::to_string(offsets.size()) + "-point");
                    INFO(t.name);
                    // Found exactly where the grid makes every offset unambiguous (extents of 3
                    // or more: stencil() says so), with the offsets it was built from.
                    const std::vector<Stencil> s = agreed(t);
                    CHECK(s.empty() == !t.stencil);
                    if (s.empty()) continue;
                    CHECK(s[0].ndims == d);
                    // One block size where the offsets are symmetric and reach every rank (the
                    // support's own walk): corners of an even grid reach half of it.
                    CHECK(s[0].one_size == t.one_block_size);
                    for (std::size_t j = 0; j < offsets.size(); ++j)
                        CHECK(std::equal(offsets[j].begin(), offsets[j].end(), s[0].sources[j].begin()));
                    for (int r = 0; r < P; ++r)
                        for (std::size_t j = 0; j < offsets.size(); ++j) {
                            CHECK(s[std::size_t(r)].neighbour(r, s[std::size_t(r)].sources[j]) ==
                                  t.sources[std::size_t(r)][j]);
                            CHECK(s[std::size_t(r)].neighbour(r, s[std::size_t(r)].destinations[j]) ==
                                  t.destinations[std::size_t(r)][j]);
                        }
                }
            // An asymmetric stencil as a dist graph: found too.
            const Topology up = stencil(dims, upwind(d), TopologyKind::dist_graph, "upwind");
            CHECK(agreed(up).empty() == !up.stencil);
            CHECK_FALSE(up.one_block_size); // no rank sends where it receives from
            if (up.stencil) CHECK_FALSE(agreed(up)[0].one_size);
        }
        // What is no stencil: random graphs, Cartesian lists (they are never asked, but refuse).
        for (const Topology& t : topologies_for(P, std::uint32_t(P) + 11)) {
            INFO(t.name);
            if (t.stencil) {
                CHECK_FALSE(agreed(t).empty());
                continue;
            }
            // A random graph may happen to be a stencil on some rank, never on every one alike
            // at these sizes; a Cartesian grid's faces of 3 or more in each dimension would be
            // (von Neumann), but only on MPI's grid, and loom never asks for a Cartesian one.
            if (t.kind != TopologyKind::cartesian) CHECK(agreed(t).empty());
        }
    }
}

TEST_CASE("detect_stencil refuses lists that are almost a stencil", "[combining]")
{
    const std::vector<int> dims{4, 3};
    const Topology moore2 = stencil(dims, moore(2), TopologyKind::dist_graph, "moore");
    REQUIRE(moore2.stencil);
    const int r = 5;
    const auto& src = moore2.sources[std::size_t(r)];
    const auto& dst = moore2.destinations[std::size_t(r)];
    CHECK(detect_stencil(12, r, src, dst).has_value());
    // Empty lists.
    CHECK_FALSE(detect_stencil(12, r, {}, {}).has_value());
    // MPI_PROC_NULL among the sources.
    auto with_null = src;
    with_null[2] = kNoNeighbour;
    CHECK_FALSE(detect_stencil(12, r, with_null, dst).has_value());
    // A neighbour named twice.
    auto repeated = src;
    repeated[2] = repeated[3];
    CHECK_FALSE(detect_stencil(12, r, repeated, dst).has_value());
    // A destination missing (not the sources' offsets negated).
    const std::vector<int> fewer(dst.begin(), dst.end() - 1);
    CHECK_FALSE(detect_stencil(12, r, src, fewer).has_value());
    // Destinations the sources' offsets, not negated, for an asymmetric set.
    const Topology up = stencil(dims, upwind(2), TopologyKind::dist_graph, "upwind");
    CHECK(detect_stencil(12, r, up.sources[std::size_t(r)], up.destinations[std::size_t(r)]).has_value());
    CHECK_FALSE(detect_stencil(12, r, up.sources[std::size_t(r)], up.sources[std::size_t(r)]).has_value());
    // A rank two steps away.
    auto far = src;
    far[0] = moore2.sources[std::size_t(moore2.sources[std::size_t(r)][0])][0];
    CHECK_FALSE(detect_stencil(12, r, far, dst).has_value());
    // The rank itself.
    auto self = src;
    self[0] = r;
    CHECK_FALSE(detect_stencil(12, r, self, dst).has_value());
    // Not MPI_Dims_create's grid: 6x2 for 12 (its 4x3), 2x2 for 4, 2x2x2 for 8, 3x1 for 3 -
    // also ambiguous (+1 and -1 name one rank along an extent of 2, every offset along 1).
    for (const auto& g : std::vector<std::vector<int>>{{6, 2}, {2, 6}, {2, 2}, {2, 2, 2}, {3, 1}, {1, 3}}) {
        const Topology t = stencil(g, von_neumann(int(g.size())), TopologyKind::graph, "off-grid");
        INFO(t.name);
        CHECK_FALSE(t.stencil);
        CHECK(agreed(t).empty());
    }
    // 3x3x2 (18 in 3-D: 3x3x2): a 2-D stencil along its first two dimensions would be
    // unambiguous in 3-D, but 18's 2-D grid is 6x3, where those lists are no stencil; the
    // offsets are then found in 3-D, with a zero third component.
    const Topology flat = stencil({3, 3, 2}, {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}}, TopologyKind::graph, "flat");
    REQUIRE(flat.stencil);
    const auto s = agreed(flat);
    REQUIRE(s.size() == 18);
    CHECK(s[0].ndims == 3);
    check_stencil(flat, true, 5);
    check_stencil(flat, false, 5);
    // Every rank sees a stencil but not the same: fingerprints differ (rank 0's lists reversed).
    Topology mixed = stencil(dims, moore(2), TopologyKind::dist_graph, "mixed");
    std::reverse(mixed.sources[0].begin(), mixed.sources[0].end());
    CHECK(detect_stencil(12, 0, mixed.sources[0], mixed.destinations[0]).has_value());
    CHECK(agreed(mixed).empty());
}

TEST_CASE("combining neighbour exchange: every block from its sender on every stencil", "[combining]")
{
    for (int P : {9, 12, 15, 16, 18, 20, 25, 27, 36, 45, 48, 64}) {
        for (int d : {2, 3}) {
            const std::vector<int> dims = balanced_dims(P, d);
            if (dims.back() < 3) continue;
            std::vector<Topology> ts;
            for (const Offsets& offsets : offset_sets(d))
                ts.push_back(stencil(dims, offsets, P % 2 == 0 ? TopologyKind::graph : TopologyKind::dist_graph,
                                     std::to_string(offsets.size()) + "-point"));
            ts.push_back(stencil(dims, upwind(d), TopologyKind::dist_graph, "upwind"));
            for (const Topology& t : ts)
                for (bool same_block : {true, false})
                    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), P <= 16 ? std::size_t(40000) : std::size_t(1031)})
                        check_stencil(t, same_block, n);
        }
    }
}

TEST_CASE("combining neighbour exchange: 2d messages where linear sends one per neighbour", "[combining]")
{
    // A 3x3x3 torus, full Moore stencil: 26 neighbours, 6 messages; the alltoall sends
    // 3 phases x 18 blocks, the allgather 2 + 6 + 18 = 26 blocks (as linear).
    const Topology t = stencil({3, 3, 3}, moore(3), TopologyKind::dist_graph, "moore");
    const Outcome a = run(t, false, 10), g = run(t, true, 10);
    for (int r = 0; r < 27; ++r) {
        CHECK(a.stats.messages_sent[std::size_t(r)] == 6);
        CHECK(a.stats.bytes_sent[std::size_t(r)] == 54 * 10);
        CHECK(a.stats.waits[std::size_t(r)] == 3);
        CHECK(g.stats.messages_sent[std::size_t(r)] == 6);
        CHECK(g.stats.bytes_sent[std::size_t(r)] == 26 * 10);
    }
}

TEST_CASE("combining neighbour exchange refuses what it does not serve", "[combining]")
{
    const Topology t = stencil({3, 3}, moore(2), TopologyKind::graph, "moore");
    std::vector<std::byte> send(8 * 4), recv(8 * 4);
    std::vector<std::size_t> sizes(8, 4);
    run_ranks(1, [&](InprocTransport& net) {
        HostMemory mem;
        // No stencil agreed.
        Neighbourhood nb = t.of(0);
        bool threw = false;
        try {
            combining_neighbour(net, mem, NeighbourArgs{nb, send.data(), recv.data(), sizes, sizes, false});
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        rank_check(threw, "no stencil: std::invalid_argument");
        // Blocks of different sizes (the v forms).
        const auto s = detect_stencil(9, 0, t.sources[0], t.destinations[0]);
        rank_check(s.has_value(), "the stencil found");
        nb.stencil = &*s;
        std::vector<std::size_t> uneven = sizes;
        uneven[3] = 2;
        threw = false;
        try {
            combining_neighbour(net, mem, NeighbourArgs{nb, send.data(), recv.data(), uneven, sizes, false});
        } catch (const std::invalid_argument&) {
            threw = true;
        }
        rank_check(threw, "blocks of different sizes: std::invalid_argument");
    });
}

TEST_CASE("combining: a stencil of one block size has a message size, and combining serves equal blocks only",
          "[combining][registry]")
{
    // A 3x3 Moore stencil: every rank the same pair of block sizes, so the larger is the message
    // size (as on a Cartesian grid); combining serves where the send and receive blocks are equal.
    // 4x4 corners reach half the grid and upwind receives from one side only: size 0, no combining.
    struct Case {
        Topology t;
        bool one_size;
    };
    const std::vector<Case> cases = {{stencil({3, 3}, moore(2), TopologyKind::dist_graph, "moore"), true},
                                     {stencil({3, 3}, corners(2), TopologyKind::graph, "corners"), true},
                                     {stencil({4, 4}, corners(2), TopologyKind::graph, "corners"), false},
                                     {stencil({4, 4}, von_neumann(2), TopologyKind::graph, "faces"), true},
                                     {stencil({3, 3}, upwind(2), TopologyKind::dist_graph, "upwind"), false}};
    for (const Case& c : cases) {
        INFO(c.t.name);
        REQUIRE(c.t.stencil);
        CHECK(c.t.one_block_size == c.one_size);
        const int r = 4, P = c.t.size();
        const auto& src = c.t.sources[std::size_t(r)];
        const auto& dst = c.t.destinations[std::size_t(r)];
        auto s = detect_stencil(P, r, src, dst);
        REQUIRE(s);
        CHECK(s->one_size == c.one_size);
        loom_neighbourhood_t n{};
        n.kind = c.t.kind == TopologyKind::graph ? LOOM_TOPO_GRAPH : LOOM_TOPO_DIST_GRAPH;
        n.indegree = int(src.size());
        n.outdegree = int(dst.size());
        n.sources = src.data();
        n.destinations = dst.data();
        loom_call_t call{};
        call.neighbours = &n;
        // neighbor_allgather: the send block, then one per source; 16 bytes sent, 24 received.
        std::vector<std::size_t> gathered(1 + src.size(), 24), per_neighbour(dst.size() + src.size(), 24);
        gathered[0] = 16;
        std::fill(per_neighbour.begin(), per_neighbour.begin() + std::ptrdiff_t(dst.size()), std::size_t(16));
        for (const bool agreed_stencil : {false, true}) {
            n.stencil = agreed_stencil ? &*s : nullptr; // the glue sets it only when every rank agreed
            const bool sized = agreed_stencil && c.one_size;
            call.coll = LOOM_COLL_NEIGHBOR_ALLGATHER;
            call.counts = gathered.data();
            CHECK(message_bytes(call, P) == (sized ? 24u : 0u));
            CHECK_FALSE(combinable(call)); // 16 sent, 24 received
            call.coll = LOOM_COLL_NEIGHBOR_ALLTOALL;
            call.counts = per_neighbour.data();
            CHECK(message_bytes(call, P) == (sized ? 24u : 0u));
            CHECK_FALSE(combinable(call));
            std::fill(per_neighbour.begin(), per_neighbour.end(), std::size_t(24));
            CHECK(combinable(call) == sized);
            std::fill(per_neighbour.begin(), per_neighbour.begin() + std::ptrdiff_t(dst.size()), std::size_t(16));
            call.coll = LOOM_COLL_NEIGHBOR_ALLTOALLV; // the v form: never
            CHECK(message_bytes(call, P) == 0);
            CHECK_FALSE(combinable(call));
        }
    }
}

TEST_CASE("loom_choose: combining is chosen again only for equal blocks, not for a repeat of the size with unequal ones",
          "[combining][rules]")
{
    // A 4x4 von Neumann stencil is of one block size, and MPI lets every rank send 16 bytes and
    // receive 24 there (its neighbours the other way round). loom_choose's memo must not hand
    // the second call combining, chosen for the first (equal blocks, the same message size).
    const rules::test::TempFile f("loom-rules 1\nneighbor_alltoall * * combining topology=dist_graph\n");
    REQUIRE(rules::load_user_rules(f.path.string()).empty());
    const Topology t = stencil({4, 4}, von_neumann(2), TopologyKind::dist_graph, "faces");
    REQUIRE(t.one_block_size);
    const int r = 5, P = t.size();
    const auto& src = t.sources[std::size_t(r)];
    const auto& dst = t.destinations[std::size_t(r)];
    auto s = detect_stencil(P, r, src, dst);
    REQUIRE(s);
    loom_neighbourhood_t n{};
    n.kind = LOOM_TOPO_DIST_GRAPH;
    n.indegree = int(src.size());
    n.outdegree = int(dst.size());
    n.sources = src.data();
    n.destinations = dst.data();
    n.stencil = &*s;
    void* resolved = loom_rules_resolve_shape(P, 1, P);
    REQUIRE(resolved != nullptr);
    std::vector<std::size_t> equal(dst.size() + src.size(), 24), unequal = equal;
    std::fill(unequal.begin(), unequal.begin() + std::ptrdiff_t(dst.size()), std::size_t(16));
    loom_call_t call{};
    call.coll = LOOM_COLL_NEIGHBOR_ALLTOALL;
    call.neighbours = &n;
    const char* why = nullptr;
    const char* rule = nullptr;
    call.counts = equal.data();
    const char* chosen = loom_choose(&call, P, "", resolved, &why, &rule);
    REQUIRE(chosen != nullptr);
    CHECK(std::string(chosen) == "combining");
    call.counts = unequal.data();
    chosen = loom_choose(&call, P, "", resolved, &why, &rule);
    CHECK((chosen == nullptr || std::string(chosen) != "combining"));
    call.counts = equal.data();
    chosen = loom_choose(&call, P, "", resolved, &why, &rule);
    REQUIRE(chosen != nullptr);
    CHECK(std::string(chosen) == "combining");
    loom_rules_release(resolved);
    rules::load_user_rules("");
}
