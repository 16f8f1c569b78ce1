// The staging pipeline (algorithms/staging.*) on its host implementation, DeferredHostCopier,
// whose copies happen only when a wait covers them: a pipeline that communicates a slot
// before its input arrived, or refills a slot before its result went out, gets wrong data.
//   * stage_segments alone: segment counts 1, 2, many, odd tails, segment sizes that are not
//     a multiple of the element, no input / no output, and the overlap itself (the copy in
//     of segment i+1 is posted before segment i communicates);
//   * run_staged for every collective and every algorithm that can run in process, against
//     the same algorithm run directly on host memory, in place and not;
//   * the built-in rule table's memory=cuda part decides every device call.
#include "registry.hpp"
#include "decide.hpp"
#include "rules.hpp"
#include "staging.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// Runs stage_segments on `bytes` bytes with segments of `segment` bytes; communicate adds
// 1 to every byte and records the segment. Returns the output buffer.
struct SegmentsRun {
    Bytes out;
    std::vector<std::pair<std::size_t, std::size_t>> calls; // (offset, length)
    std::vector<std::string> log;
};
SegmentsRun run_segments(std::size_t bytes, std::size_t segment, bool with_src = true, bool with_dst = true)
{
    Bytes in = pattern(3, bytes);
    const Bytes original = in;
    SegmentsRun run{Bytes(bytes, std::byte{0x77}), {}, {}};
    DeferredHostCopier copier;
    stage_segments(copier, with_src ? in.data() : nullptr, with_dst ? run.out.data() : nullptr, bytes, segment,
                   [&](std::byte* slot, std::size_t offset, std::size_t length) {
                       copier.note("run " + std::to_string(offset));
                       run.calls.emplace_back(offset, length);
                       for (std::size_t i = 0; i < length; ++i)
                           slot[i] = with_src ? std::byte(std::to_integer<int>(slot[i]) + 1) : std::byte(offset + i);
                   });
    CHECK(in == original); // the input is never written
    run.log = copier.log();
    return run;
}

} // namespace

TEST_CASE("stage_segments: every byte goes through once, for 1, 2, many segments and odd tails", "[staging]")
{
    struct Case {
        std::size_t bytes, segment, segments;
    };
    for (const Case c : {Case{100, 1000, 1}, Case{100, 100, 1}, Case{100, 50, 2}, Case{101, 100, 2}, Case{1000, 7, 143},
                         Case{4096, 64, 64}, Case{5, 1, 5}, Case{1, 1, 1}}) {
        INFO("bytes " << c.bytes << ", segment " << c.segment);
        const SegmentsRun run = run_segments(c.bytes, c.segment);
        REQUIRE(run.calls.size() == c.segments);
        std::size_t next = 0;
        for (auto [offset, length] : run.calls) {
            CHECK(offset == next);
            CHECK(length == std::min(c.segment, c.bytes - offset));
            next += length;
        }
        CHECK(next == c.bytes);
        const Bytes in = pattern(3, c.bytes);
        for (std::size_t i = 0; i < c.bytes; ++i)
            REQUIRE(std::to_integer<int>(run.out[i]) == ((std::to_integer<int>(in[i]) + 1) & 0xff));
    }
}

TEST_CASE("stage_segments: no input (a bcast receiver), no output (a reduce sender), nothing at all", "[staging]")
{
    const SegmentsRun receiver = run_segments(1000, 64, false, true);
    for (std::size_t i = 0; i < 1000; ++i) REQUIRE(receiver.out[i] == std::byte(i));
    const SegmentsRun sender = run_segments(1000, 64, true, false);
    CHECK(sender.calls.size() == 16);
    CHECK(sender.out == Bytes(1000, std::byte{0x77}));
    const SegmentsRun empty = run_segments(0, 64);
    CHECK(empty.calls.empty());
}

