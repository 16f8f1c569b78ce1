// The hierarchical family and topology-aware rings on the in-process transport, with
// synthetic topologies: by slot, uneven nodes, round-robin, scattered, one rank per node and
// one node. Every rank's result is checked against the sequential reference, for every
// leaders' algorithm that can serve the inter-node phase, in place and not. The intra-node
// phases run the shm family over a real shared segment per node (node_shared_state).
#include "hierarchical.hpp"
#include "registry.hpp"
#include "ring.hpp"
#include "test_support.hpp"
#include "topology.hpp"

#include "loom_catch.hpp"

#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// Node of each rank for a named placement, renumbered in order of first appearance.
std::vector<int> placement(const std::string& kind, int P)
{
    std::vector<std::string> hosts;
    for (int r = 0; r < P; ++r) {
        int node = 0;
        if (kind == "by_slot")
            node = r / 3;
        else if (kind == "round_robin")
            node = r % 3;
        else if (kind == "uneven")
            node = r == 0 ? 0 : r < 4 ? 1 : r < 6 ? 2 : 3 + (r - 6) / 4; // 1, 3, 2, 4, 4...
        else if (kind == "scattered")
            node = (r * 7 + r / 2) % 4;
        else if (kind == "one_per_node")
            node = r;
        else if (kind == "one_node")
            node = 0;
        hosts.push_back("host" + std::to_string(node));
    }
    return topo::node_ids(hosts);
}

std::unique_ptr<topo::Layout> make_layout(const std::string& kind, int P)
{
    std::vector<topo::Place> places;
    for (int n : placement(kind, P)) places.push_back(topo::Place{n, -1, -1, -1});
    return std::make_unique<topo::Layout>(std::move(places));
}

const std::vector<std::string> kPlacements{"by_slot", "round_robin", "uneven", "scattered", "one_per_node", "one_node"};
const std::vector<int> kSizes{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 17, 33};

// Every flat algorithm that can serve the leaders (the registry's defaults among them).
std::vector<const Algorithm*> leader_choices(Collective c, int nodes, bool commutative)
{
    std::vector<const Algorithm*> out;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == c && !a.needs.topology && !a.needs.same_node &&
            !why_not(a, CallShape{nodes, 1, commutative, nodes}))
            out.push_back(&a);
    return out;
}

std::string name_of(const Algorithm* a) { return a == nullptr ? "default" : std::string(a->name); }

} // namespace

namespace {

// Runs allreduce algorithm `fn` on `layout` with every leaders' algorithm, the counts given,
// in place and not, and checks every rank's result against the sequential sum.
template <class T>
void check_allreduce_on(AllreduceFn fn, const std::string& kind, const topo::Layout& layout,
                        std::initializer_list<std::size_t> counts)
{
    const Reduction op = kernel(LOOM_OP_SUM, std::is_same_v<T, std::int32_t> ? LOOM_TYPE_INT32 : LOOM_TYPE_INT64);
    const int P = layout.ranks();
    for (const Algorithm* leaders : leader_choices(Collective::allreduce, layout.nodes(), true))
        for (std::size_t count : counts)
            for (bool in_place : {false, true}) {
                INFO(kind << " P=" << P << " leaders=" << name_of(leaders) << " count=" << count
                          << " in_place=" << in_place);
                const auto inputs = all_inputs(P, count, typed_input<T>());
                const Bytes expected = count == 0 ? Bytes{} : fold(op, inputs, count);
                std::vector<Bytes> results(static_cast<std::size_t>(P));
                run_ranks(P, [&](InprocTransport& net) {
                    net.set_layout(&layout);
                    const int r = net.rank();
                    Bytes out = in_place ? inputs[std::size_t(r)] : Bytes(inputs[std::size_t(r)].size());
                    HostMemory mem;
                    fn(net, mem,
                       AllreduceArgs{in_place ? nullptr : inputs[std::size_t(r)].data(), out.data(), count, op, 0, 0,
                                     leaders});
                    results[std::size_t(r)] = out;
                });
                for (int r = 0; r < P; ++r) {
                    INFO("rank=" << r);
                    CHECK(first_difference(results[std::size_t(r)], expected, sizeof(T)) == "");
                }
            }
}

} // namespace

TEST_CASE("hierarchical allreduce on synthetic topologies", "[hierarchical]")
{
    for (const std::string& kind : kPlacements)
        for (int P : kSizes)
            check_allreduce_on<std::int32_t>(&hierarchical_allreduce, kind, *make_layout(kind, P),
                                             {0, 1, std::size_t(P) + 1, 4099});
}

