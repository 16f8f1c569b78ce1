// loom-sim (tools/sim): the simulated transport runs the registry's real algorithms, so
//   * with a flat model its times equal the textbook costs, exactly: the model's costs are
//     powers of two, so every sum of the simulation is exact in floating point;
//   * it sends exactly the messages the in-process transport sees from the same code;
//   * a run is deterministic, whatever the thread count;
//   * contention (node ports, tapered fat-tree links) slows what it should;
//   * model files and emitted rule files parse, and bad model files are named precisely.
#include "engine.hpp"
#include "inproc_transport.hpp"
#include "model.hpp"
#include "registry.hpp"
#include "reduce_kernels.hpp"
#include "rules.hpp"
#include "sweep.hpp"

#include "loom_catch.hpp"

#include <cmath>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::sim;

namespace {

constexpr double a = 1.0 / (1 << 20);    // latency, s (about 0.95 us)
constexpr double b = 1.0 / (1ull << 33); // per byte, s (about 8.6 GB/s)
constexpr double g = 1.0 / (1ull << 32); // reduction per byte, s

const Model& flat()
{
    static const Model m = flat_model(a, b, g);
    return m;
}

const Algorithm& algo(Collective c, const char* name)
{
    const Algorithm* found = find_algorithm(c, name);
    REQUIRE(found != nullptr);
    return *found;
}

Result run(const Model& m, Collective c, const char* name, int P, std::size_t bytes, int ppn = 0)
{
    Scenario s;
    s.algorithm = &algo(c, name);
    s.ranks = P;
    s.bytes = bytes;
    s.ranks_per_node = ppn;
    return simulate(m, s);
}

int ceil_lg(int P)
{
    int l = 0;
    while ((1 << l) < P) ++l;
    return l;
}

} // namespace

TEST_CASE("sim: flat model times equal the textbook costs", "[sim][closed_form]")
{
    for (int P : {1, 2, 3, 4, 5, 7, 8, 13, 16, 32, 64, 100, 128}) {
        CAPTURE(P);
        const double p = P, lg = ceil_lg(P);
        const bool pow2 = (P & (P - 1)) == 0;
        for (std::size_t m : {std::size_t(64), std::size_t(4096), std::size_t(1) << 16}) {
            CAPTURE(m);
            const double S = double(m) * P; // blocks of m bytes: equal for every rank
            // ring allreduce: 2(P-1) a + 2 (P-1)/P S b + (P-1)/P S g
            CHECK(run(flat(), Collective::allreduce, "ring", P, std::size_t(S)).seconds ==
                  2 * (p - 1) * a + 2 * (p - 1) / p * S * b + (p - 1) / p * S * g);
            // ring allgather: (P-1) (a + S/P b); without data, no steps at all
            CHECK(run(flat(), Collective::allgather, "ring", P, std::size_t(S)).seconds == (p - 1) * (a + S / p * b));
            // Bruck allgather, any P: ceil(lg P) a + (P-1)/P S b
            CHECK(run(flat(), Collective::allgather, "bruck", P, std::size_t(S)).seconds ==
                  lg * a + (p - 1) / p * S * b);
            if (pow2) {
                // Rabenseifner: 2 lg P a + 2 (P-1)/P S b + (P-1)/P S g
                CHECK(run(flat(), Collective::allreduce, "halving_doubling", P, std::size_t(S)).seconds ==
                      2 * lg * a + 2 * (p - 1) / p * S * b + (p - 1) / p * S * g);
                // recursive doubling: lg P (a + S b + S g)
                CHECK(run(flat(), Collective::allreduce, "recursive_doubling", P, std::size_t(S)).seconds ==
                      lg * (a + S * b + S * g));
                // recursive doubling allgather: lg P a + (P-1)/P S b
                CHECK(run(flat(), Collective::allgather, "recursive_doubling", P, std::size_t(S)).seconds ==
                      lg * a + (p - 1) / p * S * b);
                // binomial bcast (unsegmented): lg P (a + S b)
                CHECK(run(flat(), Collective::bcast, "binomial", P, std::size_t(S)).seconds == lg * (a + S * b));
            }
        }
        // dissemination barrier: ceil(lg P) a
        CHECK(run(flat(), Collective::barrier, "bruck", P, 0).seconds == lg * a);
        // no data, no messages
        // (loom-sim has no process topology for the neighbourhood collectives: engine.cpp)
        for (const Algorithm& x : all_algorithms())
            if (x.collective != Collective::barrier && counts(x.collective) != Counts::per_neighbour &&
                !why_not(x, CallShape{P, 0, true}))
                CHECK(run(flat(), x.collective, x.name.data(), P, 0).total_messages == 0);
    }
}

