// Tests of the neighbourhood collectives on shared memory (shm_neighbour.hpp), with P threads of
// one process as the ranks, over every topology of topologies_for(P) (Cartesian grids with
// kNoNeighbour edges and periodic dimensions of size 1 and 2, graphs and dist graphs with
// repeated and self edges) at P = 1..33, 48 and 64. On each topology, one call after another on
// the same segment (so turns, regions and phases carry over from call to call): the alltoall
// forms with 0, 1 and 13 bytes per block, uneven blocks with empty ones among them, large blocks
// (a stream longer than the segment's four large regions at small P), a mix of large and tiny;
// the allgather forms alike. Every receive block is checked byte by byte against
// block_source(), the reference pairing computed from MPI's definition; kNoNeighbour blocks and
// the bytes past the receive buffer must keep their canary, the send buffer its input. Then: no
// message but the segment's set-up, every rank refusing alike without a segment, and the same
// calls resumable (cooperative waits: P ranks as fibers on one thread, resumed in an order
// that changes round by round).
#include "fiber.hpp"
#include "neighbourhoods.hpp"
#include "shm_neighbour.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0x5a};
constexpr std::size_t kTail = 16; // canary bytes past the receive buffer

// One call's sizes: rank q's send block i has size(q, i) bytes (same_block: size(q, 0), one
// block for every destination).
struct Scheme {
    std::string name;
    bool same_block;
    std::function<std::size_t(int q, int i)> size;
};

std::vector<Scheme> schemes(int P)
{
    // Large: at P <= 8 a rank's stream (4 or more blocks) passes the four large regions' 128 KiB.
    const std::size_t large = P <= 8 ? 40963 : P <= 33 ? 5003 : 1501;
    auto fixed = [](std::size_t b) { return [b](int, int) { return b; }; };
    return {
        {"alltoall 0 bytes", false, fixed(0)},
        {"alltoall 1 byte", false, fixed(1)},
        {"alltoall 13 bytes", false, fixed(13)},
        {"alltoallv uneven, empty blocks among them", false,
         [](int q, int i) { return std::size_t((q * 7 + i * 3) % 5) * 37; }},
        {"alltoall large", false, fixed(large)},
        {"alltoallv large and tiny", false,
         [large](int q, int i) { return i % 2 == 1 ? large + std::size_t(q) : std::size_t(q % 3); }},
        {"allgather 1 byte", true, fixed(1)},
        {"allgatherv uneven, empty ones among them", true, [](int q, int) { return std::size_t(q % 3) * 301; }},
        {"allgather large", true, fixed(5 * large + 1)},
        {"alltoall 8 bytes", false, fixed(8)}, // small again after large: the regions' turns
    };
}

// What rank r's call sends and should receive.
struct RankCall {
    std::vector<std::size_t> send_bytes, recv_bytes;
    Bytes send, recv, want;
    NeighbourArgs args{};
};

Bytes block_data(int q, int i, std::size_t bytes, bool same_block)
{
    return pattern(q * 1000 + (same_block ? 0 : i), bytes, 5);
}

RankCall make_call(const Topology& t, int r, const Scheme& s)
{
    RankCall c;
    const auto& dst = t.destinations[std::size_t(r)];
    const auto& src = t.sources[std::size_t(r)];
    if (s.same_block) {
        c.send_bytes.push_back(s.size(r, 0));
        c.send = block_data(r, 0, c.send_bytes[0], true);
    } else {
        for (int i = 0; i < int(dst.size()); ++i) { // kNoNeighbour blocks have bytes too: never sent
            c.send_bytes.push_back(s.size(r, i));
            const Bytes b = block_data(r, i, c.send_bytes.back(), false);
            c.send.insert(c.send.end(), b.begin(), b.end());
        }
    }
    for (int j = 0; j < int(src.size()); ++j) {
        const BlockSource from = block_source(t, r, j);
        if (from.rank < 0) { // untouched: 7 bytes that must keep their canary
            c.recv_bytes.push_back(7);
            c.want.insert(c.want.end(), 7, kCanary);
            continue;
        }
        const std::size_t n = s.size(from.rank, s.same_block ? 0 : from.block);
        c.recv_bytes.push_back(n);
        const Bytes b = block_data(from.rank, from.block, n, s.same_block);
        c.want.insert(c.want.end(), b.begin(), b.end());
    }
    c.want.insert(c.want.end(), kTail, kCanary);
    c.recv.assign(c.want.size(), kCanary);
    c.args.neighbours = t.of(r);
    c.args.sendbuf = c.send.data();
    c.args.recvbuf = c.recv.data();
    c.args.send_bytes = c.send_bytes;
    c.args.recv_bytes = c.recv_bytes;
    c.args.same_block = s.same_block;
    return c;
}

// The difference of a finished call from what it should hold ("" if none): its receive buffer
// against the reference, its send buffer against its input.
std::string check(const Topology& t, int r, const Scheme& s, const RankCall& c)
{
    const RankCall fresh = make_call(t, r, s);
    if (std::string d = first_difference(c.recv, c.want); !d.empty()) return "receive buffer: " + d;
    if (std::string d = first_difference(c.send, fresh.send); !d.empty()) return "send buffer changed: " + d;
    return "";
}

std::vector<int> sizes()
{
    std::vector<int> p;
    for (int P = 1; P <= 33; ++P) p.push_back(P);
    p.push_back(48);
    p.push_back(64);
    return p;
}

