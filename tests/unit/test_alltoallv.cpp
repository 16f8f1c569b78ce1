// MPI_Alltoallv over messages (algorithms/alltoallv.hpp) on the in-process transport: pairwise
// and linear (windows 1, 2, 3, the default and all at once) at every P of comm_sizes(), with
// per-pair sizes that differ pair by pair (zeros among them), all empty, and equal large
// blocks; in place (symmetric sizes, as MPI's in place requires) and not. Every block must come
// from its sender with its sender's pattern, the bytes after the output stay as they were, the
// input is left alone, and the messages, waits and scratch are those the header promises.
#include "alltoallv.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

// The bytes rank i sends to rank j.
using Sizes = std::function<std::size_t(int i, int j)>;

struct Pattern {
    std::string name;
    Sizes bytes;
};

std::vector<Pattern> patterns(int P, bool in_place)
{
    // Pair by pair, zeros among them; in place (send_bytes == recv_bytes) the same made symmetric.
    auto mixed = [](int i, int j) { return std::size_t((i * 7 + j * 3) % 11); };
    const std::size_t large = P <= 8 ? 40000 : P <= 33 ? 4099 : 257;
    std::vector<Pattern> out{
        {"mixed",
         in_place ? Sizes([mixed](int i, int j) { return mixed(std::min(i, j), std::max(i, j)); }) : Sizes(mixed)},
        {"empty", [](int, int) { return std::size_t(0); }},
        {"equal large", [large](int, int) { return large; }},
    };
    if (P <= 8) // sizes of every magnitude in one call, zeros kept
        out.push_back({"mixed large", [mixed, in_place](int i, int j) {
                           return 997 * (in_place ? mixed(std::min(i, j), std::max(i, j)) : mixed(i, j));
                       }});
    return out;
}

using Algorithm = std::function<void(Transport&, MemoryOps&, const AlltoallvArgs&)>;

struct Outcome {
    RunStats stats;
    std::vector<std::size_t> peaks; // scratch, per rank
};

Outcome check(int P, const Pattern& pattern, bool in_place, const Algorithm& algorithm, const std::string& name)
{
    INFO(name << ", P=" << P << ", " << pattern.name << (in_place ? ", in place" : ""));
    Outcome out{{}, std::vector<std::size_t>(std::size_t(P), 0)};
    out.stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        std::vector<std::size_t> send_bytes, recv_bytes;
        Bytes send, want;
        for (int q = 0; q < P; ++q) {
            send_bytes.push_back(pattern.bytes(r, q));
            recv_bytes.push_back(pattern.bytes(q, r));
            for (std::size_t i = 0; i < send_bytes.back(); ++i) send.push_back(tag(r, q, i));
            for (std::size_t i = 0; i < recv_bytes.back(); ++i) want.push_back(tag(q, r, i));
        }
        CountingMemory mem;
        Bytes recv(want.size() + kGuard, kCanary);
        if (in_place) {
            std::copy(send.begin(), send.end(), recv.begin()); // symmetric: the same layout
            algorithm(net, mem, AlltoallvArgs{nullptr, recv.data(), send_bytes, recv_bytes});
        } else {
            const Bytes kept = send;
            algorithm(net, mem, AlltoallvArgs{send.data(), recv.data(), send_bytes, recv_bytes});
            rank_check_bytes(send, kept, "the input was written");
        }
        rank_check_bytes(prefix(recv, want.size()), want, "the blocks received");
        rank_check(std::all_of(recv.end() - kGuard, recv.end(), [](std::byte b) { return b == kCanary; }),
                   "a byte past the output was written");
        out.peaks[std::size_t(r)] = mem.peak();
    });
    return out;
}

// Non-empty blocks rank r sends to others: the messages every algorithm sends.
std::size_t messages_from(int r, int P, const Sizes& bytes)
{
    std::size_t n = 0;
    for (int q = 0; q < P; ++q) n += q != r && bytes(r, q) != 0;
    return n;
}