TEST_CASE("sim: the same messages as the in-process transport, for every algorithm", "[sim][schedule]")
{
    loom_reduction_t bxor{};
    REQUIRE(loom_find_kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8, &bxor));
    for (const Algorithm& algorithm : all_algorithms()) {
        if (counts(algorithm.collective) == Counts::per_neighbour) continue; // not modelled: engine.cpp
        for (int P : {1, 2, 3, 5, 8, 12, 17}) {
            if (why_not(algorithm, CallShape{P, 0, true})) continue;
            for (std::size_t bytes :
                 {std::size_t(0), std::size_t(1), std::size_t(P + 3), std::size_t(1000), std::size_t(70000)}) {
                CAPTURE(algorithm.name, to_string(algorithm.collective), P, bytes);
                Scenario s;
                s.algorithm = &algorithm;
                s.ranks = P;
                s.bytes = bytes;
                s.root = P / 2;
                s.buffer_bytes = 4096; // small, so PAT's buffer bound shapes its schedule
                const Result sim = simulate(flat(), s);

                std::vector<std::vector<std::byte>> in{std::size_t(P)}, out{std::size_t(P)};
                const auto stats = test::run_ranks(P, [&](test::InprocTransport& net) {
                    const auto r = std::size_t(net.rank());
                    CallLayout layout = layout_call(s, nullptr, nullptr);
                    in[r].assign(layout.buffer_bytes + 1, std::byte{1});
                    out[r].assign(layout.buffer_bytes + 1, std::byte{0});
                    layout = layout_call(s, in[r].data(), out[r].data());
                    layout.call.op = bxor;
                    if (algorithm.collective == Collective::bcast) layout.call.rbuf = in[r].data();
                    HostMemory mem;
                    run_call(algorithm, net, mem, layout.call);
                });
                std::size_t max_msgs = 0, max_bytes = 0, total = 0;
                for (int r = 0; r < P; ++r) {
                    max_msgs = std::max(max_msgs, stats.messages_sent[std::size_t(r)]);
                    max_bytes = std::max(max_bytes, stats.bytes_sent[std::size_t(r)]);
                    total += stats.messages_sent[std::size_t(r)];
                }
                CHECK(sim.messages_max == max_msgs);
                CHECK(sim.bytes_sent_max == max_bytes);
                CHECK(sim.total_messages == total);
            }
        }
    }
}

TEST_CASE("sim: deterministic, whatever the thread count", "[sim][determinism]")
{
    Model m = flat_model(a, b, g);
    m.ranks_per_node = 4;
    m.intra = LinkCost{a / 4, b / 4};
    m.fat_tree_radix = 4;
    m.taper = {2, 2};
    m.eager_limit = 4096;
    SweepSpec spec;
    spec.model = &m;
    for (const Algorithm& x : all_algorithms())
        if (x.collective == Collective::allgather && !x.needs.same_node)
            spec.algorithms.push_back(&x); // no shared memory in loom-sim
    spec.shape.ranks = 200;
    spec.sizes = power_of_two_sizes(256, 1 << 20);
    spec.jobs = 1;
    const auto one = run_sweep(spec);
    spec.jobs = 3;
    const auto three = run_sweep(spec);
    const auto again = run_sweep(spec);
    REQUIRE(one.size() == three.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
        REQUIRE(one[i].error.empty());
        CHECK(one[i].result.seconds == three[i].result.seconds);
        CHECK(three[i].result.seconds == again[i].result.seconds);
        CHECK(one[i].result.bytes_by_level == three[i].result.bytes_by_level);
        CHECK(one[i].result.total_messages == three[i].result.total_messages);
    }
}

