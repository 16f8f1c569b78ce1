// The segmented hierarchical family and the hierarchical reduce-scatter on the in-process
// transport, with synthetic topologies (by slot, round-robin, uneven nodes, one rank per node,
// one node) from 1 to 33 ranks. Every rank's result is checked against a reference the test
// computes; segments are forced small (a few elements) so that many run, and every case runs
// both with a transport that tests without blocking (phases overlap) and one that cannot
// (test_all() is -1, as loom-sim's: phases one after another).
#include "hierarchical_segmented.hpp"
#include "fiber.hpp"
#include "overlap.hpp"
#include "registry.hpp"
#include "test_support.hpp"
#include "topology.hpp"

#include "loom_catch.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// A layout from each rank's node number.
std::unique_ptr<topo::Layout> layout_for(const std::string& kind, int P)
{
    std::vector<std::string> hosts;
    for (int r = 0; r < P; ++r) {
        const int node = kind == "by_slot"       ? r / 4
                         : kind == "round_robin" ? r % 3
                         : kind == "uneven"      ? (r < 1 ? 0 : r < 5 ? 1 : 2 + (r - 5) / 2) // 1, 4, 2, 2...
                         : kind == "one_per_node" ? r
                                                  : 0;
        hosts.push_back("h" + std::to_string(node));
    }
    std::vector<topo::Place> places;
    for (int n : topo::node_ids(hosts)) places.push_back(topo::Place{n, -1, -1, -1});
    return std::make_unique<topo::Layout>(std::move(places));
}

const std::vector<std::string> kKinds{"by_slot", "round_robin", "uneven", "one_per_node", "one_node"};
const std::vector<int> kRanks{1, 2, 3, 4, 5, 7, 9, 13};

// The registry's default for the leaders, and every other flat one where `all`.
std::vector<const Algorithm*> leaders_for(Collective c, std::string_view seg_name, int nodes, bool all)
{
    const Algorithm* self = find_algorithm(c, seg_name);
    std::vector<const Algorithm*> out{find_algorithm(c, self->default_leaders)};
    if (all)
        for (const Algorithm& a : all_algorithms())
            if (a.collective == c && !a.needs.topology && !a.needs.same_node && &a != out[0] &&
                !why_not(a, CallShape{nodes, 1, true, nodes}))
                out.push_back(&a);
    return out;
}

// The counts a case runs: 0, 1, below P, odd, and large (several default segments at 8 bytes).
std::vector<std::size_t> counts_of(int P) { return {0, 1, std::size_t(P > 1 ? P - 1 : 2), 1001, 70001}; }

// Segment sizes: tiny (many segments), a few KiB, and the default.
const std::vector<std::size_t> kSegments{24, 4096, 0};

void check_allreduce(const Reduction& op, const InputFn& input, const std::string& kind, int P, bool all_leaders)
{
    const auto layout = layout_for(kind, P);
    for (const Algorithm* leaders : leaders_for(Collective::allreduce, "hierarchical_seg", layout->nodes(), all_leaders))
        for (std::size_t count : counts_of(P))
            for (std::size_t seg : kSegments)
                for (int variant = 0; variant < 4; ++variant) {
                    const bool in_place = variant & 1, testable = variant & 2;
                    if (count == 70001 && seg == 24) continue; // 23000 segments: long, and 4096 covers it
                    INFO(kind << " P=" << P << " leaders=" << leaders->name << " count=" << count << " segment=" << seg
                              << " in_place=" << in_place << " testable=" << testable);
                    const auto inputs = all_inputs(P, count, input);
                    const Bytes expected = count == 0 ? Bytes{} : fold(op, inputs, count);
                    std::vector<Bytes> results(static_cast<std::size_t>(P));
                    run_ranks(P, [&](InprocTransport& net) {
                        net.set_layout(layout.get());
                        net.set_testable(testable);
                        const int r = net.rank();
                        Bytes out = in_place ? inputs[std::size_t(r)] : Bytes(inputs[std::size_t(r)].size());
                        HostMemory mem;
                        hierarchical_seg_allreduce(net, mem,
                                                   AllreduceArgs{in_place ? nullptr : inputs[std::size_t(r)].data(),
                                                                 out.data(), count, op, seg, 0, leaders});
                        results[std::size_t(r)] = out;
                    });
                    for (int r = 0; r < P; ++r) {
                        INFO("rank=" << r);
                        CHECK(first_difference(results[std::size_t(r)], expected, op.elem_size) == "");
                    }
                }
}