// The bytes rank r sends to others.
std::size_t bytes_from(int r, int P, const Sizes& bytes)
{
    std::size_t n = 0;
    for (int q = 0; q < P; ++q) n += q != r ? bytes(r, q) : 0;
    return n;
}

void check_messages(const Outcome& o, int P, const Sizes& bytes)
{
    for (int r = 0; r < P; ++r) {
        INFO("rank " << r);
        CHECK(o.stats.messages_sent[std::size_t(r)] == messages_from(r, P, bytes));
        CHECK(o.stats.bytes_sent[std::size_t(r)] == bytes_from(r, P, bytes));
    }
}

} // namespace

TEST_CASE("pairwise alltoallv: every P, sizes pair by pair, empty and large, in place and not", "[alltoallv]")
{
    for (int P : comm_sizes())
        for (bool in_place : {false, true})
            for (const Pattern& p : patterns(P, in_place)) {
                const Outcome o = check(P, p, in_place, &pairwise_alltoallv, "pairwise");
                INFO("P=" << P << ", " << p.name << (in_place ? ", in place" : ""));
                check_messages(o, P, p.bytes);
                for (int r = 0; r < P; ++r) {
                    INFO("rank " << r);
                    // A step waits only where it has something to send or receive.
                    CHECK(o.stats.waits[std::size_t(r)] <= std::size_t(P - 1));
                    // In place: one block of scratch, the largest of those received into it
                    // (from r - k in step k, k <= P/2), and only then.
                    std::size_t largest = 0;
                    for (int k = 1; 2 * k <= P; ++k) largest = std::max(largest, p.bytes(mod(r - k, P), r));
                    CHECK(o.peaks[std::size_t(r)] == (in_place ? largest : 0));
                }
            }
}

TEST_CASE("linear alltoallv: every P, windows 1, 2, 3, the default and all, in place and not", "[alltoallv]")
{
    for (int P : comm_sizes())
        for (std::size_t window : {1, 2, 3, 0, 1000})
            for (bool in_place : {false, true})
                for (const Pattern& p : patterns(P, in_place)) {
                    auto run = [window](Transport& net, MemoryOps& mem, const AlltoallvArgs& args) {
                        AlltoallvArgs a = args;
                        a.max_requests = window;
                        linear_alltoallv(net, mem, a);
                    };
                    const Outcome o = check(P, p, in_place, run, "linear window " + std::to_string(window));
                    INFO("P=" << P << ", window " << window << ", " << p.name << (in_place ? ", in place" : ""));
                    check_messages(o, P, p.bytes);
                    const std::size_t W = window == 0 ? kDefaultAlltoallvWindow : window;
                    for (int r = 0; r < P; ++r) {
                        INFO("rank " << r);
                        // One wait per round of W peers, rounds with nothing to move skipped.
                        CHECK(o.stats.waits[std::size_t(r)] <= (std::size_t(P - 1) + W - 1) / W);
                        // In place: a copy of the whole input, where there is anything to send.
                        std::size_t total = 0;
                        for (int q = 0; q < P; ++q) total += p.bytes(r, q);
                        CHECK(o.peaks[std::size_t(r)] == (in_place && P > 1 ? total : 0));
                    }
                }
}

TEST_CASE("linear alltoallv: a window of W posts at most W messages before each wait", "[alltoallv]")
{
    // Every block non-empty: with W = 3 on 8 ranks, 7 peers in rounds of 3, 3 and 1.
    const Pattern all{"ones", [](int i, int j) { return std::size_t(i + j + 1); }};
    for (std::size_t window : {1, 2, 3, 7, 0}) {
        const int P = 8;
        auto run = [window](Transport& net, MemoryOps& mem, const AlltoallvArgs& args) {
            AlltoallvArgs a = args;
            a.max_requests = window;
            linear_alltoallv(net, mem, a);
        };
        const Outcome o = check(P, all, false, run, "linear window " + std::to_string(window));
        const std::size_t W = window == 0 ? kDefaultAlltoallvWindow : window;
        for (int r = 0; r < P; ++r) CHECK(o.stats.waits[std::size_t(r)] == (std::size_t(P - 1) + W - 1) / W);
    }
}