TEST_CASE("sim: contention at node ports and tapered fat-tree links", "[sim][contention]")
{
    SECTION("two ranks per node share the node's port")
    {
        // Pairwise alltoall, 4 ranks on 2 nodes: every step both ranks of a node send off
        // node at once (steps 1 and 3), so those transfers serialise on the node port.
        Model m = flat_model(a, b, g);
        m.intra = LinkCost{a, b};
        const std::size_t block = 1 << 16;
        const double one_node_each = run(m, Collective::alltoall, "pairwise", 4, block, 1).seconds;
        const double two_per_node = run(m, Collective::alltoall, "pairwise", 4, block, 2).seconds;
        CHECK(one_node_each == 3 * (a + double(block) * b));
        CHECK(two_per_node > one_node_each);
    }
    SECTION("bytes by level, and a taper slows what crosses the top")
    {
        Model m = flat_model(a, b, g);
        m.fat_tree_radix = 4; // 64 nodes: 3 levels
        const int P = 64;
        const std::size_t S = std::size_t(P) << 12;
        const Result full = run(m, Collective::allgather, "recursive_doubling", P, S);
        REQUIRE(full.levels == 3);
        REQUIRE(full.bytes_by_level.size() == 4);
        // Distance 1, 2 stay under a leaf switch (level 1), 4 and 8 reach level 2, 16 and 32
        // the top; step k moves 2^k blocks of 4 KiB per rank.
        const double block = double(S) / P;
        CHECK(full.bytes_by_level[0] == 0);
        CHECK(full.bytes_by_level[1] == P * (1 + 2) * block);
        CHECK(full.bytes_by_level[2] == P * (4 + 8) * block);
        CHECK(full.bytes_by_level[3] == P * (16 + 32) * block);
        m.taper = {1, 4};
        const Result tapered = run(m, Collective::allgather, "recursive_doubling", P, S);
        CHECK(tapered.seconds > full.seconds);
        CHECK(tapered.bytes_by_level == full.bytes_by_level);
        // PAT sends its small messages far and its large ones near: far less at the top.
        const Result pat = run(m, Collective::allgather, "pat", P, S);
        CHECK(pat.bytes_by_level[3] * 4 < tapered.bytes_by_level[3]);
    }
}

namespace {
// Every rank completes its send to the right before it receives from the left: fine while
// sends are eager, a deadlock once they need their receive posted (rendezvous).
void send_then_recv(Transport& net, MemoryOps&, const AllgatherArgs& args)
{
    const int P = net.size(), r = net.rank();
    std::byte* out = static_cast<std::byte*>(args.recvbuf);
    net.post_send((r + 1) % P, out, args.bytes[0]);
    net.wait_all();
    net.post_recv((r + P - 1) % P, out, args.bytes[0]);
    net.wait_all();
}
void unmatched(Transport& net, MemoryOps&, const AllgatherArgs& args)
{
    if (net.rank() == 0) net.post_send(1, args.recvbuf, 8);
    net.wait_all();
}
} // namespace

TEST_CASE("sim: a schedule bug is reported, not hidden", "[sim][errors]")
{
    Model m = flat_model(a, b, g);
    m.eager_limit = 1024;
    const Algorithm deadlock{"send_then_recv", Collective::allgather, "", "", {}, AllgatherFn{&send_then_recv}};
    Scenario s;
    s.algorithm = &deadlock;
    s.ranks = 4;
    s.bytes = 4 * 4096;
    CHECK_THROWS_WITH(simulate(m, s), Catch::Matchers::ContainsSubstring("deadlock"));
    s.bytes = 4 * 512; // eager: the same schedule completes
    CHECK(simulate(m, s).seconds > 0);
    const Algorithm lost{"unmatched", Collective::allgather, "", "", {}, AllgatherFn{&unmatched}};
    s.algorithm = &lost;
    CHECK_THROWS_WITH(simulate(m, s), Catch::Matchers::ContainsSubstring("never matched"));
}

