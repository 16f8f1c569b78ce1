// Topology as data (topology/topology.hpp): node numbering, grouping and ring order on
// synthetic placements: by slot, uneven nodes, one rank per node, round-robin, and packages
// and cores within a node.
#include "topology.hpp"

#include "loom_catch.hpp"

#include <sched.h>

#include <string>
#include <vector>

using loom::topo::Layout;
using loom::topo::Place;

namespace {

std::vector<Place> on_nodes(const std::vector<int>& nodes)
{
    std::vector<Place> places;
    for (int n : nodes) places.push_back(Place{n, -1, -1, -1});
    return places;
}

std::vector<int> ranks_of(const Layout& layout, int node)
{
    auto span = layout.node_ranks(node);
    return {span.begin(), span.end()};
}

std::vector<int> ring_of(const Layout& layout) { return {layout.ring().begin(), layout.ring().end()}; }

} // namespace

TEST_CASE("host names become node indexes in order of first appearance", "[topology]")
{
    const std::vector<std::string> hosts{"b", "a", "b", "c", "a"};
    CHECK(loom::topo::node_ids(hosts) == std::vector<int>{0, 1, 0, 2, 1});
    CHECK(loom::topo::node_ids(std::vector<std::string>{}).empty());
}

TEST_CASE("by-slot placement: consecutive ranks per node, ring in rank order", "[topology]")
{
    const Layout layout(on_nodes({0, 0, 0, 1, 1, 1}), {"h0", "h0", "h0", "h1", "h1", "h1"});
    CHECK(layout.nodes() == 2);
    CHECK(ranks_of(layout, 0) == std::vector<int>{0, 1, 2});
    CHECK(ranks_of(layout, 1) == std::vector<int>{3, 4, 5});
    CHECK(std::vector<int>(layout.leaders().begin(), layout.leaders().end()) == std::vector<int>{0, 3});
    CHECK(layout.local_index(4) == 1);
    CHECK(layout.min_ranks_per_node() == 3);
    CHECK(layout.max_ranks_per_node() == 3);
    CHECK(layout.ring_is_identity());
    CHECK(layout.hostname(1) == "h1");
}

TEST_CASE("uneven nodes", "[topology]")
{
    const Layout layout(on_nodes({0, 1, 1, 1, 2, 2}));
    CHECK(layout.nodes() == 3);
    CHECK(layout.min_ranks_per_node() == 1);
    CHECK(layout.max_ranks_per_node() == 3);
    CHECK(layout.leader(0) == 0);
    CHECK(layout.leader(1) == 1);
    CHECK(layout.leader(2) == 4);
    CHECK(layout.local_index(3) == 2);
    CHECK(layout.ring_is_identity());
}

TEST_CASE("one rank per node: every rank leads its node", "[topology]")
{
    const Layout layout(on_nodes({0, 1, 2, 3}));
    CHECK(layout.nodes() == 4);
    CHECK(layout.max_ranks_per_node() == 1);
    CHECK(std::vector<int>(layout.leaders().begin(), layout.leaders().end()) == std::vector<int>{0, 1, 2, 3});
    CHECK(layout.ring_is_identity());
}

TEST_CASE("round-robin placement: the ring visits each node's ranks together", "[topology]")
{
    // Ranks dealt to 3 nodes in turn: rank order crosses nodes on every link.
    const Layout layout(on_nodes({0, 1, 2, 0, 1, 2, 0}));
    CHECK(ranks_of(layout, 0) == std::vector<int>{0, 3, 6});
    CHECK(ranks_of(layout, 2) == std::vector<int>{2, 5});
    CHECK(ring_of(layout) == std::vector<int>{0, 3, 6, 1, 4, 2, 5});
    CHECK_FALSE(layout.ring_is_identity());
    for (int i = 0; i < layout.ranks(); ++i) CHECK(layout.ring_position(layout.ring()[std::size_t(i)]) == i);
    // The ring crosses between nodes exactly once per node.
    int crossings = 0;
    for (int i = 0; i < layout.ranks(); ++i)
        crossings += layout.node_of(layout.ring()[std::size_t(i)]) !=
                     layout.node_of(layout.ring()[std::size_t((i + 1) % layout.ranks())]);
    CHECK(crossings == layout.nodes());
}

TEST_CASE("within a node the ring follows packages and cores", "[topology]")
{
    // One node, ranks bound in a scattered order over 2 packages.
    std::vector<Place> places{{0, 1, 1, 5}, {0, 0, 0, 1}, {0, 1, 1, 4}, {0, 0, 0, 0}};
    const Layout layout(places);
    CHECK(ring_of(layout) == std::vector<int>{3, 1, 2, 0});
    // Unknown places (-1, an unbound process) keep rank order.
    const Layout unbound(on_nodes({0, 0, 0}));
    CHECK(unbound.ring_is_identity());
}

TEST_CASE("bad records are refused", "[topology]")
{
    CHECK_THROWS_AS(Layout(on_nodes({})), std::invalid_argument);
    CHECK_THROWS_AS(Layout(on_nodes({0, 2})), std::invalid_argument); // node 1 has no rank
    CHECK_THROWS_AS(Layout(on_nodes({0, -1})), std::invalid_argument);
    CHECK_THROWS_AS(Layout(on_nodes({0, 0}), {"a"}), std::invalid_argument);
}

TEST_CASE("describe: one line per rank and a summary", "[topology]")
{
    const Layout layout(std::vector<Place>{{0, 0, 0, 2}, {1, 0, 0, -1}, {0, 0, 0, 3}}, {"n1", "n2", "n1"});
    const auto lines = layout.describe();
    REQUIRE(lines.size() == 4);
    CHECK(lines[0] == "rank 0: node 0 (n1) package 0 numa 0 core 2");
    CHECK(lines[1] == "rank 1: node 1 (n2) package 0 numa 0 core -1");
    CHECK(lines[3] == "2 nodes, 1-2 ranks per node, ring order 0 2 1");
}

TEST_CASE("this process's place comes from hwloc", "[topology]")
{
    // Bound to CPU 0, the process lies within one core, one package and one NUMA node.
    cpu_set_t saved;
    REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    const Place bound = loom::topo::local_place(nullptr);
    REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
    CHECK(bound.node == -1); // the node comes from host names, in the glue
#ifdef LOOM_HAVE_HWLOC
    CHECK(bound.core >= 0);
    CHECK(bound.package >= 0);
    CHECK(bound.numa >= 0);
#else
    CHECK(bound == Place{});
#endif
}
