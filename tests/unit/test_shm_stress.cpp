// Stress tests of ShmComm's synchronisation protocol (algorithms/shm.*), on ShmComm directly
// (no Transport): thousands of back-to-back collectives of every kind, with sizes from 0 to a
// few slots, on a small slot so that every call of any size is split into chunks and the
// large regions (and, for the smallest calls, the small ones) take turns all the time. A sync that lets a rank read a slot before it is written,
// or overwrite one before everyone has read it, shows up as a wrong result somewhere.
//
//   * processes: P forked ranks over a MAP_SHARED mapping (the production situation: separate
//     address spaces, one segment), P = 2, 3, 4, 8 (8 oversubscribes this 2-core machine);
//   * threads: P std::thread ranks in one process, P = 1, 2, 5, 16;
//   * uneven speeds: one rank (or all but one) sleeps between calls and inside its copies and
//     reductions, so ranks are at different chunks, regions and collectives.
//
// Every rank runs the same deterministic sequence (choices seeded by the iteration number)
// and checks its own result against values it computes itself from (rank, iteration, index).
// A child process never runs Catch2 assertions: it reports on stderr and _exit()s non-zero;
// the parent kills the rest as soon as one fails and after a 120 s watchdog (no hanging test).
#include "shm.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <csignal>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

using namespace std::chrono_literals;
constexpr std::size_t kSmallSlot = 256;
constexpr auto kDeadline = 120s;

// splitmix64: the source of every choice and every input (no period along a buffer, so data
// left over from the chunk before, or from another rank or iteration, never looks right).
std::uint64_t mix(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
struct Rng {
    std::uint64_t state;
    std::size_t below(std::size_t n) { return std::size_t(mix(state++) % n); }
};
std::uint64_t hash(int rank, std::uint64_t it, std::size_t i) { return mix(mix(it * 64 + std::uint64_t(rank)) ^ i); }
// Rank r's byte i, and element i of a reduction (|v| <= 1000: sums never overflow).
std::byte byte_at(int rank, std::uint64_t it, std::size_t i) { return std::byte(hash(rank, it, i) >> 56); }
std::int64_t value(int rank, std::uint64_t it, std::size_t i) { return std::int64_t(hash(rank, it, i) % 2001) - 1000; }

// A count of up to a few chunks, favouring a chunk's edges: 0, 1, a chunk +- 1, multiples.
std::size_t pick_count(Rng& rng, std::size_t per_chunk)
{
    switch (rng.below(8)) {
    case 0: return 0;
    case 1: return 1 + rng.below(3);
    case 2: return per_chunk - 1;
    case 3: return per_chunk;
    case 4: return per_chunk + 1;
    case 5: return (2 + rng.below(2)) * per_chunk;
    default: return rng.below(3 * per_chunk + 8);
    }
}

// Who is slowed down: `rank` alone, or (others) everyone but `rank`; -1: nobody.
struct Pace {
    int rank = -1;
    bool others = false;
    bool sleeps(int me) const { return rank >= 0 && (me == rank) != others; }
};

// HostMemory that now and then sleeps before a copy or reduction: a slow rank stalls in the
// middle of a collective (between copy-in and sync, between chunks), not only between calls.
class JitterMemory final : public MemoryOps {
public:
    explicit JitterMemory(int rank) : rng_{mix(std::uint64_t(rank) + 1000)} {}
    void copy(void* dst, const void* src, std::size_t bytes) override { jitter(), host_.copy(dst, src, bytes); }
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override
    {
        jitter(), host_.reduce(op, in, inout, count);
    }
    void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count) override
    {
        jitter(), host_.reduce_into(op, in, in2, out, count);
    }
    Scratch scratch(std::size_t bytes) override { return host_.scratch(bytes); }
    void pause(unsigned max_us) { usleep(useconds_t(rng_.below(max_us))); }

private:
    void jitter()
    {
        if (rng_.below(8) == 0) pause(100);
    }
    HostMemory host_;
    Rng rng_;
};