// reduce_scatter: rank q's block is counts[q] elements; blocks of `shape` 0 equal (the _block
// form), 1 uneven with empty ones.
void check_reduce_scatter(ReduceScatterFn fn, const std::string& kind, int P, std::size_t per, int shape,
                          bool all_leaders)
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT64);
    const auto layout = layout_for(kind, P);
    std::vector<std::size_t> counts(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q) counts[std::size_t(q)] = shape == 0 ? per : (per * std::size_t(q * 5 % 7)) / 3;
    const BlockOffsets blocks(counts);
    const std::size_t total = blocks.total();
    for (const Algorithm* leaders :
         leaders_for(Collective::reduce_scatter, "hierarchical_seg", layout->nodes(), all_leaders))
        for (std::size_t seg : kSegments)
            for (int variant = 0; variant < 4; ++variant) {
                const bool in_place = variant & 1, testable = variant & 2;
                if (total > 20000 && seg == 24) continue;
                INFO(kind << " P=" << P << " leaders=" << leaders->name << " per=" << per << " shape=" << shape
                          << " segment=" << seg << " in_place=" << in_place << " testable=" << testable);
                const auto inputs = all_inputs(P, total, typed_input<std::int64_t>());
                const Bytes sum = total == 0 ? Bytes{} : fold(op, inputs, total);
                std::vector<Bytes> results(static_cast<std::size_t>(P));
                run_ranks(P, [&](InprocTransport& net) {
                    net.set_layout(layout.get());
                    net.set_testable(testable);
                    const int r = net.rank();
                    Bytes out = in_place ? inputs[std::size_t(r)] : Bytes(counts[std::size_t(r)] * 8);
                    HostMemory mem;
                    fn(net, mem,
                       ReduceScatterArgs{in_place ? nullptr : inputs[std::size_t(r)].data(), out.data(), counts, op, 0,
                                         leaders, seg});
                    out.resize(counts[std::size_t(r)] * 8);
                    results[std::size_t(r)] = out;
                });
                for (int r = 0; r < P; ++r) {
                    INFO("rank=" << r);
                    const Bytes expected(sum.begin() + std::ptrdiff_t(blocks.begin(r) * 8),
                                         sum.begin() + std::ptrdiff_t((blocks.begin(r) + counts[std::size_t(r)]) * 8));
                    CHECK(first_difference(results[std::size_t(r)], expected, 8) == "");
                }
            }
}

} // namespace

TEST_CASE("hierarchical_seg allreduce on synthetic topologies", "[hierarchical_seg]")
{
    for (const std::string& kind : kKinds)
        for (int P : kRanks)
            check_allreduce(kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>(), kind, P, P == 5);
    check_allreduce(kernel(LOOM_OP_SUM, LOOM_TYPE_INT32), typed_input<std::int32_t>(), "round_robin", 33, false);
}

TEST_CASE("hierarchical_seg allreduce: other datatypes and ops", "[hierarchical_seg]")
{
    for (int P : {4, 7}) {
        check_allreduce(kernel(LOOM_OP_SUM, LOOM_TYPE_DOUBLE), typed_input<double>(), "uneven", P, false);
        check_allreduce(kernel(LOOM_OP_MAX, LOOM_TYPE_INT64), typed_input<std::int64_t>(), "by_slot", P, false);
        check_allreduce(kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8), typed_input<std::uint8_t>(), "round_robin", P, false);
    }
}

