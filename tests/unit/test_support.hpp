// Shared helpers for the algorithm unit tests: the communicator sizes and counts every
// algorithm is tested at, deterministic inputs, sequential references, and a
// non-commutative reduction to check that order-preserving algorithms preserve order.
//
// The bodies given to run_ranks() run on the rank threads, where Catch2 must not be used (it
// is not thread-safe): they keep their results for the test to assert on after run_ranks()
// returns, and check anything else with LOOM_RANK_CHECK() or rank_check_bytes()
// (tests/support/rank_checks.hpp). Results are compared with first_difference(), whose text
// says where and how they differ.
#pragma once

#include "collectives.hpp"
#include "inproc_transport.hpp"
#include "reduce_kernels.hpp"
#include "transport.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace loom::test {

// Byte i of the block rank `from` sends as its block `to` (a peer's rank, or a neighbour block's
// index): a hash, so a block from the wrong rank or in the wrong place does not match (for
// blocks of a few bytes or more).
inline std::byte tag(int from, int to, std::size_t i)
{
    std::uint64_t x = (std::uint64_t(from) << 40) ^ (std::uint64_t(to) << 20) ^ i;
    x *= 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return std::byte(x >> 24);
}

// 1..33, plus a few larger sizes that are not powers of two (and one that is).
inline std::vector<int> comm_sizes()
{
    std::vector<int> sizes;
    for (int p = 1; p <= 33; ++p) sizes.push_back(p);
    for (int p : {48, 64, 100}) sizes.push_back(p);
    return sizes;
}

// Counts that stress block splits: empty, one, fewer than P, P, more than P, a prime, and a
// large count (smaller for large P, to keep the run short).
inline std::vector<std::size_t> counts_for(int P)
{
    const std::size_t p = std::size_t(P);
    std::vector<std::size_t> c{0, 1, p + 1, p, 97, P <= 8 ? (1u << 18) + 3 : P <= 33 ? 10007 : 3001};
    if (P > 1) c.push_back(p - 1);
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    return c;
}

// Rank r's element i: small integers, so float sums are exact in any order.
template <class T>
T element(int rank, std::size_t i, std::size_t salt = 0)
{
    return T(int((std::size_t(rank) * 7 + i * 3 + salt) % 11) - 4);
}

template <class T>
std::vector<T> rank_input(int rank, std::size_t count, std::size_t salt = 0)
{
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = element<T>(rank, i, salt);
    return v;
}

// A recognisable byte pattern for data-movement collectives: byte i of rank r's data.
inline std::vector<std::byte> pattern(int rank, std::size_t bytes, std::size_t salt = 0)
{
    std::vector<std::byte> v(bytes);
    for (std::size_t i = 0; i < bytes; ++i) v[i] = std::byte((rank * 131 + i * 7 + salt * 17 + 1) & 0xff);
    return v;
}

inline Reduction kernel(loom_op_t op, loom_type_t type)
{
    auto k = find_kernel(op, type);
    if (!k) throw std::logic_error("no such kernel");
    return *k;
}

// The sequential, rank-ordered reference: x_0 op x_1 op ... op x_{P-1}, left to right.
// `inputs[r]` is rank r's data, count elements of op.elem_size bytes.
inline std::vector<std::byte> fold(const Reduction& op, const std::vector<std::vector<std::byte>>& inputs,
                                   std::size_t count)
{
    std::vector<std::byte> acc = inputs.at(0);
    for (std::size_t r = 1; r < inputs.size(); ++r) {
        std::vector<std::byte> next = inputs[r];
        op.fn(acc.data(), next.data(), count, op.ctx); // next = acc op x_r
        acc.swap(next);
    }
    return acc;
}

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v)
{
    std::vector<std::byte> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// A non-commutative, associative reduction: 2x2 matrix product over uint32 (mod 2^32),
// one element = 4 x uint32 = 16 bytes. inout = in x inout.
inline void matmul_fn(const void* in, void* inout, std::size_t count, void*)
{
    const auto* a = static_cast<const std::uint32_t*>(in);
    auto* b = static_cast<std::uint32_t*>(inout);
    for (std::size_t e = 0; e < count; ++e, a += 4, b += 4) {
        const std::uint32_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                                    a[2] * b[1] + a[3] * b[3]};
        std::memcpy(b, c, sizeof c);
    }
}
inline Reduction matmul() { return Reduction{16, false, &matmul_fn, nullptr}; }

// Rank r's input for matmul(): count matrices that do not commute with each other.
inline std::vector<std::byte> matmul_input(int rank, std::size_t count)
{
    std::vector<std::uint32_t> m(4 * count);
    for (std::size_t e = 0; e < count; ++e) {
        const std::uint32_t v = std::uint32_t(rank) * 3 + std::uint32_t(e);
        m[4 * e + 0] = 1;
        m[4 * e + 1] = v + 1;
        m[4 * e + 2] = v % 3;
        m[4 * e + 3] = 1;
    }
    return as_bytes(m);
}

using Bytes = std::vector<std::byte>;
// Rank r's input of `count` elements.
using InputFn = std::function<Bytes(int rank, std::size_t count)>;

template <class T>
InputFn typed_input(std::size_t salt = 0)
{
    return [salt](int rank, std::size_t count) { return as_bytes(rank_input<T>(rank, count, salt)); };
}

// The first `n` bytes of `b` (all of it if shorter), to compare a result that has a guard
// after it.
inline std::span<const std::byte> prefix(const Bytes& b, std::size_t n)
{
    return std::span<const std::byte>(b).first(std::min(n, b.size()));
}

inline std::vector<Bytes> all_inputs(int P, std::size_t count, const InputFn& make)
{
    std::vector<Bytes> in;
    for (int r = 0; r < P; ++r) in.push_back(make(r, count));
    return in;
}