TEST_CASE("stage_segments: the copy in of segment i+1 is posted before segment i communicates", "[staging]")
{
    // 4 segments of 10 bytes: the log reads
    //   in 10 (seg 0), in 10 (seg 1), wait in, run 0, out 10, in 10 (seg 2), wait in, run 10, ...
    const SegmentsRun run = run_segments(40, 10);
    std::vector<std::size_t> posted_in, runs;
    for (std::size_t i = 0; i < run.log.size(); ++i) {
        if (run.log[i] == "in 10") posted_in.push_back(i);
        if (run.log[i].rfind("run ", 0) == 0) runs.push_back(i);
    }
    REQUIRE(posted_in.size() == 4);
    REQUIRE(runs.size() == 4);
    for (std::size_t s = 0; s + 1 < 4; ++s) CHECK(posted_in[s + 1] < runs[s]);
    // ... and the result of segment i is posted for copying out before segment i+1 runs.
    std::size_t outs_before_last_run = 0;
    for (std::size_t i = 0; i < runs.back(); ++i) outs_before_last_run += run.log[i] == "out 10";
    CHECK(outs_before_last_run == 3);
}

TEST_CASE("staging_segment_bytes: whole elements, at least one", "[staging]")
{
    CHECK(staging_segment_bytes(0, 4) == kDefaultStagingSegment);
    CHECK(staging_segment_bytes(10, 4) == 8);
    CHECK(staging_segment_bytes(3, 16) == 16);
    CHECK(staging_segment_bytes(100, 0) == 100);
}

// ---- run_staged against the direct run ------------------------------------------------------

namespace {

// One rank's buffers and call.
struct RankCall {
    Bytes send, recv;
    bool in_place = false;
    std::vector<std::size_t> counts;
    loom_call_t call{};
};
using Prepare = std::function<RankCall(int rank, int P)>;

// Runs `algo` on P ranks, directly on host memory (staging == 0) or staged with segments of
// `staging` bytes; returns each rank's receive buffer, cut to `keep(rank)` bytes.
std::vector<Bytes> run(const Algorithm& algo, int P, const Prepare& prepare, std::size_t staging,
                       const std::function<std::size_t(int rank)>& keep)
{
    std::vector<Bytes> out(std::size_t(P), Bytes{});
    run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        RankCall rc = prepare(r, P);
        const Bytes send_before = rc.send;
        loom_call_t call = rc.call;
        call.counts = rc.counts.empty() ? nullptr : rc.counts.data();
        call.sbuf = rc.in_place ? nullptr : rc.send.data();
        call.rbuf = rc.recv.empty() ? nullptr : rc.recv.data();
        call.chosen = &algo;
        if (staging != 0) {
            DeferredHostCopier copier;
            call.memory = LOOM_MEMORY_CUDA;
            call.copier = &copier;
            call.staging_bytes = staging;
            run_staged(algo, net, copier, call);
        } else {
            HostMemory mem;
            run_call(algo, net, mem, call);
        }
        rank_check_bytes(rc.send, send_before, "the send buffer was written");
        rc.recv.resize(std::min(rc.recv.size(), keep(r)));
        out[std::size_t(r)] = rc.recv;
    });
    return out;
}

std::vector<const Algorithm*> runnable(Collective c, bool commutative)
{
    // Staged calls are device calls, which the chooser never gives single copy (cma reads
    // another process's memory with process_vm_readv; device memory cannot be read so).
    CallShape device_call{2, 0, commutative, 1};
    device_call.single_copy = false;
    std::vector<const Algorithm*> list;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == c && !a.needs.topology && !a.needs.power_of_two && !why_not(a, device_call))
            list.push_back(&a);
    return list;
}

const std::size_t kAll = ~std::size_t(0);

// Staged with several segment sizes (one segment, two, many with an odd tail) equals direct.
void check_collective(Collective c, const Prepare& prepare, const std::function<std::size_t(int, int)>& keep,
                      bool commutative = true)
{
    const auto algorithms = runnable(c, commutative);
    REQUIRE(!algorithms.empty());
    for (const Algorithm* algo : algorithms) {
        for (int P : {1, 2, 3, 5, 8}) {
            INFO(to_string(c) << " " << algo->name << ", P " << P);
            auto keep_p = [&](int r) { return keep(r, P); };
            const std::vector<Bytes> direct = run(*algo, P, prepare, 0, keep_p);
            for (std::size_t staging : {std::size_t(1) << 20, std::size_t(200), std::size_t(36), std::size_t(7)}) {
                INFO("staging segment " << staging);
                const std::vector<Bytes> staged = run(*algo, P, prepare, staging, keep_p);
                for (int r = 0; r < P; ++r) {
                    INFO("rank " << r);
                    CHECK(first_difference(staged[std::size_t(r)], direct[std::size_t(r)]) == "");
                }
            }
        }
    }
}