TEST_CASE("hierarchical_seg bcast on synthetic topologies, every root", "[hierarchical_seg]")
{
    for (const std::string& kind : kKinds)
        for (int P : {1, 2, 3, 5, 7, 9, 33}) {
            const auto layout = layout_for(kind, P);
            for (const Algorithm* leaders : leaders_for(Collective::bcast, "hierarchical_seg", layout->nodes(), P == 5))
                for (int root = 0; root < P; root += (P > 9 ? 7 : 1))
                    for (std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(777), std::size_t(300001)})
                        for (std::size_t seg : {std::size_t(100), std::size_t(0)})
                            for (bool testable : {false, true}) {
                                if (bytes == 300001 && seg == 100 && P > 5) continue;
                                INFO(kind << " P=" << P << " leaders=" << leaders->name << " root=" << root
                                          << " bytes=" << bytes << " segment=" << seg << " testable=" << testable);
                                const Bytes data = pattern(root, bytes);
                                std::vector<Bytes> results(static_cast<std::size_t>(P));
                                run_ranks(P, [&](InprocTransport& net) {
                                    net.set_layout(layout.get());
                                    net.set_testable(testable);
                                    const int r = net.rank();
                                    Bytes buf = r == root ? data : Bytes(bytes);
                                    HostMemory mem;
                                    hierarchical_seg_bcast(net, mem, BcastArgs{buf.data(), bytes, root, seg, leaders});
                                    results[std::size_t(r)] = buf;
                                });
                                for (int r = 0; r < P; ++r) {
                                    INFO("rank=" << r);
                                    CHECK(first_difference(results[std::size_t(r)], data) == "");
                                }
                            }
        }
}

TEST_CASE("hierarchical_seg allgather(v) on synthetic topologies", "[hierarchical_seg]")
{
    for (const std::string& kind : kKinds)
        for (int P : {1, 2, 3, 4, 5, 7, 9, 13, 33}) {
            const auto layout = layout_for(kind, P);
            for (const Algorithm* leaders :
                 leaders_for(Collective::allgatherv, "hierarchical_seg", layout->nodes(), P == 5))
                for (int shape = 0; shape < 4; ++shape)
                    for (std::size_t seg : {std::size_t(7), std::size_t(1000), std::size_t(0)})
                        for (int variant = 0; variant < 4; ++variant) {
                            const bool in_place = variant & 1, testable = variant & 2;
                            // Equal, uneven with empty blocks, one big block, all empty.
                            std::vector<std::size_t> bytes(static_cast<std::size_t>(P));
                            for (int r = 0; r < P; ++r)
                                bytes[std::size_t(r)] = shape == 0   ? 5
                                                        : shape == 1 ? std::size_t((r * 5) % 7)
                                                        : shape == 2 ? (r == P / 2 ? 40000 : 3)
                                                                     : 0;
                            if (shape == 2 && seg == 7 && P > 5) continue;
                            INFO(kind << " P=" << P << " leaders=" << leaders->name << " shape=" << shape
                                      << " segment=" << seg << " in_place=" << in_place << " testable=" << testable);
                            const BlockOffsets blocks(bytes);
                            Bytes expected;
                            for (int r = 0; r < P; ++r) {
                                const Bytes b = pattern(r, bytes[std::size_t(r)]);
                                expected.insert(expected.end(), b.begin(), b.end());
                            }
                            std::vector<Bytes> results(static_cast<std::size_t>(P));
                            run_ranks(P, [&](InprocTransport& net) {
                                net.set_layout(layout.get());
                                net.set_testable(testable);
                                const int r = net.rank();
                                const Bytes mine = pattern(r, bytes[std::size_t(r)]);
                                Bytes out(blocks.total(), std::byte{0xee});
                                if (in_place)
                                    std::copy(mine.begin(), mine.end(), out.begin() + std::ptrdiff_t(blocks.begin(r)));
                                HostMemory mem;
                                hierarchical_seg_allgather(net, mem,
                                                           AllgatherArgs{in_place ? nullptr : mine.data(), out.data(),
                                                                         bytes, 0, leaders, -1, 0, seg});
                                results[std::size_t(r)] = out;
                            });
                            for (int r = 0; r < P; ++r) {
                                INFO("rank=" << r);
                                CHECK(first_difference(results[std::size_t(r)], expected) == "");
                            }
                        }
        }
}