// A rank of a communicator whose transport keeps no per-communicator state (so shm has no
// segment) and must not be used for messages: a refusing call sends nothing and waits for nobody.
class NoSegmentTransport final : public Transport {
public:
    NoSegmentTransport(int rank, int size) : rank_(rank), size_(size) {}
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void post_send(int, const void*, std::size_t) override { throw std::logic_error("a message was sent"); }
    void post_recv(int, void*, std::size_t) override { throw std::logic_error("a message was received"); }
    void wait_all() override { throw std::logic_error("a wait for messages"); }

private:
    int rank_, size_;
};

} // namespace

TEST_CASE("shm neighbour: every topology, every P, sizes 0 to past the segment, back to back", "[shm_neighbour]")
{
    for (int P : sizes()) {
        const auto calls = schemes(P);
        for (const Topology& t : topologies_for(P, std::uint32_t(P))) {
            INFO("P=" << P << " " << t.name);
            const RunStats stats = run_ranks(P, [&](InprocTransport& net) {
                const int r = net.rank();
                HostMemory mem;
                for (const Scheme& s : calls) {
                    RankCall c = make_call(t, r, s);
                    shm_neighbour(net, mem, c.args);
                    const std::string d = check(t, r, s, c);
                    rank_check(d.empty(), t.name + ", " + s.name + ": " + d);
                }
            });
            // The segment's set-up is the only traffic: everything else went through shared memory.
            CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
        }
    }
}

TEST_CASE("shm neighbour: without a segment every rank refuses at once, alike, and sends nothing", "[shm_neighbour]")
{
    // The ranks one after another on this thread: a rank that waited for a peer would hang.
    for (int P : {1, 2, 5, 8}) {
        const Scheme s = schemes(P)[2];
        for (const Topology& t : topologies_for(P, 7)) {
            INFO("P=" << P << " " << t.name);
            for (int r = 0; r < P; ++r) {
                NoSegmentTransport net(r, P);
                HostMemory mem;
                RankCall c = make_call(t, r, s);
                CHECK_THROWS_AS(shm_neighbour(net, mem, c.args), ShmUnavailable);
                CHECK(std::all_of(c.recv.begin(), c.recv.end(), [](std::byte b) { return b == kCanary; }));
            }
        }
    }
}

namespace {

// The calls of schemes(P) on every topology of topologies_for(P), rank after rank as fibers on
// this thread over one ShmComm each on a segment in this process's memory with slots of
// `slot_bytes`; a wait yields (cooperative, as a resumable operation's does). The fibers are
// resumed in an order that changes round by round. Returns the failures.
std::vector<std::string> run_fibers(int P, std::size_t slot_bytes)
{
    std::vector<std::string> failures;
    const auto calls = schemes(P);
    for (const Topology& t : topologies_for(P, std::uint32_t(100 + P))) {
        std::vector<std::uint64_t> memory(ShmComm::segment_bytes(P, slot_bytes) / sizeof(std::uint64_t) + 1, 0);
        std::vector<std::unique_ptr<ShmComm>> comms;
        std::vector<std::unique_ptr<Fiber>> fibers;
        for (int r = 0; r < P; ++r) {
            comms.push_back(std::make_unique<ShmComm>(reinterpret_cast<std::byte*>(memory.data()), r, P, slot_bytes));
            comms.back()->set_progress([](void*) { Fiber::yield(); }, nullptr, true);
        }
        for (int r = 0; r < P; ++r)
            fibers.push_back(std::make_unique<Fiber>([&, r] {
                HostMemory mem;
                for (const Scheme& s : calls) {
                    RankCall c = make_call(t, r, s);
                    shm_neighbour(*comms[std::size_t(r)], mem, c.args);
                    if (std::string d = check(t, r, s, c); !d.empty())
                        failures.push_back(t.name + ", rank " + std::to_string(r) + ", " + s.name + ": " + d);
                }
            }));
        bool running = true;
        for (int round = 0; running && round < 200000; ++round) {
            running = false;
            for (int k = 0; k < P; ++k) {
                // Forwards, backwards, and from a rank that moves, round by round.
                const int r = round % 3 == 0 ? k : round % 3 == 1 ? P - 1 - k : (k + round) % P;
                if (fibers[std::size_t(r)]->finished()) continue;
                fibers[std::size_t(r)]->resume();
                running = running || !fibers[std::size_t(r)]->finished();
            }
        }
        if (running) failures.push_back(t.name + ": stuck");
    }
    return failures;
}

} // namespace

TEST_CASE("shm neighbour, resumable: ranks as fibers on one thread whose waits yield, resumed in changing orders",
          "[shm_neighbour]")
{
    for (int P : {1, 2, 3, 4, 5, 8, 12, 17}) {
        INFO("P=" << P);
        for (const std::string& f : run_fibers(P, ShmComm::kSlotBytes)) FAIL_CHECK(f);
    }
}

TEST_CASE("shm neighbour: tiny slots, many chunks; past the small slot's ranks chunk 0 takes a large region",
          "[shm_neighbour]")
{
    // 1 KiB slots: 256-byte small slots, so from 25 ranks (the table and 32 bytes no longer
    // fit) the alltoall forms' chunk 0 takes a large region, as past 504 ranks with real slots.
    for (int P : {2, 5, 24, 25, 33, 40}) {
        INFO("P=" << P);
        for (const std::string& f : run_fibers(P, 1024)) FAIL_CHECK(f);
    }
}
