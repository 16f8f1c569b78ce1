// Tests of the shared-memory family through the registry's entries, with P threads of one
// process as the ranks (the in-process transport keeps each rank's shared state, so the
// first call sets up a real POSIX segment and the rest reuse it). Every shm collective, one
// after another on the same segment, for every P in comm_sizes(), against the sequential
// references of test_support.hpp; sizes from 0 to several 32 KiB chunks, in place and not.
// Then: no messages after the set-up (the data really goes through shared memory), the
// refusal (every rank alike) when the transport keeps no state or a rank cannot map, and the segment's own life cycle.
// test_shm_stress.cpp shakes the synchronisation protocol with processes and threads.
#include "shm.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <dirent.h>
#include <set>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// Counts that stress chunking: those of every family, plus one chunk of int32 exactly, one
// element more, and several chunks with a short tail.
std::vector<std::size_t> shm_counts(int P)
{
    std::vector<std::size_t> c = counts_for(P);
    for (std::size_t extra : {std::size_t(8192), std::size_t(8193), std::size_t(20011)}) c.push_back(extra);
    return c;
}

// Runs every shm collective on P ranks for one count, on one transport per rank (so one
// segment), and checks each against its reference. Returns the run's statistics.
RunStats run_all(int P, std::size_t count)
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    const Reduction max = kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE);
    const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
    const auto doubles = all_inputs(P, count, typed_input<double>(5));
    const Bytes int_sum = fold(sum, ints, count), double_max = fold(max, doubles, count);
    const auto whole = all_inputs(P, count * std::size_t(P), typed_input<std::int32_t>(7)); // reduce_scatter_block
    const Bytes total = fold(sum, whole, count * std::size_t(P));
    const int root = P / 2;
    INFO("P=" << P << " count=" << count);
    // The ranks check their results themselves (rank_checks.hpp); run_ranks() throws if one failed.
    const RunStats stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto R = std::size_t(r);
        HostMemory mem;
        // allreduce, out of place (int sum) and in place (double max)
        Bytes out(count * 4, std::byte{0x5a});
        shm_allreduce(net, mem, AllreduceArgs{ints[R].data(), out.data(), count, sum});
        rank_check_bytes(out, int_sum, "allreduce int32 sum", 4);
        Bytes inout = doubles[R];
        shm_allreduce(net, mem, AllreduceArgs{nullptr, inout.data(), count, max});
        rank_check_bytes(inout, double_max, "allreduce double max in place", 8);
        // reduce to a middle rank
        Bytes red(count * 4, std::byte{0x5a});
        shm_reduce(net, mem, ReduceArgs{ints[R].data(), r == root ? red.data() : nullptr, count, sum, root});
        if (r == root) rank_check_bytes(red, int_sum, "reduce", 4);
        // barrier between data collectives
        shm_barrier(net, mem, BarrierArgs{});
        // bcast from the last rank, `count` bytes
        Bytes buf = r == P - 1 ? pattern(P - 1, count) : Bytes(count, std::byte{0});
        shm_bcast(net, mem, BcastArgs{buf.data(), count, P - 1});
        rank_check_bytes(buf, pattern(P - 1, count), "bcast");
        // allgather of `count` bytes per rank, out of place; allgatherv with uneven blocks in place
        std::vector<std::size_t> even(std::size_t(P), count), uneven;
        for (int q = 0; q < P; ++q) uneven.push_back(count / (std::size_t(q) + 1));
        Bytes gathered(count * std::size_t(P)), expected;
        const Bytes mine = pattern(r, count);
        shm_allgather(net, mem, AllgatherArgs{mine.data(), gathered.data(), even});
        for (int q = 0; q < P; ++q) {
            const Bytes b = pattern(q, count);
            expected.insert(expected.end(), b.begin(), b.end());
        }
        rank_check_bytes(gathered, expected, "allgather");
        const BlockOffsets offsets(uneven);
        Bytes v(offsets.total(), std::byte{0});
        const Bytes own = pattern(r, uneven[R], 3);
        std::copy(own.begin(), own.end(), v.begin() + std::ptrdiff_t(offsets.begin(r)));
        shm_allgather(net, mem, AllgatherArgs{nullptr, v.data(), uneven});
        for (int q = 0; q < P; ++q)
            rank_check_bytes(std::span(v).subspan(offsets.begin(q), offsets.length(q)),
                             pattern(q, uneven[std::size_t(q)], 3),
                             "allgatherv in place, the block of rank " + std::to_string(q));
        // reduce_scatter_block of `count` int32 per rank, in place
        std::vector<std::size_t> counts(std::size_t(P), count);
        Bytes rs = whole[R];
        shm_reduce_scatter_block(net, mem, ReduceScatterArgs{nullptr, rs.data(), counts, sum});
        rank_check_bytes(prefix(rs, count * 4), std::span(total).subspan(R * count * 4, count * 4),
                         "reduce_scatter_block in place", 4);
        rank_check(tail_intact(rs, whole[R], count * 4),
                   "reduce_scatter_block in place changed the input past the result");
        // alltoall of `count` bytes per block, out of place and in place: block j of rank r
        // is pattern(r, count, 11 + j)
        Bytes sendall, want;
        for (int j = 0; j < P; ++j) {
            const Bytes b = pattern(r, count, 11 + std::size_t(j)), w = pattern(j, count, 11 + R);
            sendall.insert(sendall.end(), b.begin(), b.end());
            want.insert(want.end(), w.begin(), w.end());
        }
        Bytes recvall(sendall.size() + 1, std::byte{0x5a});
        shm_alltoall(net, mem, AlltoallArgs{sendall.data(), recvall.data(), count});
        rank_check_bytes(prefix(recvall, want.size()), want, "alltoall");
        rank_check(recvall.back() == std::byte{0x5a}, "alltoall wrote past the end");
        shm_alltoall(net, mem, AlltoallArgs{nullptr, sendall.data(), count});
        rank_check_bytes(sendall, want, "alltoall in place");
    });
    return stats;
}