enum Kind { kBarrier, kBcast, kAllgather, kAllreduce, kReduce, kReduceScatter, kAlltoall, kKinds };
const char* const kNames[] = {"barrier", "bcast", "allgather", "allreduce", "reduce", "reduce_scatter_block",
                              "alltoall"};

// Checks a sum: got[i] must be sum over ranks of value(r, it, first + i). "" if right.
template <class T>
std::string check_sum(const T* got, std::size_t n, int P, std::uint64_t it, std::size_t first)
{
    for (std::size_t i = 0; i < n; ++i) {
        std::int64_t want = 0;
        for (int r = 0; r < P; ++r) want += value(r, it, first + i);
        if (got[i] != T(want))
            return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                   std::to_string(want);
    }
    return "";
}

// The reductions for element type T (int32 or int64 sum); `kind` picks which.
template <class T>
std::string run_reduction(ShmComm& shm, MemoryOps& mem, Kind kind, Rng& rng, std::uint64_t it)
{
    const int P = shm.size(), me = shm.rank();
    const Reduction op = kernel(LOOM_OP_SUM, sizeof(T) == 4 ? LOOM_TYPE_INT32 : LOOM_TYPE_INT64);
    const bool in_place = rng.below(2) == 0;
    const int root = int(rng.below(std::size_t(P)));
    const std::size_t per_chunk = shm.slot_bytes() / sizeof(T);
    if (kind == kReduceScatter) {
        const std::size_t n = pick_count(rng, shm.slot_bytes() / (std::size_t(P) * sizeof(T)));
        const std::vector<std::size_t> counts(std::size_t(P), n);
        std::vector<T> in(std::size_t(P) * n), out(n, T(0x5a5a5a5a));
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = T(value(me, it, i));
        shm_reduce_scatter_block(
            shm, mem, ReduceScatterArgs{in_place ? nullptr : in.data(), in_place ? in.data() : out.data(), counts, op});
        return check_sum(in_place ? in.data() : out.data(), n, P, it, std::size_t(me) * n);
    }
    const std::size_t n = pick_count(rng, per_chunk);
    std::vector<T> in(n), out(n, T(0x5a5a5a5a));
    for (std::size_t i = 0; i < n; ++i) in[i] = T(value(me, it, i));
    if (kind == kAllreduce) {
        shm_allreduce(shm, mem,
                      AllreduceArgs{in_place ? nullptr : in.data(), in_place ? in.data() : out.data(), n, op});
        return check_sum(in_place ? in.data() : out.data(), n, P, it, 0);
    }
    // reduce: in place at the root only; elsewhere recvbuf is insignificant, sometimes null.
    const bool at_root = me == root, place = at_root && in_place, null_recv = rng.below(2) == 0;
    void* recv = at_root || !null_recv ? out.data() : nullptr;
    shm_reduce(shm, mem, ReduceArgs{place ? nullptr : in.data(), place ? in.data() : recv, n, op, root});
    return at_root ? check_sum(place ? in.data() : out.data(), n, P, it, 0) : "";
}