TEST_CASE("hierarchical and hierarchical_seg reduce_scatter(_block) on synthetic topologies", "[hierarchical_seg]")
{
    for (ReduceScatterFn fn : {&hierarchical_reduce_scatter, &hierarchical_seg_reduce_scatter})
        for (const std::string& kind : kKinds)
            for (int P : kRanks)
                for (std::size_t per : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(501)})
                    for (int shape : {0, 1}) check_reduce_scatter(fn, kind, P, per, shape, P == 5 && per == 3);
    check_reduce_scatter(&hierarchical_seg_reduce_scatter, "round_robin", 33, 40, 1, false);
    check_reduce_scatter(&hierarchical_seg_reduce_scatter, "by_slot", 8, 20000, 0, false);
}

// The overlap itself: a background phase waiting for a message returns to its caller, which
// goes on (here: lets the peer send) and then finishes it; without test_all it runs at once.
TEST_CASE("Background runs a message phase while its caller goes on", "[hierarchical_seg]")
{
    for (bool testable : {true, false}) {
        std::atomic<bool> started{false};
        std::vector<int> got(2, 0), overlapped(2, -1);
        run_ranks(2, [&](InprocTransport& net) {
            net.set_testable(testable);
            Background bg(net, true);
            overlapped[std::size_t(net.rank())] = bg.overlaps();
            int value = 0;
            if (net.rank() == 0) {
                if (bg.overlaps()) {
                    bg.start(net, [&](Transport& t) {
                        t.post_recv(1, &value, sizeof value);
                        t.wait_all();
                    });
                    started = true; // start() came back before rank 1 sent
                    bg.finish();
                } else {
                    started = true;
                    bg.start(net, [&](Transport& t) {
                        t.post_recv(1, &value, sizeof value);
                        t.wait_all();
                    });
                }
            } else {
                while (!started) std::this_thread::yield();
                value = 42;
                net.post_send(0, &value, sizeof value);
                net.wait_all();
            }
            got[std::size_t(net.rank())] = value;
        });
        CHECK(overlapped[0] == int(testable));
        CHECK(got[0] == 42);
    }
}

TEST_CASE("the registry lists the segmented hierarchical algorithms", "[hierarchical_seg]")
{
    for (Collective c : {Collective::allreduce, Collective::bcast, Collective::allgather, Collective::allgatherv,
                         Collective::reduce_scatter, Collective::reduce_scatter_block}) {
        const Algorithm* a = find_algorithm(c, "hierarchical_seg");
        REQUIRE(a != nullptr);
        CHECK(a->reads.leaders);
        CHECK(a->reads.segment_size);
        CHECK(why_not(*a, CallShape{8, 64, true, 0}).has_value()); // nodes unknown
    }
    for (Collective c : {Collective::reduce_scatter, Collective::reduce_scatter_block}) {
        const Algorithm* a = find_algorithm(c, "hierarchical");
        REQUIRE(a != nullptr);
        CHECK(why_not(*a, CallShape{8, 64, false, 2}).has_value()); // not commutative
    }
}