TEST_CASE("hierarchical_rs allreduce on topologies with equal nodes", "[hierarchical]")
{
    for (const std::string& kind :
         {std::string("by_slot"), std::string("round_robin"), std::string("one_per_node"), std::string("one_node")})
        for (int P : {1, 2, 3, 4, 6, 7, 9, 12, 15, 33}) {
            const auto layout = make_layout(kind, P);
            if (layout->min_ranks_per_node() != layout->max_ranks_per_node()) continue;
            check_allreduce_on<std::int64_t>(&hierarchical_rs_allreduce, kind, *layout,
                                             {0, 1, 2, std::size_t(P) + 1, 4099});
        }
}

TEST_CASE("hierarchical_rs needs the same number of ranks on every node", "[hierarchical]")
{
    const Algorithm* a = find_algorithm(Collective::allreduce, "hierarchical_rs");
    REQUIRE(a != nullptr);
    CHECK_FALSE(why_not(*a, CallShape{8, 64, true, 2, 4}).has_value());
    CHECK(why_not(*a, CallShape{7, 64, true, 2, 4}).has_value()); // 4 + 3
    CHECK(why_not(*a, CallShape{8, 64, true, 2, 0}).has_value()); // unknown
    CHECK(why_not(*a, CallShape{8, 64, false, 2, 4}).has_value());
    const auto uneven = make_layout("uneven", 6);
    CHECK_THROWS(run_ranks(6, [&](InprocTransport& net) {
        net.set_layout(uneven.get());
        HostMemory mem;
        std::int64_t x = 1;
        hierarchical_rs_allreduce(net, mem, AllreduceArgs{nullptr, &x, 1, kernel(LOOM_OP_SUM, LOOM_TYPE_INT64)});
    }));
}

TEST_CASE("hierarchical reduce on synthetic topologies, every root", "[hierarchical]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE);
    for (const std::string& kind : kPlacements)
        for (int P : {1, 2, 3, 5, 7, 9, 13}) {
            const auto layout = make_layout(kind, P);
            for (const Algorithm* leaders : leader_choices(Collective::reduce, layout->nodes(), true))
                for (int root = 0; root < P; ++root)
                    for (std::size_t count : {std::size_t(1), std::size_t(P) + 2, std::size_t(1031)})
                        for (bool in_place : {false, true}) {
                            INFO(kind << " P=" << P << " leaders=" << name_of(leaders) << " root=" << root
                                      << " count=" << count << " in_place=" << in_place);
                            const auto inputs = all_inputs(P, count, typed_input<double>());
                            const Bytes expected = fold(op, inputs, count);
                            Bytes at_root;
                            run_ranks(P, [&](InprocTransport& net) {
                                net.set_layout(layout.get());
                                const int r = net.rank();
                                HostMemory mem;
                                const bool me = r == root;
                                Bytes out = me && in_place ? inputs[std::size_t(r)] : Bytes(count * sizeof(double));
                                hierarchical_reduce(net, mem,
                                                    ReduceArgs{me && in_place ? nullptr : inputs[std::size_t(r)].data(),
                                                               me ? out.data() : nullptr, count, op, root, leaders});
                                if (me) at_root = out;
                            });
                            CHECK(first_difference(at_root, expected, sizeof(double)) == "");
                        }
        }
}

TEST_CASE("hierarchical bcast on synthetic topologies, every root", "[hierarchical]")
{
    for (const std::string& kind : kPlacements)
        for (int P : {1, 2, 3, 4, 6, 7, 9, 13, 17}) {
            const auto layout = make_layout(kind, P);
            for (const Algorithm* leaders : leader_choices(Collective::bcast, layout->nodes(), true))
                for (int root = 0; root < P; ++root)
                    for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(777), std::size_t(70001)}) {
                        INFO(kind << " P=" << P << " leaders=" << name_of(leaders) << " root=" << root
                                  << " bytes=" << bytes);
                        const Bytes data = pattern(root, bytes);
                        std::vector<Bytes> results(static_cast<std::size_t>(P));
                        run_ranks(P, [&](InprocTransport& net) {
                            net.set_layout(layout.get());
                            const int r = net.rank();
                            Bytes buf = r == root ? data : Bytes(bytes);
                            HostMemory mem;
                            hierarchical_bcast(net, mem, BcastArgs{buf.data(), bytes, root, 0, leaders});
                            results[std::size_t(r)] = buf;
                        });
                        for (int r = 0; r < P; ++r) {
                            INFO("rank=" << r);
                            CHECK(first_difference(results[std::size_t(r)], data) == "");
                        }
                    }
        }
}

