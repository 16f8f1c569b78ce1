// The registry, loom's built-in choice and the C entry points that select algorithms.
#include "rules.hpp"
#include "loom_c_api.h"
#include "registry.hpp"

#include "loom_catch.hpp"

#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace loom;

namespace {
const std::vector<std::pair<Collective, std::vector<std::string>>> kIssueTable = {
    {Collective::allreduce,
     {"ring", "ring_pipelined", "halving_doubling", "recursive_doubling", "binomial", "pat", "shm", "cma",
      "hierarchical", "hierarchical_rs", "hierarchical_seg", "knomial", "bcube"}},
    {Collective::reduce_scatter, {"ring", "halving_doubling", "pat", "cma", "hierarchical", "hierarchical_seg"}},
    {Collective::reduce_scatter_block,
     {"ring", "halving_doubling", "pat", "cma", "hierarchical", "hierarchical_seg", "shm"}},
    {Collective::allgather,
     {"ring", "recursive_doubling", "bruck", "pat", "shm", "cma", "hierarchical", "hierarchical_seg"}},
    {Collective::allgatherv,
     {"ring", "recursive_doubling", "bruck", "pat", "shm", "cma", "hierarchical", "hierarchical_seg"}},
    {Collective::bcast, {"binomial", "scatter_allgather", "shm", "cma", "hierarchical", "hierarchical_seg", "knomial"}},
    {Collective::reduce, {"binomial", "halving_doubling", "shm", "cma", "hierarchical", "knomial"}},
    {Collective::barrier, {"bruck", "recursive_doubling", "shm", "knomial"}},
    {Collective::alltoall, {"bruck", "pairwise", "cma", "shm"}},
    {Collective::scan, {"linear", "recursive_doubling", "shm"}},
    {Collective::exscan, {"linear", "recursive_doubling", "shm"}},
    {Collective::gather, {"linear", "binomial", "knomial", "cma", "shm"}},
    {Collective::scatter, {"linear", "binomial", "knomial", "cma", "shm"}},
    {Collective::gatherv, {"linear", "cma", "shm"}},
    {Collective::scatterv, {"linear", "cma", "shm"}},
    {Collective::alltoallv, {"pairwise", "linear", "cma", "shm"}},
    {Collective::alltoallw, {"pairwise", "linear", "cma", "shm"}},
    {Collective::neighbor_allgather, {"linear", "shm", "combining"}},
    {Collective::neighbor_allgatherv, {"linear", "shm"}},
    {Collective::neighbor_alltoall, {"linear", "shm", "combining"}},
    {Collective::neighbor_alltoallv, {"linear", "shm"}},
    {Collective::neighbor_alltoallw, {"linear", "shm"}},
};

loom_reduction_t reduction(bool commutative) { return loom_reduction_t{4, commutative ? 1 : 0, nullptr, nullptr, nullptr}; }
} // namespace

TEST_CASE("the registry holds exactly the user-facing algorithm names, each described", "[registry]")
{
    std::set<std::pair<int, std::string>> seen;
    for (const Algorithm& a : all_algorithms()) {
        INFO(to_string(a.collective) << "/" << a.name);
        CHECK(!a.name.empty());
        CHECK(!a.summary.empty());
        CHECK(!a.cost.empty());
        CHECK(seen.insert({int(a.collective), std::string(a.name)}).second);
    }
    std::size_t listed = 0;
    for (const auto& [coll, names] : kIssueTable)
        for (const std::string& name : names) {
            INFO(to_string(coll) << "/" << name);
            CHECK(find_algorithm(coll, name) != nullptr);
            ++listed;
        }
    CHECK(listed == seen.size());
}

// The twin collectives run the same schedules; the registry writes each family once.
TEST_CASE("twin collectives list the same algorithms, in the same order, with the same records", "[registry]")
{
    auto of = [](Collective c) {
        std::vector<const Algorithm*> list;
        for (const Algorithm& a : all_algorithms())
            if (a.collective == c) list.push_back(&a);
        return list;
    };
    auto same = [](const Algorithm& x, const Algorithm& y) {
        return x.name == y.name && x.summary == y.summary && x.cost == y.cost && x.run == y.run && x.needs == y.needs &&
               x.reads == y.reads && x.default_leaders == y.default_leaders;
    };
    const std::pair<Collective, Collective> twins[] = {{Collective::reduce_scatter, Collective::reduce_scatter_block},
                                                       {Collective::allgather, Collective::allgatherv}};
    for (auto [first, second] : twins) {
        INFO(to_string(first) << " and " << to_string(second));
        const auto a = of(first), b = of(second);
        REQUIRE(a.size() <= b.size());
        for (std::size_t k = 0; k < a.size(); ++k) {
            INFO(a[k]->name);
            CHECK(same(*a[k], *b[k]));
        }
        // Only reduce_scatter_block adds an algorithm: shm, which needs equal blocks.
        std::vector<std::string> extra;
        for (std::size_t k = a.size(); k < b.size(); ++k) extra.emplace_back(b[k]->name);
        CHECK(extra == (second == Collective::reduce_scatter_block ? std::vector<std::string>{"shm"}
                                                                   : std::vector<std::string>{}));
    }
}

TEST_CASE("the built-in rule table parses and names only registered algorithms (or fallback)", "[registry]")
{
    const auto parsed = rules::parse(rules::default_rules_text(), "default");
    for (const auto& d : parsed.diagnostics) INFO(d.to_string());
    CHECK(parsed.ok());
    CHECK(parsed.rules.size() == rules::default_rules().size());
    for (const rules::Rule& r : rules::default_rules())
        CHECK((r.algorithm == rules::kFallback || find_algorithm(r.collective, r.algorithm) != nullptr));
}