namespace {

// A resumable operation's transport, as resumable.cpp's: the algorithm runs on a fiber, and its
// waits and progress yield to the thread (the "progress engine" here), so Background's fiber
// is nested inside the operation's.
class YieldingTransport final : public Transport {
public:
    explicit YieldingTransport(InprocTransport& inner) : inner_(inner) {}
    int rank() const override { return inner_.rank(); }
    int size() const override { return inner_.size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { inner_.post_send(peer, buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override { inner_.post_recv(peer, buf, bytes); }
    void wait_all() override
    {
        while (inner_.test_all() == 0) Fiber::yield();
    }
    int test_all() override { return inner_.test_all(); }
    void** shared_state() override { return inner_.shared_state(); }
    void progress() override
    {
        inner_.progress();
        Fiber::yield();
    }
    const topo::Layout* layout() const override { return inner_.layout(); }
    void** node_shared_state() override { return inner_.node_shared_state(); }
    bool cooperative() const override { return true; }

private:
    InprocTransport& inner_;
};

// Runs body(transport) on a fiber resumed until it ends, as a resumable operation runs.
void on_fiber(InprocTransport& net, const std::function<void(Transport&)>& body)
{
    YieldingTransport t(net);
    Fiber fiber([&] { body(t); });
    std::size_t resumes = 0;
    while (!fiber.finished()) {
        fiber.resume();
        ++resumes;
    }
    rank_check(resumes > 0, "the fiber ran");
}

} // namespace

TEST_CASE("hierarchical_seg inside a resumable operation's fiber", "[hierarchical_seg]")
{
    const Reduction op = kernel(LOOM_OP_SUM, LOOM_TYPE_INT64);
    for (const std::string& kind : {std::string("by_slot"), std::string("round_robin"), std::string("uneven")})
        for (int P : {2, 5, 9}) {
            const auto layout = layout_for(kind, P);
            for (std::size_t count : {std::size_t(1), std::size_t(3001)}) {
                INFO(kind << " P=" << P << " count=" << count);
                const std::size_t seg = 256; // 32 elements: many segments
                const auto inputs = all_inputs(P, count, typed_input<std::int64_t>());
                const Bytes sum = fold(op, inputs, count);
                const Bytes data = pattern(1, count * 8);
                std::vector<std::size_t> counts(static_cast<std::size_t>(P), count);
                std::vector<Bytes> ar(static_cast<std::size_t>(P)), bc(static_cast<std::size_t>(P)),
                    ag(static_cast<std::size_t>(P)), rs(static_cast<std::size_t>(P));
                Bytes all_blocks, rs_sum;
                for (int r = 0; r < P; ++r) {
                    const Bytes b = pattern(r, count);
                    all_blocks.insert(all_blocks.end(), b.begin(), b.end());
                }
                std::vector<Bytes> rs_inputs;
                for (int r = 0; r < P; ++r) rs_inputs.push_back(as_bytes(rank_input<std::int64_t>(r, count * P, 5)));
                rs_sum = fold(op, rs_inputs, count * std::size_t(P));
                run_ranks(P, [&](InprocTransport& net) {
                    net.set_layout(layout.get());
                    const int r = net.rank();
                    const std::size_t me = std::size_t(r);
                    on_fiber(net, [&](Transport& t) {
                        HostMemory mem;
                        ar[me] = Bytes(count * 8);
                        hierarchical_seg_allreduce(
                            t, mem,
                            AllreduceArgs{inputs[me].data(), ar[me].data(), count, op, seg, 0,
                                          find_algorithm(Collective::allreduce, "recursive_doubling")});
                        bc[me] = r == 1 % P ? data : Bytes(count * 8);
                        hierarchical_seg_bcast(
                            t, mem,
                            BcastArgs{bc[me].data(), count * 8, 1 % P, seg, find_algorithm(Collective::bcast, "binomial")});
                        const Bytes mine = pattern(r, count);
                        ag[me] = Bytes(count * std::size_t(P));
                        const std::vector<std::size_t> bytes(static_cast<std::size_t>(P), count);
                        hierarchical_seg_allgather(t, mem,
                                                   AllgatherArgs{mine.data(), ag[me].data(), bytes, 0,
                                                                 find_algorithm(Collective::allgather, "ring"), -1, 0,
                                                                 seg});
                        rs[me] = Bytes(count * 8);
                        hierarchical_seg_reduce_scatter(
                            t, mem,
                            ReduceScatterArgs{rs_inputs[me].data(), rs[me].data(), counts, op, 0,
                                              find_algorithm(Collective::reduce_scatter, "ring"), seg});
                    });
                });
                for (int r = 0; r < P; ++r) {
                    INFO("rank=" << r);
                    CHECK(first_difference(ar[std::size_t(r)], sum, 8) == "");
                    CHECK(first_difference(bc[std::size_t(r)], data) == "");
                    CHECK(first_difference(ag[std::size_t(r)], all_blocks) == "");
                    const Bytes expected(rs_sum.begin() + std::ptrdiff_t(std::size_t(r) * count * 8),
                                         rs_sum.begin() + std::ptrdiff_t((std::size_t(r) + 1) * count * 8));
                    CHECK(first_difference(rs[std::size_t(r)], expected, 8) == "");
                }
            }
        }
}
