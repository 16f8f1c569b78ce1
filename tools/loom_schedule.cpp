// loom-schedule: shows what one of loom's algorithms does, by running the real algorithm code
// on P in-process ranks (threads) and recording what each rank sends.
//
//   loom-schedule COLLECTIVE ALGORITHM [--ranks P] [--bytes S] [--buffer B] [--segment B]
//                 [--root R] [--rank R]
//   loom-schedule --version
//
// S is the collective's message size as loom defines it (docs/algorithms.md, "What loom
// serves"): the vector for allreduce/reduce/bcast, the whole input for reduce_scatter, the whole
// gathered vector for allgather, one block for alltoall. Reductions use 1-byte elements (uint8 BXOR).
// Printed: for PAT its plan (aggregation A, sub-tree size D) and step table from the schedule
// generator; then, for one rank, every step of the real run (peers as distances, bytes); then
// totals: messages, bytes sent, steps, and peak scratch memory (that rank, and the maximum
// over all ranks).
#include "engine.hpp"
#include "inproc_transport.hpp"
#include "loom_c_api.h"
#include "pat.hpp"
#include "registry.hpp"
#include "size_text.hpp"
#include "tool_version.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

using namespace loom;
using loom::test::CountingMemory;
using loom::test::InprocTransport;
using loom::test::run_ranks;

namespace {

struct Options {
    std::string collective, algorithm;
    int ranks = 8;
    std::size_t bytes = 8192;
    std::size_t buffer = kPatDefaultBufferBytes;
    std::size_t segment = 0;
    int root = 0;
    int rank = 0;
};

Options parse(int argc, char** argv)
{
    Options o;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--ranks")
            o.ranks = std::stoi(value());
        else if (a == "--bytes")
            o.bytes = loom::tools::parse_size(value());
        else if (a == "--buffer")
            o.buffer = loom::tools::parse_size(value());
        else if (a == "--segment")
            o.segment = loom::tools::parse_size(value());
        else if (a == "--root")
            o.root = std::stoi(value());
        else if (a == "--rank")
            o.rank = std::stoi(value());
        else if (a.rfind("--", 0) == 0)
            throw std::invalid_argument("unknown option " + a);
        else
            positional.push_back(a);
    }
    if (positional.size() != 2) throw std::invalid_argument("expected COLLECTIVE ALGORITHM");
    o.collective = positional[0];
    o.algorithm = positional[1];
    if (o.ranks < 1 || o.ranks > 4096) throw std::invalid_argument("--ranks must be 1..4096");
    if (o.buffer == 0) o.buffer = kPatDefaultBufferBytes; // as the executors read 0
    if (o.rank < 0 || o.rank >= o.ranks || o.root < 0 || o.root >= o.ranks)
        throw std::invalid_argument("--rank and --root must be ranks of the communicator");
    return o;
}

const Algorithm& find(const Options& o, Collective& coll)
{
    for (int c = 0; c < kCollectiveCount; ++c)
        if (to_string(Collective(c)) == o.collective) {
            coll = Collective(c);
            if (const Algorithm* a = find_algorithm(coll, o.algorithm)) return *a;
            char names[256];
            loom_algorithm_names(loom_coll_t(c), names, sizeof names);
            throw std::invalid_argument("no " + o.collective + " algorithm '" + o.algorithm + "' (valid: " + names +
                                        ")");
        }
    throw std::invalid_argument("no collective '" + o.collective + "'");
}