// Iteration `it` on this rank: a collective chosen from `it` alone (the same on every rank),
// checked. "" if right, else what went wrong. `witness` holds one word per rank (shared).
std::string run_iteration(ShmComm& shm, MemoryOps& mem, std::uint64_t it, std::uint64_t* witness)
{
    const int P = shm.size(), me = shm.rank();
    Rng rng{mix(it)};
    const auto kind = Kind(rng.below(kKinds));
    std::string error;
    auto where = [&](std::size_t i) { error = "byte " + std::to_string(i) + " wrong"; };
    switch (kind) {
    case kBarrier: {
        // Everyone's arrival (published before the barrier) must be visible after it.
        std::atomic_ref<std::uint64_t>(witness[me]).store(it + 1, std::memory_order_relaxed);
        shm_barrier(shm);
        for (int q = 0; q < P; ++q)
            if (std::atomic_ref<std::uint64_t>(witness[q]).load(std::memory_order_relaxed) < it + 1)
                error = "left before rank " + std::to_string(q) + " arrived";
        break;
    }
    case kBcast: {
        const int root = int(rng.below(std::size_t(P)));
        const std::size_t n = pick_count(rng, shm.slot_bytes());
        std::vector<std::byte> buf(n, std::byte{0xee});
        if (me == root)
            for (std::size_t i = 0; i < n; ++i) buf[i] = byte_at(root, it, i);
        shm_bcast(shm, mem, BcastArgs{buf.data(), n, root});
        for (std::size_t i = 0; i < n && error.empty(); ++i)
            if (buf[i] != byte_at(root, it, i)) where(i);
        break;
    }
    case kAllgather: {
        // Equal or uneven blocks (some empty), in place or not.
        const bool in_place = rng.below(2) == 0, uneven = rng.below(2) == 0;
        std::vector<std::size_t> blocks(std::size_t(P), pick_count(rng, shm.slot_bytes()));
        if (uneven)
            for (auto& b : blocks) b = pick_count(rng, shm.slot_bytes());
        const BlockOffsets at(blocks);
        std::vector<std::byte> send(blocks[std::size_t(me)]), recv(at.total(), std::byte{0xee});
        for (std::size_t i = 0; i < send.size(); ++i) send[i] = byte_at(me, it, i);
        if (in_place) std::copy(send.begin(), send.end(), recv.begin() + std::ptrdiff_t(at.begin(me)));
        shm_allgather(shm, mem, AllgatherArgs{in_place ? nullptr : send.data(), recv.data(), blocks});
        for (int q = 0; q < P && error.empty(); ++q)
            for (std::size_t i = 0; i < at.length(q) && error.empty(); ++i)
                if (recv[at.begin(q) + i] != byte_at(q, it, i)) where(at.begin(q) + i);
        break;
    }
    case kAlltoall: {
        // Blocks around the chunk boundaries (a chunk holds slot / P bytes of each block).
        const bool in_place = rng.below(2) == 0;
        const std::size_t n = pick_count(rng, shm.slot_bytes() / std::size_t(P)), all = n * std::size_t(P);
        std::vector<std::byte> send(all), recv(all, std::byte{0xee});
        for (std::size_t i = 0; i < all; ++i) send[i] = byte_at(me, it, i); // block j: bytes j n ..
        if (in_place) recv = send;
        shm_alltoall(shm, mem, AlltoallArgs{in_place ? nullptr : send.data(), recv.data(), n});
        for (int q = 0; q < P && error.empty(); ++q)
            for (std::size_t i = 0; i < n && error.empty(); ++i)
                if (recv[std::size_t(q) * n + i] != byte_at(q, it, std::size_t(me) * n + i))
                    where(std::size_t(q) * n + i);
        break;
    }
    default: // the reductions, on int32 or int64
        error = rng.below(2) == 0 ? run_reduction<std::int32_t>(shm, mem, kind, rng, it)
                                  : run_reduction<std::int64_t>(shm, mem, kind, rng, it);
    }
    if (error.empty()) return error;
    return "rank " + std::to_string(me) + "/" + std::to_string(P) + ", iteration " + std::to_string(it) + ", " +
           kNames[kind] + ": " + error;
}

struct Config {
    int P;
    std::size_t slot;
    std::uint64_t iterations;
    Pace pace{};
};

// One rank's whole run; the first error, or "". `stop` ends the run at the first error
// (processes: the parent kills the others); threads run on, or the others would hang.
std::string run_rank(const Config& c, std::byte* base, int rank, bool stop)
{
    ShmComm shm(base, rank, c.P, c.slot);
    auto* witness = reinterpret_cast<std::uint64_t*>(base + ShmComm::segment_bytes(c.P, c.slot));
    HostMemory host;
    JitterMemory jitter(rank);
    const bool slow = c.pace.sleeps(rank);
    MemoryOps& mem = slow ? static_cast<MemoryOps&>(jitter) : host;
    std::string first;
    for (std::uint64_t it = 0; it < c.iterations; ++it) {
        if (slow) jitter.pause(200);
        std::string error = run_iteration(shm, mem, it, witness);
        if (!error.empty() && first.empty()) first = std::move(error);
        if (!first.empty() && stop) break;
    }
    return first;
}