// A transport that garbles the first message one rank receives (the segment's name), so that
// rank cannot map the segment: every rank must then learn it together.
class GarbledNameTransport final : public Transport {
public:
    GarbledNameTransport(InprocTransport& net, bool garble) : net_(net), garble_(garble) {}
    int rank() const override { return net_.rank(); }
    int size() const override { return net_.size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { net_.post_send(peer, buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override
    {
        if (first_ == nullptr) first_ = static_cast<char*>(buf);
        net_.post_recv(peer, buf, bytes);
    }
    void wait_all() override
    {
        net_.wait_all();
        if (garble_ && first_ != nullptr && !done_) first_[1] = 'X', done_ = true; // "/Xroc/..."
    }
    void** shared_state() override { return net_.shared_state(); }

private:
    InprocTransport& net_;
    bool garble_;
    char* first_ = nullptr;
    bool done_ = false;
};

std::set<std::string> loom_segments_in_dev_shm()
{
    std::set<std::string> names;
    if (DIR* d = opendir("/dev/shm")) {
        while (const dirent* e = readdir(d))
            if (std::string(e->d_name).rfind("loom-", 0) == 0) names.insert(e->d_name);
        closedir(d);
    }
    return names;
}

} // namespace

TEST_CASE("shm: every collective on one segment, every P, chunked sizes", "[shm][collectives]")
{
    for (int P : comm_sizes()) {
        for (std::size_t count : shm_counts(P)) {
            if (P > 33 && count > 8193) continue; // 100 threads on 2 cores: keep it short
            const RunStats stats = run_all(P, count);
            // The set-up is the only traffic: rank 0 sends the name and the verdict to each
            // rank, which answers once. Everything else went through shared memory.
            CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
        }
    }
}

TEST_CASE("shm: without per-communicator state no other algorithm runs under its name: every rank refuses",
          "[shm][fallback]")
{
    // The chooser never picks shm without a segment; if it is run anyway, every rank throws
    // alike (no rank waits for a peer that gave up) and nothing is sent.
    for (int P : {1, 2, 5, 8}) {
        const std::size_t count = 1000;
        const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
        const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
        std::vector<int> refused(static_cast<std::size_t>(P), 0);
        const auto stats = run_ranks(P, [&](InprocTransport& inproc) {
            StatelessTransport net(inproc);
            HostMemory mem;
            Bytes out(count * 4);
            try {
                shm_allreduce(net, mem, AllreduceArgs{ints[std::size_t(net.rank())].data(), out.data(), count, sum});
            } catch (const ShmUnavailable&) {
                ++refused[std::size_t(net.rank())];
            }
            try {
                shm_barrier(net, mem, BarrierArgs{});
            } catch (const ShmUnavailable&) {
                ++refused[std::size_t(net.rank())];
            }
        });
        for (int r : refused) CHECK(r == 2);
        CHECK(total_messages(stats) == 0);
    }
}

TEST_CASE("shm segment: never in /dev/shm, mapped through its path, closed, errors named", "[shm][segment]")
{
    const auto before = loom_segments_in_dev_shm();
    std::string error;
    auto owner = ShmSegment::create(4096, error);
    REQUIRE(owner != nullptr);
    CHECK(owner->name().rfind("/proc/", 0) == 0);
    CHECK(owner->name().size() <= ShmSegment::kMaxName);
    CHECK(loom_segments_in_dev_shm() == before);
    auto other = ShmSegment::attach(owner->name(), 4096, error);
    REQUIRE(other != nullptr);
    owner->data()[17] = std::byte{42};
    CHECK(other->data()[17] == std::byte{42}); // the same memory
    owner->unlink();
    other->data()[18] = std::byte{7}; // still shared after the path is closed
    CHECK(owner->data()[18] == std::byte{7});
    CHECK(ShmSegment::attach(owner->name(), 4096, error) == nullptr);
    CHECK(error.rfind("open " + owner->name() + ": ", 0) == 0);
    auto small = ShmSegment::create(64, error);
    REQUIRE(small != nullptr);
    CHECK(ShmSegment::attach(small->name(), 1 << 20, error) == nullptr);
    CHECK(error == "segment " + small->name() + " is smaller than expected");
    CHECK(ShmSegment::attach("/proc/1/fd/nonexistent", 64, error) == nullptr);
    CHECK(loom_segments_in_dev_shm() == before);
}

TEST_CASE("shm: when one rank cannot map the segment, every rank refuses, and keeps doing so", "[shm][fallback]")
{
    for (int P : {2, 3, 6}) {
        for (int bad = 1; bad<P; bad += P - 2> 0 ? P - 2 : 1) {
            const std::size_t count = 5000;
            const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
            const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
            std::vector<int> setup(static_cast<std::size_t>(P), -1), refused(static_cast<std::size_t>(P), 0);
            const auto before = loom_segments_in_dev_shm();
            const auto stats = run_ranks(P, [&](InprocTransport& inproc) {
                GarbledNameTransport net(inproc, inproc.rank() == bad);
                HostMemory mem;
                setup[std::size_t(net.rank())] = shm_setup(net) ? 1 : 0;
                for (int call = 0; call < 3; ++call) {
                    Bytes out(count * 4);
                    try {
                        shm_allreduce(net, mem,
                                      AllreduceArgs{ints[std::size_t(net.rank())].data(), out.data(), count, sum});
                    } catch (const ShmUnavailable&) {
                        ++refused[std::size_t(net.rank())];
                    }
                }
            });
            INFO("P=" << P << " rank " << bad << " cannot map");
            for (int r : setup) CHECK(r == 0);   // every rank learns it alike
            for (int r : refused) CHECK(r == 3); // and no call runs anything under shm's name
            // Only the set-up's 3 (P-1) messages: nothing else was sent.
            CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
            CHECK(loom_segments_in_dev_shm() == before); // nothing named in /dev/shm, ever
        }
    }
}

TEST_CASE("shm turns: calls run in the order their turns were taken; abandoned turns are skipped", "[shm][turns]")
{
    // A transport that only counts progress() calls (a waiting call's).
    struct Counting final : Transport {
        int progressed = 0;
        int rank() const override { return 0; }
        int size() const override { return 1; }
        void post_send(int, const void*, std::size_t) override {}
        void post_recv(int, void*, std::size_t) override {}
        void wait_all() override {}
        void progress() override { ++progressed; }
    } net;
    ShmTurns turns;
    const std::uint64_t a = turns.take(), b = turns.take(), c = turns.take(), d = turns.take();
    CHECK((a == 0 && b == 1 && c == 2 && d == 3));
    CHECK(turns.is_turn(a));
    CHECK_FALSE(turns.is_turn(b));
    turns.abandon(c); // not yet its turn: skipped when it comes
    turns.end();      // a ends: b's turn
    CHECK(turns.is_turn(b));
    turns.end(); // b ends: c comes, abandoned
    CHECK(turns.is_turn(c));
    turns.wait_for(d, net); // d's call skips c at once
    CHECK(turns.is_turn(d));
    CHECK(net.progressed == 0);
    turns.abandon(d); // abandoned on its turn: over at once
    CHECK(turns.is_turn(turns.take()));
}

TEST_CASE("shm inline slots: the smallest size that holds the data, disjoint, inside the zeroed sync area", "[shm]")
{
    for (int P : {1, 2, 3, 8}) {
        INFO("P = " << P);
        std::vector<std::uint64_t> memory(ShmComm::segment_bytes(P) / sizeof(std::uint64_t) + 1, 0);
        auto* base = reinterpret_cast<std::byte*>(memory.data());
        ShmComm shm(base, 0, P);
        // 8 bytes of data + the sequence word in 16, 24 in 32, 56 in 64; no more inline.
        CHECK(shm.inline_slot(0) == 16);
        CHECK(shm.inline_slot(8) == 16);
        CHECK(shm.inline_slot(9) == 32);
        CHECK(shm.inline_slot(24) == 32);
        CHECK(shm.inline_slot(25) == 64);
        CHECK(shm.inline_slot(ShmComm::kInlineBytes) == 64);
        CHECK(shm.inline_slot(ShmComm::kInlineBytes + 1) == 0);
        CHECK(shm.inline_slot(8, false) == 64); // unpacked: a line each
        shm.set_inline(ShmComm::InlineMode::lines);
        CHECK(shm.inline_slot(8) == 64);
        shm.set_inline(ShmComm::InlineMode::off);
        CHECK(shm.inline_slot(8) == 0);
        // Every slot of every rank, region and size: aligned to its size, disjoint from every
        // other, and inside the area that reads zero for a new communicator (after the
        // counters' lines).
        const std::byte* first = base + ShmComm::kLine * (1 + std::size_t(P));
        const std::byte* end = base + ShmComm::kLine + ShmComm::sync_area_bytes(P);
        std::vector<std::pair<const std::byte*, const std::byte*>> slots;
        constexpr int kFirstSmall = ShmComm::kLargeRegions, kEndSmall = kFirstSmall + ShmComm::kSmallRegions;
        for (int r = 0; r < P; ++r)
            for (int region = kFirstSmall; region < kEndSmall; ++region)
                for (std::size_t size : {16, 32, 64}) {
                    const std::byte* s = shm.inline_data(region, r, size);
                    CHECK(std::size_t(s - base) % size == 0);
                    CHECK(s >= first);
                    CHECK(s + size <= end);
                    slots.emplace_back(s, s + size);
                }
        std::sort(slots.begin(), slots.end());
        for (std::size_t i = 1; i < slots.size(); ++i) CHECK(slots[i - 1].second <= slots[i].first);
    }
}