const Reduction int_sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);

} // namespace

TEST_CASE("run_staged: allreduce, every algorithm, in place and not", "[staging]")
{
    for (bool in_place : {false, true}) {
        const std::size_t count = 101; // 404 bytes: segments of 200, 36 and 4 bytes leave tails
        check_collective(
            Collective::allreduce,
            [&](int r, int) {
                RankCall rc;
                rc.send = as_bytes(rank_input<std::int32_t>(r, count));
                rc.in_place = in_place;
                rc.recv = in_place ? rc.send : Bytes(count * 4, std::byte{0x5a});
                rc.call.coll = LOOM_COLL_ALLREDUCE;
                rc.call.count = count;
                rc.call.op = {int_sum.elem_size, 1, int_sum.fn, int_sum.ctx, int_sum.fn3};
                return rc;
            },
            [](int, int) { return kAll; });
    }
}

TEST_CASE("run_staged: a non-commutative allreduce and reduce keep rank order", "[staging]")
{
    const Reduction m = matmul();
    const std::size_t count = 13; // 208 bytes of 16-byte elements
    for (Collective c : {Collective::allreduce, Collective::reduce})
        check_collective(
            c,
            [&](int r, int P) {
                RankCall rc;
                rc.send = matmul_input(r, count);
                const bool root = c == Collective::allreduce || r == P - 1;
                rc.recv = root ? Bytes(count * 16, std::byte{0}) : Bytes{};
                rc.call.coll = static_cast<loom_coll_t>(c);
                rc.call.count = count;
                rc.call.root = P - 1;
                rc.call.op = {m.elem_size, 0, m.fn, m.ctx, m.fn3};
                return rc;
            },
            [](int, int) { return kAll; }, false);
}

TEST_CASE("run_staged: reduce to a root, in place at the root and not", "[staging]")
{
    for (bool in_place : {false, true}) {
        const std::size_t count = 57;
        check_collective(
            Collective::reduce,
            [&](int r, int P) {
                RankCall rc;
                const int root = 1 % P;
                rc.send = as_bytes(rank_input<std::int32_t>(r, count));
                rc.in_place = in_place && r == root;
                if (r == root) rc.recv = rc.in_place ? rc.send : Bytes(count * 4, std::byte{0x5a});
                rc.call.coll = LOOM_COLL_REDUCE;
                rc.call.count = count;
                rc.call.root = root;
                rc.call.op = {int_sum.elem_size, 1, int_sum.fn, int_sum.ctx, int_sum.fn3};
                return rc;
            },
            [](int, int) { return kAll; });
    }
}

TEST_CASE("run_staged: bcast from a root that is not rank 0", "[staging]")
{
    const std::size_t bytes = 333;
    check_collective(
        Collective::bcast,
        [&](int r, int P) {
            RankCall rc;
            const int root = P / 2;
            rc.recv = r == root ? pattern(root, bytes) : Bytes(bytes, std::byte{0});
            rc.in_place = true;
            rc.call.coll = LOOM_COLL_BCAST;
            rc.call.count = bytes;
            rc.call.root = root;
            return rc;
        },
        [](int, int) { return kAll; });
}