TEST_CASE("hierarchical allgather(v) on synthetic topologies", "[hierarchical]")
{
    for (const std::string& kind : kPlacements)
        for (int P : kSizes) {
            const auto layout = make_layout(kind, P);
            for (const Algorithm* leaders : leader_choices(Collective::allgatherv, layout->nodes(), true))
                for (int shape = 0; shape < 3; ++shape)
                    for (bool in_place : {false, true}) {
                        // Equal blocks, uneven blocks with some empty, and one big block.
                        std::vector<std::size_t> bytes(static_cast<std::size_t>(P));
                        for (int r = 0; r < P; ++r)
                            bytes[std::size_t(r)] = shape == 0   ? 5
                                                    : shape == 1 ? std::size_t((r * 5) % 7)
                                                                 : (r == P / 2 ? 40000 : 3);
                        INFO(kind << " P=" << P << " leaders=" << name_of(leaders) << " shape=" << shape
                                  << " in_place=" << in_place);
                        const BlockOffsets blocks(bytes);
                        Bytes expected;
                        for (int r = 0; r < P; ++r) {
                            const Bytes b = pattern(r, bytes[std::size_t(r)]);
                            expected.insert(expected.end(), b.begin(), b.end());
                        }
                        std::vector<Bytes> results(static_cast<std::size_t>(P));
                        run_ranks(P, [&](InprocTransport& net) {
                            net.set_layout(layout.get());
                            const int r = net.rank();
                            const Bytes mine = pattern(r, bytes[std::size_t(r)]);
                            Bytes out(blocks.total(), std::byte{0xee});
                            if (in_place)
                                std::copy(mine.begin(), mine.end(), out.begin() + std::ptrdiff_t(blocks.begin(r)));
                            HostMemory mem;
                            hierarchical_allgather(
                                net, mem,
                                AllgatherArgs{in_place ? nullptr : mine.data(), out.data(), bytes, 0, leaders});
                            results[std::size_t(r)] = out;
                        });
                        for (int r = 0; r < P; ++r) {
                            INFO("rank=" << r);
                            CHECK(first_difference(results[std::size_t(r)], expected) == "");
                        }
                    }
        }
}

TEST_CASE("hierarchical algorithms refuse to run without a topology", "[hierarchical]")
{
    CHECK_THROWS(run_ranks(2, [](InprocTransport& net) {
        HostMemory mem;
        int x = 1;
        hierarchical_bcast(net, mem, BcastArgs{&x, sizeof x, 0, 0, find_algorithm(Collective::bcast, "binomial")});
    }));
}

TEST_CASE("hierarchical algorithms never pick their leaders' algorithm: without one they refuse", "[hierarchical]")
{
    const auto layout = make_layout("by_slot", 4);
    REQUIRE(layout->nodes() == 2);
    CHECK_THROWS_AS(run_ranks(4,
                              [&](InprocTransport& net) {
                                  net.set_layout(layout.get());
                                  HostMemory mem;
                                  int x = 1;
                                  hierarchical_bcast(net, mem, BcastArgs{&x, sizeof x, 0});
                              }),
                    std::logic_error);
    // Each of them has a registry default, which decide() hands it.
    for (const Algorithm& a : all_algorithms()) {
        if (!a.reads.leaders) continue;
        INFO(a.name);
        const Algorithm* d = find_algorithm(a.collective, a.default_leaders);
        REQUIRE(d != nullptr);
        CHECK(!d->needs.topology);
    }
}

TEST_CASE("the registry: hierarchical needs known nodes and, for reductions, a commutative op", "[hierarchical]")
{
    const Algorithm* a = find_algorithm(Collective::allreduce, "hierarchical");
    REQUIRE(a != nullptr);
    CHECK(why_not(*a, CallShape{8, 64, true, 0}).has_value());
    CHECK_FALSE(why_not(*a, CallShape{8, 64, true, 2}).has_value());
    CHECK(why_not(*a, CallShape{8, 64, false, 2}).has_value());
    for (Collective c : {Collective::bcast, Collective::reduce, Collective::allgather, Collective::allgatherv})
        CHECK(find_algorithm(c, "hierarchical") != nullptr);
}