inline int floor_lg(int P)
{
    int lg = 0;
    while ((2 << lg) <= P) ++lg;
    return lg;
}

// In place, MPI_Reduce_scatter's receive buffer holds the whole input and MPI defines only
// its first counts[rank] elements as output: the rest must keep the input, byte for byte (an
// application may still read it). Returns whether `buffer` past `result_bytes` is still
// `input` (for LOOM_RANK_CHECK() on the rank's thread).
inline bool tail_intact(const Bytes& buffer, const Bytes& input, std::size_t result_bytes)
{
    return buffer.size() == input.size() && std::equal(buffer.begin() + std::ptrdiff_t(result_bytes), buffer.end(),
                                                       input.begin() + std::ptrdiff_t(result_bytes));
}

// A transport that keeps no per-communicator state: the shm family has no segment (its
// algorithms refuse on every rank alike).
class StatelessTransport final : public Transport {
public:
    explicit StatelessTransport(InprocTransport& net) : net_(net) {}
    int rank() const override { return net_.rank(); }
    int size() const override { return net_.size(); }
    void post_send(int peer, const void* buf, std::size_t bytes) override { net_.post_send(peer, buf, bytes); }
    void post_recv(int peer, void* buf, std::size_t bytes) override { net_.post_recv(peer, buf, bytes); }
    void wait_all() override { net_.wait_all(); }

private:
    InprocTransport& net_;
};

// Runs an allreduce algorithm on P = inputs.size() ranks, in place or not, and returns every
// rank's result with the run's statistics. Out of place, the input must be left alone.
struct AllreduceRun {
    std::vector<Bytes> results;
    RunStats stats;
};
using AllreduceAlgorithm = void (*)(Transport&, MemoryOps&, const AllreduceArgs&);
inline AllreduceRun run_allreduce(AllreduceAlgorithm algorithm, const std::vector<Bytes>& inputs, std::size_t count,
                                  const Reduction& op, bool in_place)
{
    const int P = int(inputs.size());
    AllreduceRun run{std::vector<Bytes>(inputs.size()), {}};
    run.stats = run_ranks(P, [&](InprocTransport& net) {
        const auto r = std::size_t(net.rank());
        Bytes send = inputs[r], recv(count * op.elem_size, std::byte{0x5a});
        HostMemory mem;
        if (in_place) {
            algorithm(net, mem, AllreduceArgs{nullptr, send.data(), count, op});
            run.results[r] = send;
        } else {
            algorithm(net, mem, AllreduceArgs{send.data(), recv.data(), count, op});
            run.results[r] = recv;
            rank_check_bytes(send, inputs[r], "out of place, the input was written");
        }
    });
    return run;
}

// One rank's part in a rooted gather by `gather` at `root`: rank r gives pattern(r, bytes[r], salt)
// and passes `counts` (every block's size, or for the v form away from the root its own only);
// `in_place`: MPI_IN_PLACE at the root, whose block is then already in its result. The root
// checks every block and that nothing was written past the result (a 16-byte guard).
using GatherAlgorithm = void (*)(Transport&, MemoryOps&, const AllgatherArgs&);
inline void gather_and_check(GatherAlgorithm gather, InprocTransport& net, MemoryOps& mem,
                             const std::vector<std::size_t>& bytes, const std::vector<std::size_t>& counts, int root,
                             bool in_place, std::size_t salt, const std::string& what)
{
    constexpr std::byte canary{0xEE};
    constexpr std::size_t guard = 16;
    const int r = net.rank();
    const BlockOffsets blocks(bytes);
    const Bytes mine = pattern(r, bytes[std::size_t(r)], salt);
    Bytes out(r == root ? blocks.total() + guard : 0, canary);
    AllgatherArgs ga{mine.data(), r == root ? out.data() : nullptr, counts};
    ga.root = root;
    if (r == root && in_place) {
        std::copy(mine.begin(), mine.end(), out.begin() + std::ptrdiff_t(blocks.begin(r)));
        ga.sendbuf = nullptr;
    }
    gather(net, mem, ga);
    if (r != root) return;
    for (int q = 0; q < int(bytes.size()); ++q)
        rank_check_bytes(std::span(out).subspan(blocks.begin(q), blocks.length(q)),
                         pattern(q, bytes[std::size_t(q)], salt), "gather, block " + std::to_string(q) + what);
    rank_check(std::all_of(out.begin() + std::ptrdiff_t(blocks.total()), out.end(), [](std::byte x) { return x == canary; }),
               "gather wrote past the result" + what);
}

// A barrier's rounds on P ranks, a different rank 2 ms late in each round (so a barrier that
// waits for too few ranks lets some rank through before it arrives): for each rank and round,
// how many ranks had entered when it left - every rank of every round so far, (round + 1) P, if
// the barrier holds - and the transport's counts.
struct BarrierRounds {
    std::vector<std::vector<int>> seen; // [rank][round]
    RunStats stats;
};
inline BarrierRounds barrier_rounds(int P, int rounds, const std::function<void(InprocTransport&, MemoryOps&)>& barrier)
{
    std::atomic<int> entered{0};
    BarrierRounds out{std::vector<std::vector<int>>(std::size_t(P), std::vector<int>(std::size_t(rounds), -1)), {}};
    out.stats = run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        HostMemory mem;
        for (int round = 0; round < rounds; ++round) {
            if (r == (round * 7 + P / 2) % P) std::this_thread::sleep_for(std::chrono::milliseconds(2));
            entered.fetch_add(1);
            barrier(net, mem);
            out.seen[std::size_t(r)][std::size_t(round)] = entered.load();
        }
    });
    return out;
}

} // namespace loom::test