TEST_CASE("run_staged: reduce_scatter and reduce_scatter_block, in place and not", "[staging]")
{
    for (Collective c : {Collective::reduce_scatter, Collective::reduce_scatter_block}) {
        for (bool in_place : {false, true}) {
            auto counts_of = [c](int P) {
                std::vector<std::size_t> counts(std::size_t(P), 9);
                if (c == Collective::reduce_scatter)
                    for (int i = 0; i < P; ++i) counts[std::size_t(i)] = std::size_t(i % 3) * 5 + 1;
                return counts;
            };
            check_collective(
                c,
                [&](int r, int P) {
                    RankCall rc;
                    rc.counts = counts_of(P);
                    const std::size_t all = std::accumulate(rc.counts.begin(), rc.counts.end(), std::size_t(0));
                    rc.send = as_bytes(rank_input<std::int32_t>(r, all));
                    rc.in_place = in_place;
                    rc.recv = in_place ? rc.send : Bytes(rc.counts[std::size_t(r)] * 4, std::byte{0x5a});
                    rc.call.coll = static_cast<loom_coll_t>(c);
                    rc.call.op = {int_sum.elem_size, 1, int_sum.fn, int_sum.ctx, int_sum.fn3};
                    return rc;
                },
                // In place, only the start of the buffer is the result.
                [&](int r, int P) { return counts_of(P)[std::size_t(r)] * 4; });
        }
    }
}

TEST_CASE("run_staged: allgather and allgatherv, in place and not", "[staging]")
{
    for (Collective c : {Collective::allgather, Collective::allgatherv}) {
        for (bool in_place : {false, true}) {
            check_collective(
                c,
                [&](int r, int P) {
                    RankCall rc;
                    rc.counts.assign(std::size_t(P), 23);
                    if (c == Collective::allgatherv)
                        for (int i = 0; i < P; ++i) rc.counts[std::size_t(i)] = std::size_t(i % 4) * 17;
                    const std::size_t all = std::accumulate(rc.counts.begin(), rc.counts.end(), std::size_t(0));
                    std::size_t own = 0;
                    for (int i = 0; i < r; ++i) own += rc.counts[std::size_t(i)];
                    rc.send = pattern(r, rc.counts[std::size_t(r)]);
                    rc.in_place = in_place;
                    rc.recv = Bytes(all, std::byte{0x5a});
                    if (in_place) std::copy(rc.send.begin(), rc.send.end(), rc.recv.begin() + std::ptrdiff_t(own));
                    rc.call.coll = static_cast<loom_coll_t>(c);
                    return rc;
                },
                [](int, int) { return kAll; });
        }
    }
}

TEST_CASE("run_staged: scan and exscan, in place and not; exscan's rank 0 keeps its buffer", "[staging]")
{
    for (Collective c : {Collective::scan, Collective::exscan})
        for (bool in_place : {false, true}) {
            const std::size_t count = 41;
            check_collective(
                c,
                [&](int r, int) {
                    RankCall rc;
                    rc.send = as_bytes(rank_input<std::int32_t>(r, count));
                    rc.in_place = in_place;
                    // exscan's rank 0 gets no result: its buffer (its input, in place) must come
                    // back as it was, staged as direct.
                    rc.recv = in_place ? rc.send : Bytes(count * 4, std::byte{0x5a});
                    rc.call.coll = static_cast<loom_coll_t>(c);
                    rc.call.count = count;
                    rc.call.op = {int_sum.elem_size, 1, int_sum.fn, int_sum.ctx, int_sum.fn3};
                    return rc;
                },
                [](int, int) { return kAll; });
        }
}

TEST_CASE("run_staged: gather to a root that is not rank 0, in place at the root and not", "[staging]")
{
    for (bool in_place : {false, true})
        check_collective(
            Collective::gather,
            [&](int r, int P) {
                RankCall rc;
                const int root = 1 % P;
                rc.counts.assign(std::size_t(P), 29);
                rc.send = pattern(r, 29);
                rc.in_place = in_place && r == root;
                if (r == root) { // the others have no receive buffer, as the glue describes them
                    rc.recv = Bytes(29 * std::size_t(P), std::byte{0x5a});
                    if (rc.in_place)
                        std::copy(rc.send.begin(), rc.send.end(), rc.recv.begin() + std::ptrdiff_t(29 * r));
                }
                rc.call.coll = LOOM_COLL_GATHER;
                rc.call.root = root;
                return rc;
            },
            [](int, int) { return kAll; });
}