// Topology-aware rings: with a round-robin placement the ring runs in node order, each rank
// sending only to the rank after it in the layout's ring, and the results are unchanged.
TEST_CASE("rings follow the topology's ring order", "[hierarchical]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT64);
    for (const std::string& kind : {std::string("round_robin"), std::string("scattered"), std::string("by_slot")})
        for (int P : {2, 3, 5, 7, 8, 12}) {
            const auto layout = make_layout(kind, P);
            for (std::size_t count : {std::size_t(1), std::size_t(P) - 1, std::size_t(2 * P + 3), std::size_t(5000)})
                for (bool in_place : {false, true}) {
                    INFO(kind << " P=" << P << " count=" << count << " in_place=" << in_place);
                    const auto inputs = all_inputs(P, count, typed_input<std::int64_t>());
                    const Bytes sum = fold(op, inputs, count);
                    const std::vector<std::size_t> counts(static_cast<std::size_t>(P), count);
                    std::vector<std::size_t> gather_bytes(static_cast<std::size_t>(P));
                    for (int r = 0; r < P; ++r) gather_bytes[std::size_t(r)] = count + std::size_t(r % 3);
                    const BlockOffsets gathered(gather_bytes);
                    std::vector<Bytes> ar(static_cast<std::size_t>(P)), arp(static_cast<std::size_t>(P)),
                        rs(static_cast<std::size_t>(P)), ag(static_cast<std::size_t>(P));
                    run_ranks(P, [&](InprocTransport& net) {
                        net.set_layout(layout.get());
                        net.record_messages(true);
                        const int r = net.rank();
                        HostMemory mem;
                        const Bytes& in = inputs[std::size_t(r)];
                        ar[std::size_t(r)] = in_place ? in : Bytes(in.size());
                        ring_allreduce(
                            net, mem,
                            AllreduceArgs{in_place ? nullptr : in.data(), ar[std::size_t(r)].data(), count, op});
                        arp[std::size_t(r)] = in_place ? in : Bytes(in.size());
                        ring_pipelined_allreduce(
                            net, mem,
                            AllreduceArgs{in_place ? nullptr : in.data(), arp[std::size_t(r)].data(), count, op, 256});
                        // Reduce-scatter of P blocks of `count` elements: the input is every
                        // rank's vector P times, shifted per block.
                        Bytes rs_in;
                        for (int b = 0; b < P; ++b) {
                            const Bytes blk = as_bytes(rank_input<std::int64_t>(r, count, std::size_t(b)));
                            rs_in.insert(rs_in.end(), blk.begin(), blk.end());
                        }
                        Bytes rs_out = in_place ? rs_in : Bytes(count * 8);
                        ring_reduce_scatter(
                            net, mem, ReduceScatterArgs{in_place ? nullptr : rs_in.data(), rs_out.data(), counts, op});
                        rs_out.resize(count * 8);
                        rs[std::size_t(r)] = rs_out;
                        const Bytes mine = pattern(r, gather_bytes[std::size_t(r)]);
                        Bytes ag_out(gathered.total());
                        if (in_place)
                            std::copy(mine.begin(), mine.end(), ag_out.begin() + std::ptrdiff_t(gathered.begin(r)));
                        ring_allgather(net, mem,
                                       AllgatherArgs{in_place ? nullptr : mine.data(), ag_out.data(), gather_bytes});
                        ag[std::size_t(r)] = ag_out;
                        const int right = layout->ring()[std::size_t((layout->ring_position(r) + 1) % P)];
                        for (const auto& m : net.sent_messages())
                            if (m.peer != right) {
                                rank_check(false, "sent to rank " + std::to_string(m.peer) +
                                                      ", not to its right neighbour " + std::to_string(right));
                                break;
                            }
                    });
                    Bytes all_blocks;
                    for (int r = 0; r < P; ++r) {
                        const Bytes b = pattern(r, gather_bytes[std::size_t(r)]);
                        all_blocks.insert(all_blocks.end(), b.begin(), b.end());
                    }
                    for (int r = 0; r < P; ++r) {
                        INFO("rank=" << r);
                        CHECK(first_difference(ar[std::size_t(r)], sum, 8) == "");
                        CHECK(first_difference(arp[std::size_t(r)], sum, 8) == "");
                        std::vector<Bytes> block_inputs;
                        for (int q = 0; q < P; ++q)
                            block_inputs.push_back(as_bytes(rank_input<std::int64_t>(q, count, std::size_t(r))));
                        CHECK(first_difference(rs[std::size_t(r)], fold(op, block_inputs, count), 8) == "");
                        CHECK(first_difference(ag[std::size_t(r)], all_blocks) == "");
                    }
                }
        }
}