TEST_CASE("sim: model files", "[sim][model]")
{
    Model m;
    m.name = "test";
    m.description = "a model # with a hash";
    m.ranks_per_node = 8;
    m.cores_per_node = 2;
    m.intra = LinkCost{3e-7, 1.0 / 20e9};
    m.inter = LinkCost{1.5e-6, 1.0 / 25e9};
    m.reduce_per_byte_s = 1.0 / 5e9;
    m.copy_per_byte_s = 0;
    m.eager_limit = 65536;
    m.fat_tree_radix = 16;
    m.taper = {1, 2};
    m.hop_latency_s = 1e-7;
    m.description = "a model";
    const Model back = parse_model(format_model(m), "round.model");
    CHECK(back.name == m.name);
    CHECK(back.description == m.description);
    CHECK(back.ranks_per_node == 8);
    CHECK(back.cores_per_node == 2);
    CHECK(back.intra.latency_s == Catch::Approx(m.intra.latency_s).epsilon(1e-15));
    CHECK(back.intra.per_byte_s == Catch::Approx(m.intra.per_byte_s).epsilon(1e-15));
    CHECK(back.inter.per_byte_s == Catch::Approx(m.inter.per_byte_s).epsilon(1e-15));
    CHECK(back.reduce_per_byte_s == Catch::Approx(m.reduce_per_byte_s).epsilon(1e-15));
    CHECK(back.copy_per_byte_s == 0);
    CHECK(back.eager_limit == 65536);
    CHECK(back.fat_tree_radix == 16);
    CHECK(back.taper == std::vector<double>{1, 2});
    CHECK(back.hop_latency_s == Catch::Approx(1e-7).epsilon(1e-15));

    const std::string good = "loom-sim-model 1\nintra_latency_us = 1\nintra_bandwidth_GBps = 1\n"
                             "inter_latency_us = 1\ninter_bandwidth_GBps = 1\n";
    CHECK_NOTHROW(parse_model(good, "ok.model"));
    CHECK_THROWS_WITH(parse_model("loom-rules 1\n", "x.model"),
                      "x.model:1: expected the header 'loom-sim-model 1', found 'loom-rules 1'");
    CHECK_THROWS_WITH(parse_model(good + "inter_latncy_us = 2\n", "x.model"),
                      "x.model:6: unknown key 'inter_latncy_us' (did you mean 'inter_latency_us'?)");
    CHECK_THROWS_WITH(parse_model(good + "reduce_bandwidth_GBps = fast\n", "x.model"),
                      "x.model:6: reduce_bandwidth_GBps: 'fast' is not a number");
    CHECK_THROWS_WITH(parse_model(good + "intra_latency_us = 2\n", "x.model"),
                      "x.model:6: 'intra_latency_us' is set twice");
    CHECK_THROWS_WITH(parse_model(good + "fat_tree_taper = 2 0.5\n", "x.model"),
                      Catch::Matchers::StartsWith("x.model:6: fat_tree_taper: a taper factor is >= 1"));
    CHECK_THROWS_WITH(parse_model(good + "copy_bandwidth_GBps = 0\n", "x.model"),
                      Catch::Matchers::StartsWith("x.model:6: copy_bandwidth_GBps: a bandwidth must be > 0"));
    CHECK_THROWS_WITH(parse_model(good + "ranks_per_node = 2.5\n", "x.model"),
                      Catch::Matchers::StartsWith("x.model:6: ranks_per_node: '2.5' is not a whole number"));
    CHECK_THROWS_WITH(parse_model(good + "nonsense\n", "x.model"),
                      "x.model:6: expected 'key = value', found 'nonsense'");
    CHECK_THROWS_WITH(parse_model("loom-sim-model 1\nintra_latency_us = 1\n", "x.model"),
                      "x.model: 'intra_bandwidth_GBps' is missing");
    CHECK_THROWS_WITH(parse_model("", "x.model"), Catch::Matchers::ContainsSubstring("empty model file"));
    CHECK_THROWS_WITH(load_model("/nonexistent/x.model"), "/nonexistent/x.model: cannot open the model file");
}