TEST_CASE("run_staged: scatter from a root that is not rank 0, in place at the root and not", "[staging]")
{
    for (bool in_place : {false, true})
        check_collective(
            Collective::scatter,
            [&](int r, int P) {
                RankCall rc;
                const int root = 1 % P;
                rc.counts.assign(std::size_t(P), 29);
                if (r == root) { // every block; in place no receive buffer (rbuf null)
                    for (int q = 0; q < P; ++q) {
                        const Bytes block = pattern(q, 29);
                        rc.send.insert(rc.send.end(), block.begin(), block.end());
                    }
                    if (!in_place) rc.recv = Bytes(29, std::byte{0x5a});
                } else { // the others have no send buffer
                    rc.in_place = true;
                    rc.recv = Bytes(29, std::byte{0x5a});
                }
                rc.call.coll = LOOM_COLL_SCATTER;
                rc.call.root = root;
                return rc;
            },
            [](int, int) { return kAll; });
}

TEST_CASE("run_staged: alltoall, in place and not; barrier", "[staging]")
{
    for (bool in_place : {false, true}) {
        const std::size_t block = 19;
        check_collective(
            Collective::alltoall,
            [&](int r, int P) {
                RankCall rc;
                rc.send = pattern(r, block * std::size_t(P));
                rc.in_place = in_place;
                rc.recv = in_place ? rc.send : Bytes(block * std::size_t(P), std::byte{0x5a});
                rc.call.coll = LOOM_COLL_ALLTOALL;
                rc.call.count = block;
                return rc;
            },
            [](int, int) { return kAll; });
    }
    check_collective(
        Collective::barrier,
        [](int, int) {
            RankCall rc;
            rc.call.coll = LOOM_COLL_BARRIER;
            return rc;
        },
        [](int, int) { return kAll; });
}

// ---- the built-in rules for device buffers --------------------------------------------------

TEST_CASE("default rules: device calls get a memory=cuda rule that can serve them, never a fallback", "[staging]")
{
    // A device call handed on costs a whole copy to the host, so the memory=cuda part of the
    // table must decide every commutative call, on one node, across nodes and with the nodes
    // unknown; a non-commutative allreduce or reduce gets an order-preserving algorithm.
    for (int c = 0; c < kCollectiveCount; ++c) {
        const Collective coll = Collective(c);
        if (coll == Collective::barrier) continue; // no buffers: always host memory
        for (int nodes : {0, 1, 2})
            for (std::uint64_t bytes :
                 {std::uint64_t(0), std::uint64_t(1000), std::uint64_t(1) << 20, std::uint64_t(1) << 30})
                for (int ranks : {2, 3, 8, 9, 64, 1000}) {
                    rules::CallFacts x;
                    x.collective = coll;
                    x.ranks = ranks;
                    x.bytes = bytes;
                    x.nodes = nodes;
                    x.ranks_per_node = nodes == 1 ? ranks : nodes == 2 ? (ranks + 1) / 2 : 0;
                    x.memory = rules::MemoryKind::cuda;
                    const auto tables = rules::resolved_for(ranks, x.nodes, x.ranks_per_node);
                    INFO(to_string(coll) << " ranks " << ranks << " bytes " << bytes << " nodes " << nodes);
                    const rules::Rule* r = rules::decide(x, *tables).rule;
                    REQUIRE(r != nullptr);
                    CHECK(r->memory == rules::MemoryKind::cuda);
                    CHECK(r->algorithm != rules::kFallback);
                    const Algorithm* a = find_algorithm(coll, r->algorithm);
                    REQUIRE(a != nullptr);
                    CHECK(!why_not(*a, CallShape{ranks, bytes, true, nodes}));
                    if (coll == Collective::allreduce || coll == Collective::reduce) {
                        x.commutative = false;
                        const rules::Rule* n = rules::decide(x, *tables).rule;
                        REQUIRE(n != nullptr);
                        CHECK(n->memory == rules::MemoryKind::cuda);
                        CHECK(!find_algorithm(coll, n->algorithm)->needs.commutative_op);
                    }
                }
    }
}