TEST_CASE("loom_choose: non-commutative ops get an order-preserving algorithm or a decline", "[registry]")
{
    const char* why = nullptr;
    loom_call_t call{};
    call.coll = LOOM_COLL_ALLREDUCE;
    call.count = 1 << 20;
    call.op = reduction(false);
    const char* chosen = loom_choose(&call, 8, "", nullptr, &why, nullptr);
    REQUIRE(chosen != nullptr);
    CHECK(find_algorithm(Collective::allreduce, chosen)->needs.commutative_op == false);

    // A forced algorithm that needs a commutative op declines instead of being swapped.
    CHECK(loom_choose(&call, 8, "ring", nullptr, &why, nullptr) == nullptr);
    CHECK(std::string(why) == "the op is not commutative");
    CHECK(std::string(loom_choose(&call, 8, "binomial", nullptr, &why, nullptr)) == "binomial");

    call.coll = LOOM_COLL_REDUCE_SCATTER_BLOCK;
    std::vector<std::size_t> counts(8, 100);
    call.counts = counts.data();
    CHECK(loom_choose(&call, 8, "", nullptr, &why, nullptr) == nullptr);

    call.op = reduction(true);
    const char* rule = nullptr;
    CHECK(loom_choose(&call, 8, "", nullptr, &why, &rule) != nullptr);
    CHECK(std::string(rule).rfind("default:", 0) == 0);
}

TEST_CASE("loom_choose: an unknown forced algorithm declines and says so", "[registry]")
{
    const char* why = nullptr;
    loom_call_t call{};
    call.coll = LOOM_COLL_BCAST;
    call.count = 100;
    CHECK(loom_choose(&call, 4, "binomal", nullptr, &why, nullptr) == nullptr);
    CHECK(std::string(why) == "the forced algorithm does not exist");
    CHECK(loom_algorithm_exists(LOOM_COLL_BCAST, "binomial"));
    CHECK_FALSE(loom_algorithm_exists(LOOM_COLL_BCAST, "binomal"));
    char names[128];
    loom_algorithm_names(LOOM_COLL_BCAST, names, sizeof names);
    CHECK(std::string(names) == "binomial, scatter_allgather, shm, cma, hierarchical, hierarchical_seg, knomial");
    loom_algorithm_names(LOOM_COLL_BCAST, names, 5);
    CHECK(std::string(names) == "bino");
}

TEST_CASE("message size has one definition per collective", "[registry]")
{
    std::vector<std::size_t> counts{3, 0, 5, 2};
    loom_call_t call{};
    call.count = 10;
    call.counts = counts.data();
    call.op = reduction(true);
    call.coll = LOOM_COLL_ALLREDUCE;
    CHECK(loom_message_bytes(&call, 4) == 40);
    call.coll = LOOM_COLL_REDUCE;
    CHECK(loom_message_bytes(&call, 4) == 40);
    call.coll = LOOM_COLL_REDUCE_SCATTER;
    CHECK(loom_message_bytes(&call, 4) == 40);
    call.coll = LOOM_COLL_ALLGATHERV;
    CHECK(loom_message_bytes(&call, 4) == 10);
    call.coll = LOOM_COLL_BCAST;
    CHECK(loom_message_bytes(&call, 4) == 10);
    call.coll = LOOM_COLL_ALLTOALL;
    CHECK(loom_message_bytes(&call, 4) == 10);
    call.coll = LOOM_COLL_BARRIER;
    CHECK(loom_message_bytes(&call, 4) == 0);
}

TEST_CASE("message size: neighbor_allgather and neighbor_alltoall have a block's on a Cartesian communicator only",
          "[registry]")
{
    // A ring of 4 (one periodic dimension): 2 neighbours; 16 bytes sent, 24 received per block
    // (MPI lets a rank's send and receive blocks differ; its neighbours' are the other way round,
    // so the larger is every rank's).
    const int ring[2] = {3, 1}, dims[1] = {4}, periods[1] = {1};
    loom_neighbourhood_t n{};
    n.kind = LOOM_TOPO_CARTESIAN;
    n.indegree = n.outdegree = n.degree = 2;
    n.ndims = 1;
    n.sources = n.destinations = ring;
    n.dims = dims;
    n.periods = periods;
    std::vector<std::size_t> gathered{16, 24, 24}, per_neighbour{16, 16, 24, 24};
    loom_call_t call{};
    call.neighbours = &n;
    call.coll = LOOM_COLL_NEIGHBOR_ALLGATHER;
    call.counts = gathered.data();
    CHECK(loom_message_bytes(&call, 4) == 24);
    call.coll = LOOM_COLL_NEIGHBOR_ALLTOALL;
    call.counts = per_neighbour.data();
    CHECK(loom_message_bytes(&call, 4) == 24);
    // The v and w forms, and any form on a graph or distributed graph: 0.
    call.coll = LOOM_COLL_NEIGHBOR_ALLTOALLV;
    CHECK(loom_message_bytes(&call, 4) == 0);
    call.coll = LOOM_COLL_NEIGHBOR_ALLTOALL;
    n.kind = LOOM_TOPO_DIST_GRAPH;
    CHECK(loom_message_bytes(&call, 4) == 0);
    n.kind = LOOM_TOPO_GRAPH;
    call.coll = LOOM_COLL_NEIGHBOR_ALLGATHER;
    call.counts = gathered.data();
    CHECK(loom_message_bytes(&call, 4) == 0);
}