TEST_CASE("sim: an emulated cluster: shared cores, TCP's CPU cost, its own eager limit", "[sim][emucluster]")
{
    // Ring allgather of 4 ranks, one per node: 3 steps of one block, every message between nodes.
    const int P = 4;
    const std::size_t S = std::size_t(P) << 12;
    const double block = double(S) / P;
    Model m = flat_model(a, b, g);
    CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (a + block * b));
    SECTION("every node's ranks share the machine's cores: 4 ranks on 2 cores, latency twice")
    {
        m.shared_cores = 2;
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (2 * a + block * b));
        m.shared_cores = 4; // a core per rank: nothing changes
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (a + block * b));
    }
    SECTION("the machine's TCP capacity: transfers between nodes take turns at the CPU's rate")
    {
        // 2 ranks on 2 cores (no share): the exchange's two directions take turns.
        m.shared_cores = 2;
        m.inter_cpu_per_byte_s = 2 * b;
        CHECK(run(m, Collective::allgather, "ring", 2, 2 << 12, 1).seconds == a + 2 * 4096 * (2 * b));
        m.inter_cpu_per_byte_s = 0; // without it, both directions at once at the link's rate
        CHECK(run(m, Collective::allgather, "ring", 2, 2 << 12, 1).seconds == a + 4096 * b);
        m.shared_cores = 0; // not an emulated cluster: the key does nothing
        m.inter_cpu_per_byte_s = 2 * b;
        CHECK(run(m, Collective::allgather, "ring", 2, 2 << 12, 1).seconds == a + 4096 * b);
    }
    SECTION("the inter-node eager limit applies between nodes only")
    {
        const Algorithm deadlock{"send_then_recv", Collective::allgather, "", "", {}, AllgatherFn{&send_then_recv}};
        m.eager_limit = std::size_t(-1);
        m.inter_eager_limit = 1024;
        Scenario s;
        s.algorithm = &deadlock;
        s.ranks = 4;
        s.bytes = 4 * 4096;
        s.ranks_per_node = 4; // one node: eager, completes
        CHECK(simulate(m, s).seconds > 0);
        s.ranks_per_node = 1; // across nodes: rendezvous, the schedule deadlocks
        CHECK_THROWS_WITH(simulate(m, s), Catch::Matchers::ContainsSubstring("deadlock"));
    }
    SECTION("oversubscribed: a rank that blocked resumes a wake-up later")
    {
        m.oversubscribed_wakeup_s = a / 2;
        // 4 ranks, a core each: no wake-up cost
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (a + block * b));
        // 4 ranks on 2 cores: every step's wait blocks, so each of the 3 steps costs a wake-up more
        m.shared_cores = 2;
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (2 * a + block * b + a / 2));
    }
    SECTION("a rendezvous handshake: the request there, the answer back")
    {
        // 2 ranks exchange one block of 4 KiB: eager, it leaves when sent; above the eager limit
        // with one handshake it starts 2 latencies later.
        const std::size_t two = 2 << 12;
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * b);
        m.eager_limit = 1024;
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * b);
        m.rendezvous_handshakes = 1;
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == 3 * a + 4096 * b);
        m.inter_eager_limit = 1 << 20; // between nodes eager again
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * b);
    }
    SECTION("one connection's two directions: a rendezvous exchange between two ranks is slower")
    {
        // 2 ranks on 2 nodes exchange one block of 4 KiB; 4 ranks in a ring send to one peer and
        // receive from another.
        const std::size_t two = 2 << 12;
        m.eager_limit = 1024;
        m.inter_exchange_per_byte_s = 3 * b;
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * (3 * b));
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == 3 * (a + block * b));
        m.eager_limit = std::size_t(-1); // eager messages are not affected
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * b);
        m.eager_limit = 1024; // nor two ranks of one node
        CHECK(run(m, Collective::allgather, "ring", 2, two, 2).seconds == a + 4096 * b);
        m.inter_exchange_after = 1024; // the first KiB at the link's rate, the rest slower
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 1024 * b + 3072 * (3 * b));
        m.inter_exchange_after = 4096; // the whole message
        CHECK(run(m, Collective::allgather, "ring", 2, two, 1).seconds == a + 4096 * b);
        m.inter_exchange_after = 1024;
        const Model back = parse_model(format_model(m), "exchange.model");
        CHECK(back.inter_exchange_per_byte_s == Catch::Approx(3 * b).epsilon(1e-15));
        CHECK(back.inter_exchange_after == 1024);
    }
    SECTION("shared cores: copies, reductions and shared-memory transfers queue for the machine's cores")
    {
        Model one = m;
        one.shared_cores = 2;
        // 2 ranks on 2 cores: a core each, nothing waits.
        CHECK(run(one, Collective::allreduce, "ring", 2, S, 2).seconds == run(m, Collective::allreduce, "ring", 2, S, 2).seconds);
        // 4 ranks on 2 cores: their transfers and reductions take turns.
        CHECK(run(one, Collective::allreduce, "ring", P, S, P).seconds > run(m, Collective::allreduce, "ring", P, S, P).seconds);
    }
    SECTION("per-message CPU overhead between nodes: part of the latency, paid once per message")
    {
        // One message per rank and step: the overheads come out of the latency, nothing changes.
        m.inter_send_overhead_s = a / 2;
        m.inter_recv_overhead_s = a / 4;
        CHECK(run(m, Collective::allgather, "ring", P, S, 1).seconds == Catch::Approx(3 * (a + block * b)).epsilon(1e-12));
        // A root that sends to 3 nodes at once pays its send overhead 3 times: slower than without.
        Model none = flat_model(a, b, g);
        const double with = run(m, Collective::bcast, "knomial", P, 8, 1).seconds;
        const double without = run(none, Collective::bcast, "knomial", P, 8, 1).seconds;
        CHECK(with > without);
        // Inside one node: no overhead.
        CHECK(run(m, Collective::allgather, "ring", P, S, P).seconds == run(none, Collective::allgather, "ring", P, S, P).seconds);
        m.inter_send_overhead_s = 2 * a; // more than the latency it is part of
        CHECK_THROWS_AS(parse_model(format_model(m), "bad.model"), ModelError);
    }
    SECTION("the keys round-trip through a model file")
    {
        m.rendezvous_handshakes = 1;
        m.oversubscribed_wakeup_s = 5e-5;
        m.shared_cores = 2;
        m.inter_cpu_per_byte_s = 1.0 / 2e9;
        m.inter_eager_limit = 65536;
        m.inter_send_overhead_s = a / 2;
        m.inter_recv_overhead_s = a / 4;
        const Model back = parse_model(format_model(m), "emu.model");
        CHECK(back.inter_send_overhead_s == Catch::Approx(a / 2).epsilon(1e-15));
        CHECK(back.inter_recv_overhead_s == Catch::Approx(a / 4).epsilon(1e-15));
        CHECK(back.shared_cores == 2);
        CHECK(back.oversubscribed_wakeup_s == Catch::Approx(5e-5).epsilon(1e-15));
        CHECK(back.rendezvous_handshakes == 1);
        CHECK(back.inter_cpu_per_byte_s == Catch::Approx(m.inter_cpu_per_byte_s).epsilon(1e-15));
        REQUIRE(back.inter_eager_limit.has_value());
        CHECK(*back.inter_eager_limit == 65536);
        CHECK_FALSE(parse_model(format_model(flat_model(a, b, g)), "flat.model").inter_eager_limit.has_value());
    }
}

