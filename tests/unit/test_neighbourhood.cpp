// The neighbourhood model (algorithms/neighbourhood.hpp) and the tests' reference pairing
// (tests/support/neighbourhoods.hpp): Cartesian lists against hand-worked grids, and for every
// test topology at P = 1..33, that every message a rank sends to a real neighbour is received
// by exactly one receive block - the property every neighbourhood algorithm's test relies on.
#include "neighbourhoods.hpp"

#include "loom_catch.hpp"

#include <map>
#include <utility>
#include <vector>

using namespace loom;
using namespace loom::test;

TEST_CASE("cartesian neighbour lists follow MPI_Cart_shift, row-major", "[neighbourhood]")
{
    // A 3 x 4 grid, periodic in the second dimension only: rank 5 is (1, 1).
    const std::vector<int> dims{3, 4}, periods{0, 1};
    CHECK(cartesian_neighbours(dims, periods, 5) == std::vector<int>{1, 9, 4, 6});
    // Rank 0 (0, 0): no -1 neighbour along the non-periodic dimension, wraps along the other.
    CHECK(cartesian_neighbours(dims, periods, 0) == std::vector<int>{kNoNeighbour, 4, 3, 1});
    // Rank 11 (2, 3).
    CHECK(cartesian_neighbours(dims, periods, 11) == std::vector<int>{7, kNoNeighbour, 10, 8});
    // Periodic dimensions of size 1 and 2: the rank itself, and one rank on both sides.
    CHECK(cartesian_neighbours(std::vector<int>{1, 2}, std::vector<int>{1, 1}, 1) == std::vector<int>{1, 1, 0, 0});
    // A non-periodic dimension of size 1 has no neighbours.
    CHECK(cartesian_neighbours(std::vector<int>{1}, std::vector<int>{0}, 0) ==
          std::vector<int>{kNoNeighbour, kNoNeighbour});
}

TEST_CASE("recv_match_order swaps a dimension's two sides in a Cartesian neighbourhood only", "[neighbourhood]")
{
    Neighbourhood cart, graph;
    cart.kind = TopologyKind::cartesian;
    graph.kind = TopologyKind::graph;
    for (std::size_t k = 0; k < 6; ++k) {
        CHECK(recv_match_order(cart, k) == (k % 2 == 0 ? k + 1 : k - 1));
        CHECK(recv_match_order(graph, k) == k);
    }
}

TEST_CASE("every sent block is received exactly once, in every test topology", "[neighbourhood]")
{
    for (int p = 1; p <= 33; ++p) {
        for (const Topology& t : topologies_for(p, std::uint32_t(p))) {
            INFO(t.name);
            REQUIRE(t.size() == p);
            std::map<std::pair<int, int>, int> received; // (sender, send block) -> times received
            for (int r = 0; r < p; ++r) {
                if (t.kind != TopologyKind::dist_graph) REQUIRE(t.sources[std::size_t(r)] == t.destinations[std::size_t(r)]);
                for (int j = 0; j < int(t.sources[std::size_t(r)].size()); ++j) {
                    BlockSource s = block_source(t, r, j);
                    if (s.rank < 0) continue;
                    REQUIRE(t.destinations[std::size_t(s.rank)][std::size_t(s.block)] == r);
                    ++received[{s.rank, s.block}];
                }
            }
            for (int q = 0; q < p; ++q)
                for (int i = 0; i < int(t.destinations[std::size_t(q)].size()); ++i) {
                    if (t.destinations[std::size_t(q)][std::size_t(i)] == kNoNeighbour) continue;
                    INFO("rank " << q << " send block " << i);
                    CHECK(received[{q, i}] == 1);
                }
        }
    }
}