void print_pat_plan(const PatPlan& plan, const char* what, std::size_t block)
{
    std::printf(
        "PAT %s plan: A = %d blocks per message, D = %d; %d logarithmic + %d linear steps%s\n", what, plan.aggregation,
        plan.subtree,
        [&] {
            int lg = 0;
            while ((1 << lg) < plan.aggregation) ++lg;
            return lg;
        }(),
        plan.subtree - 1, plan.piece_bytes ? " (blocks travel in pieces)" : "");
    if (plan.piece_bytes != 0) std::printf("  pieces of %zu bytes\n", plan.piece_bytes);
    std::printf("  %4s  %-6s %9s %7s %10s\n", "step", "part", "distance", "blocks", "bytes");
    for (int i = 0; i < pat_step_count(plan); ++i) {
        const PatStep s = pat_step(plan, i);
        if (s.count == 0) continue;
        std::printf("  %4d  %-6s %9d %7d %10zu\n", i + 1, s.linear ? "linear" : "log", s.distance, s.count,
                    std::size_t(s.count) * block);
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (loom::tools::print_version_if_asked(argc, argv, "loom-schedule")) return 0;
    Options o;
    Collective coll{};
    const Algorithm* algo = nullptr;
    try {
        o = parse(argc, argv);
        algo = &find(o, coll);
    } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "loom-schedule: %s\n"
                     "usage: loom-schedule COLLECTIVE ALGORITHM [--ranks P] [--bytes S] [--buffer B] "
                     "[--segment B] [--root R] [--rank R]\n"
                     "       loom-schedule --version\n",
                     e.what());
        return 2;
    }

    const auto P = std::size_t(o.ranks);
    // The call every rank makes, laid out as loom-sim lays it out (1-byte elements).
    const loom::sim::Scenario shape{.algorithm = algo,
                                    .ranks = o.ranks,
                                    .bytes = o.bytes,
                                    .segment_bytes = o.segment,
                                    .buffer_bytes = o.buffer,
                                    .root = o.root};
    const loom::sim::CallLayout layout = loom::sim::layout_call(shape, nullptr, nullptr);
    // The largest block: of the counts, or of the vector split in P (allreduce's PAT blocks).
    std::size_t max_block = layout.counts.empty() ? BlockPartition(o.bytes, o.ranks).max_length() : 0;
    for (std::size_t s : layout.counts) max_block = std::max(max_block, s);
    loom_reduction_t op{};
    if (reduces(coll)) loom_find_kernel(LOOM_OP_BXOR, LOOM_TYPE_UINT8, &op);

    // Buffers for every rank: big enough for any collective's layout.
    const std::size_t in_bytes = std::max<std::size_t>(layout.buffer_bytes, 1);
    std::vector<std::vector<std::byte>> in(P, std::vector<std::byte>(in_bytes, std::byte{1}));
    std::vector<std::vector<std::byte>> out(P, std::vector<std::byte>(in_bytes, std::byte{0}));
    std::vector<std::vector<InprocTransport::SentMessage>> sent(P);
    std::vector<std::size_t> peak(P);

    std::printf("%s %s: %d ranks, message size %zu bytes (loom's definition for %s)\n", o.collective.c_str(),
                o.algorithm.c_str(), o.ranks, o.bytes, o.collective.c_str());
    if (o.algorithm == "pat") {
        if (coll == Collective::allgather || coll == Collective::allgatherv || coll == Collective::allreduce)
            print_pat_plan(pat_plan(o.ranks, max_block, o.buffer, 2),
                           coll == Collective::allreduce ? "allgather phase" : "allgather", max_block);
        if (coll != Collective::allgather && coll != Collective::allgatherv)
            print_pat_plan(pat_plan(o.ranks, max_block, o.buffer, 3),
                           coll == Collective::allreduce ? "reduce-scatter phase (steps run in reverse)"
                                                         : "reduce-scatter (steps run in reverse)",
                           max_block);
        std::printf("  (buffer %zu bytes)\n", o.buffer);
    }

    try {
        run_ranks(o.ranks, [&](InprocTransport& net) {
            const auto r = std::size_t(net.rank());
            CountingMemory mem;
            net.record_messages(true);
            // bcast works in place on its one buffer, which holds the data at the root.
            loom::sim::CallLayout mine =
                loom::sim::layout_call(shape, in[r].data(), coll == Collective::bcast ? in[r].data() : out[r].data());
            if (reduces(coll)) mine.call.op = op;
            run_call(*algo, net, mem, mine.call);
            sent[r] = net.sent_messages();
            peak[r] = mem.peak();
        });
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loom-schedule: the run failed: %s\n", e.what());
        return 1;
    }

    const auto R = std::size_t(o.rank);
    std::printf("rank %d, measured on the real algorithm (peers as rank + or - distance, mod P):\n", o.rank);
    std::printf("  %4s  %s\n", "step", "messages sent (distance: bytes)");
    std::size_t bytes = 0, steps = 0;
    for (std::size_t i = 0; i < sent[R].size();) {
        const std::size_t step = sent[R][i].step;
        std::string line;
        for (; i < sent[R].size() && sent[R][i].step == step; ++i) {
            // The shorter way round: rank + d, or rank - d.
            const int d = int((std::size_t(sent[R][i].peer) + P - R) % P);
            const std::string distance =
                2 * std::size_t(d) <= P ? "+" + std::to_string(d) : "-" + std::to_string(o.ranks - d);
            line += " " + distance + ": " + std::to_string(sent[R][i].bytes);
            bytes += sent[R][i].bytes;
        }
        ++steps;
        std::printf("  %4zu %s\n", step + 1, line.c_str());
    }
    std::printf("totals for rank %d: %zu messages in %zu sending steps, %zu bytes sent; peak scratch %zu bytes "
                "(largest over all ranks %zu)\n",
                o.rank, sent[R].size(), steps, bytes, peak[R], *std::max_element(peak.begin(), peak.end()));
    return 0;
}