TEST_CASE("sim: winners and the emitted rule file", "[sim][rules]")
{
    const Algorithm& ring = algo(Collective::allgather, "ring");
    const Algorithm& bruck = algo(Collective::allgather, "bruck");
    auto point = [](const Algorithm& x, std::size_t bytes, double t) {
        SweepPoint p{&x, bytes, {}, {}};
        p.result.seconds = t;
        p.result.bytes = bytes;
        return p;
    };
    std::vector<SweepPoint> points = {point(ring, 1024, 5),  point(bruck, 1024, 2), point(ring, 2048, 6),
                                      point(bruck, 2048, 3), point(ring, 4096, 4),  point(bruck, 4096, 4),
                                      point(ring, 8192, 5),  point(bruck, 8192, 9)};
    points.push_back(SweepPoint{&ring, 16384, {}, "failed"});
    points.push_back(point(bruck, 16384, 20));
    points.push_back(point(ring, 32, 1)); // blocks rounded to nothing: not a size to choose for
    points.back().result.bytes = 0;
    const auto ws = winners(points);
    REQUIRE(ws.size() == 5);
    CHECK(ws[0].algorithm == &bruck);
    CHECK(ws[0].runner_up == &ring);
    CHECK(ws[0].runner_up_seconds == 5);
    CHECK(ws[2].algorithm == &ring); // a tie goes to the earlier algorithm
    CHECK(ws[3].algorithm == &ring);
    CHECK(ws[4].algorithm == &bruck); // the failed point never wins
    CHECK(ws[4].runner_up == nullptr);
    const std::string text = emit_rules(ws, 64, {"made by a test"}, 0, 0);
    CHECK(text == "loom-rules 1\n"
                  "# made by a test\n"
                  "allgather             64      0-4095            bruck\n"
                  "allgather             64      4K-16383          ring\n"
                  "allgather             64      16K-*             bruck\n");
    const auto parsed = rules::parse(text, "emitted.rules");
    CHECK(parsed.diagnostics.empty());
    CHECK(parsed.rules.size() == 3);
}

TEST_CASE("sim: sweep sizes", "[sim][rules]")
{
    CHECK(power_of_two_sizes(8, 64) == std::vector<std::size_t>{8, 16, 32, 64});
    CHECK(power_of_two_sizes(5, 40) == std::vector<std::size_t>{8, 16, 32});
    CHECK(power_of_two_sizes(0, 4) == std::vector<std::size_t>{0, 1, 2, 4});
    CHECK(power_of_two_sizes(100, 64).empty());
    CHECK(power_of_two_sizes(std::size_t(1) << 62, std::size_t(-1)) ==
          std::vector<std::size_t>{std::size_t(1) << 62, std::size_t(1) << 63});
}