// Zero-filled memory for the segment plus one witness word per rank, shared with children
// forked after it is made.
struct SharedMapping {
    explicit SharedMapping(const Config& c)
        : bytes(ShmComm::segment_bytes(c.P, c.slot) + std::size_t(c.P) * sizeof(std::uint64_t)),
          data(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0))
    {
        if (data == MAP_FAILED) throw std::runtime_error("mmap failed");
    }
    ~SharedMapping() { munmap(data, bytes); }
    std::byte* base() const { return static_cast<std::byte*>(data); }
    std::size_t bytes;
    void* data;
};

// Runs c.P forked ranks; "" if all exit 0 in time, else what went wrong (the rest are killed).
std::string run_processes(const Config& c)
{
    REQUIRE(ShmComm::segment_bytes(c.P, c.slot) % sizeof(std::uint64_t) == 0); // witness alignment
    SharedMapping shared(c);
    std::fflush(nullptr); // nothing buffered is written twice
    std::vector<pid_t> live;
    for (int r = 0; r < c.P; ++r) {
        const pid_t pid = fork();
        if (pid == 0) {
            int status = 0;
            try {
                const std::string error = run_rank(c, shared.base(), r, true);
                if (!error.empty()) std::fprintf(stderr, "shm_stress: %s\n", error.c_str()), status = 1;
            } catch (const std::exception& e) {
                std::fprintf(stderr, "shm_stress: rank %d threw: %s\n", r, e.what()), status = 2;
            }
            _exit(status);
        }
        if (pid > 0) live.push_back(pid);
    }
    std::string problem = live.size() == std::size_t(c.P) ? "" : "fork failed";
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    while (!live.empty() && problem.empty()) {
        for (std::size_t i = 0; i < live.size(); ++i) {
            int status = 0;
            if (waitpid(live[i], &status, WNOHANG) != live[i]) continue;
            if (WIFSIGNALED(status))
                problem = "a rank was killed by signal " + std::to_string(WTERMSIG(status));
            else if (WEXITSTATUS(status) != 0)
                problem = "a rank exited with status " + std::to_string(WEXITSTATUS(status)) + " (see stderr)";
            live.erase(live.begin() + std::ptrdiff_t(i--));
        }
        if (std::chrono::steady_clock::now() > deadline) problem = "timed out (a hang?)";
        std::this_thread::sleep_for(2ms);
    }
    for (pid_t pid : live) kill(pid, SIGKILL);
    for (pid_t pid : live) waitpid(pid, nullptr, 0);
    return problem;
}

// Aborts the whole test program if not destroyed within kDeadline: a hang in the threaded
// tests cannot be killed thread by thread, and must not hang the suite.
class Watchdog {
public:
    Watchdog()
        : thread_([this] {
              std::unique_lock lock(mutex_);
              if (!cv_.wait_for(lock, kDeadline, [this] { return done_; })) {
                  std::fprintf(stderr, "shm_stress: threads did not finish in time (a hang?)\n");
                  std::abort();
              }
          })
    {}
    ~Watchdog()
    {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

// Runs c.P thread ranks; every rank's first error ("" if none), checked by the caller.
std::vector<std::string> run_threads(const Config& c)
{
    SharedMapping shared(c);
    std::vector<std::string> errors(std::size_t(c.P));
    Watchdog watchdog;
    std::vector<std::thread> ranks;
    for (int r = 0; r < c.P; ++r)
        ranks.emplace_back([&, r] {
            try {
                errors[std::size_t(r)] = run_rank(c, shared.base(), r, false);
            } catch (const std::exception& e) {
                errors[std::size_t(r)] = std::string("threw: ") + e.what();
            }
        });
    for (auto& t : ranks) t.join();
    return errors;
}

void require_threads_ok(const Config& c)
{
    INFO("P = " << c.P << ", slot = " << c.slot << ", iterations = " << c.iterations);
    for (const std::string& error : run_threads(c)) {
        INFO(error);
        CHECK(error.empty());
    }
}

} // namespace

TEST_CASE("shm stress: forked ranks over one MAP_SHARED segment", "[shm][shm_stress]")
{
    const Config configs[] = {
        {2, kSmallSlot, 20000}, {3, kSmallSlot, 15000},         {4, kSmallSlot, 15000},
        {8, kSmallSlot, 8000},  {4, ShmComm::kSlotBytes, 1000}, // the production slot: large messages, fewer chunks
    };
    for (const Config& c : configs) {
        INFO("P = " << c.P << ", slot = " << c.slot << ", iterations = " << c.iterations);
        CHECK(run_processes(c) == "");
    }
}

TEST_CASE("shm stress: thread ranks in one process", "[shm][shm_stress]")
{
    for (const Config& c : {Config{1, kSmallSlot, 5000}, Config{2, kSmallSlot, 20000}, Config{5, kSmallSlot, 6000},
                            Config{16, kSmallSlot, 1500}})
        require_threads_ok(c);
}

TEST_CASE("shm stress: ranks at very different speeds", "[shm][shm_stress]")
{
    // One slow rank (the others race ahead and wait on it), then one fast rank (it races
    // ahead of everyone); processes and threads.
    for (const Pace pace : {Pace{1, false}, Pace{0, true}}) {
        INFO("slowed: " << (pace.others ? "all but rank " : "rank ") << pace.rank);
        CHECK(run_processes(Config{4, kSmallSlot, 1500, pace}) == "");
        require_threads_ok(Config{3, kSmallSlot, 1500, pace});
    }
}

TEST_CASE("shm: rooted collectives run up to kSmallRegions calls ahead through the small regions", "[shm]")
{
    // The root of kSmallRegions small bcasts, and the non-roots of as many small reduces,
    // finish all of them before the other ranks make their first call: nothing waits for a
    // slower rank until a small region comes round again. The late ranks then get every value.
    constexpr int P = 3, kCalls = ShmComm::kSmallRegions;
    std::vector<std::uint64_t> memory(ShmComm::segment_bytes(P) / sizeof(std::uint64_t) + 1, 0);
    auto* base = reinterpret_cast<std::byte*>(memory.data());
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT64);
    std::atomic<int> early_done{0};
    std::vector<std::string> errors(P);
    auto late_start = [&](int waiting_for) { // the late ranks start once the early ones are done, or after 5 s
        for (int i = 0; i < 5000 && early_done.load() < waiting_for; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return early_done.load() == waiting_for;
    };
    std::vector<std::thread> ranks;
    for (int r = 0; r < P; ++r)
        ranks.emplace_back([&, r] {
            ShmComm shm(base, r, P);
            HostMemory mem;
            // bcasts from rank 0: rank 0 is early, 1 and 2 late
            if (r != 0 && !late_start(1)) errors[std::size_t(r)] = "rank 0 did not finish its bcasts alone";
            for (int i = 0; i < kCalls; ++i) {
                std::int64_t v = r == 0 ? 1000 + i : -1;
                shm_bcast(shm, mem, BcastArgs{&v, sizeof v, 0});
                if (v != 1000 + i) errors[std::size_t(r)] = "bcast " + std::to_string(i) + " got " + std::to_string(v);
            }
            if (r == 0) early_done += 1;
            // reduces to rank 2: ranks 0 and 1 are early, 2 late
            if (r == 2 && !late_start(3)) errors[2] = "ranks 0 and 1 did not finish their reduces alone";
            for (int i = 0; i < kCalls; ++i) {
                std::int64_t in = r * 100 + i, out = 0;
                shm_reduce(shm, mem, ReduceArgs{&in, r == 2 ? &out : nullptr, 1, sum, 2});
                if (r == 2 && out != 300 + 3 * i)
                    errors[2] = "reduce " + std::to_string(i) + " got " + std::to_string(out);
            }
            if (r != 2) early_done += 1;
        });
    for (auto& t : ranks) t.join();
    for (int r = 0; r < P; ++r) {
        INFO("rank " << r);
        CHECK(errors[std::size_t(r)] == "");
    }
}
