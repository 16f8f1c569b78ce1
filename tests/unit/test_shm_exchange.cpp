// Tests of the shm family's gather(v), scatter(v), alltoallv and scan/exscan (shm_exchange.hpp,
// shm_scan.hpp) through the registry's entries, P threads of one process as the ranks on one
// segment (set up by the first call), against references computed here: every P of
// comm_sizes(), counts from 0 to several chunks (and blocks over a small slot, which gather
// and scatter send by message), every kind of root, in place and not, the v forms with the
// non-roots knowing only their own count, a non-commutative op for the scans, more calls in a
// row than the segment has small regions (ranks running ahead), and the refusal on every rank
// alike where there is no segment.
#include "shm.hpp"
#include "shm_exchange.hpp"
#include "shm_scan.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

constexpr std::byte kCanary{0xEE};
constexpr std::size_t kGuard = 16;

bool guard_intact(const Bytes& b, std::size_t from)
{
    return std::all_of(b.begin() + std::ptrdiff_t(from), b.end(), [](std::byte x) { return x == kCanary; });
}

// Rank q's block in a rooted call: `count` bytes, or for the uneven (v) form, sizes around
// `count` with every third block empty.
std::vector<std::size_t> block_sizes(int P, std::size_t count, bool uneven)
{
    std::vector<std::size_t> b;
    for (int q = 0; q < P; ++q) b.push_back(!uneven ? count : q % 3 == 1 ? 0 : count / (std::size_t(q) % 4 + 1) + std::size_t(q));
    return b;
}

// gather then scatter at `root`; `v`: the non-roots pass only their own count (the others 0),
// as MPI_Gatherv's and MPI_Scatterv's do; `in_place`: MPI_IN_PLACE at the root.
void rooted(InprocTransport& net, MemoryOps& mem, const std::vector<std::size_t>& bytes, int root, bool v,
            bool in_place, std::size_t salt)
{
    const int P = net.size(), r = net.rank();
    const auto R = std::size_t(r);
    std::vector<std::size_t> own_only(bytes.size(), 0);
    own_only[R] = bytes[R];
    const std::vector<std::size_t>& counts = v && r != root ? own_only : bytes;
    const BlockOffsets blocks(bytes);
    const std::string what = " (root " + std::to_string(root) + (v ? ", v" : "") + (in_place ? ", in place" : "") +
                             ", salt " + std::to_string(salt) + ")";
    gather_and_check(&shm_gather, net, mem, bytes, counts, root, in_place, salt, what);
    // scatter
    Bytes whole;
    for (int q = 0; q < P; ++q) {
        const Bytes b = pattern(q, bytes[std::size_t(q)], salt + 50);
        whole.insert(whole.end(), b.begin(), b.end());
    }
    const Bytes send = whole;
    Bytes recv(bytes[R] + kGuard, kCanary);
    shm_scatter(net, mem,
                ScatterArgs{r == root ? send.data() : nullptr, r == root && in_place ? nullptr : recv.data(), counts,
                            root});
    if (r == root) rank_check_bytes(send, whole, "scatter changed the root's sendbuf" + what);
    const bool written = r != root || !in_place;
    if (written) rank_check_bytes(prefix(recv, bytes[R]), pattern(r, bytes[R], salt + 50), "scatter" + what);
    rank_check(guard_intact(recv, written ? bytes[R] : 0), "scatter wrote past its block" + what);
}

// alltoallv with sizes pair by pair around `unit`, zeros among them; in place made symmetric
// (MPI's in place has send_bytes == recv_bytes); the bytes past the output and the input kept.
void alltoallv(InprocTransport& net, MemoryOps& mem, std::size_t unit, bool in_place, std::size_t salt)
{
    const int P = net.size(), r = net.rank();
    auto vbytes = [&](int from, int to) { return std::size_t((from * 7 + to * 3 + int(salt)) % 11) * unit / 5; };
    auto bytes = [&](int from, int to) { return in_place ? vbytes(std::min(from, to), std::max(from, to)) : vbytes(from, to); };
    std::vector<std::size_t> sends, recvs;
    Bytes vsend, vwant;
    for (int q = 0; q < P; ++q) {
        sends.push_back(bytes(r, q));
        recvs.push_back(bytes(q, r));
        const Bytes s = pattern(r * 1000 + q, sends.back(), salt), w = pattern(q * 1000 + r, recvs.back(), salt);
        vsend.insert(vsend.end(), s.begin(), s.end());
        vwant.insert(vwant.end(), w.begin(), w.end());
    }
    const Bytes kept = vsend;
    Bytes vrecv(vwant.size() + kGuard, kCanary);
    if (in_place) std::copy(vsend.begin(), vsend.end(), vrecv.begin());
    shm_alltoallv(net, mem, AlltoallvArgs{in_place ? nullptr : vsend.data(), vrecv.data(), sends, recvs});
    const std::string what = std::string(in_place ? "alltoallv in place" : "alltoallv") + " unit " +
                             std::to_string(unit) + " salt " + std::to_string(salt);
    rank_check_bytes(prefix(vrecv, vwant.size()), vwant, what);
    rank_check(guard_intact(vrecv, vwant.size()), what + ": wrote past the output");
    rank_check_bytes(vsend, kept, what + ": the input");
}

// scan and exscan of `count` elements of `op`: every rank's prefix against the sequential fold.
void scans(InprocTransport& net, MemoryOps& mem, const Reduction& op, const std::vector<Bytes>& inputs,
           std::size_t count, bool in_place)
{
    const int r = net.rank();
    const std::size_t S = count * op.elem_size;
    for (bool exclusive : {false, true}) {
        const std::string what = std::string(exclusive ? "exscan" : "scan") + (in_place ? " in place" : "");
        Bytes recv(S + kGuard, kCanary);
        const Bytes send = inputs[std::size_t(r)];
        if (in_place) std::copy(send.begin(), send.end(), recv.begin());
        const ScanArgs args{in_place ? nullptr : send.data(), recv.data(), count, op};
        if (exclusive)
            shm_exscan(net, mem, args);
        else
            shm_scan(net, mem, args);
        const int last = exclusive ? r - 1 : r;
        if (last >= 0)
            rank_check_bytes(prefix(recv, S), fold(op, {inputs.begin(), inputs.begin() + last + 1}, count), what,
                             op.elem_size);
        else if (in_place)
            rank_check_bytes(prefix(recv, S), send, what + ": rank 0's buffer changed");
        else
            rank_check(guard_intact(recv, 0), what + ": rank 0's buffer written");
        rank_check(guard_intact(recv, S), what + ": wrote past the result");
        rank_check_bytes(send, inputs[std::size_t(r)], what + ": the input changed");
    }
}

// Sizes that stress the protocols: counts_for(P), a small slot exactly and one byte more (gather
// and scatter then send by message; alltoallv's blocks around 32 KiB / P), and several large
// chunks of the scans.
std::vector<std::size_t> exchange_counts(int P)
{
    std::vector<std::size_t> c = counts_for(P);
    const std::size_t small = ShmComm::small_slot_bytes(ShmComm::kSlotBytes);
    for (std::size_t extra : {small, small + 1, std::size_t(40000)}) c.push_back(extra);
    return c;
}

} // namespace

TEST_CASE("shm gather, scatter, alltoallv, scan: every P and count, the v forms, in place", "[shm][exchange]")
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : comm_sizes()) {
        for (std::size_t count : exchange_counts(P)) {
            if (P > 33 && count > 4097) continue; // 100 threads on 2 cores: keep it short
            INFO("P=" << P << " count=" << count);
            const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
            const RunStats stats = run_ranks(P, [&](InprocTransport& net) {
                HostMemory mem;
                const int roots[] = {0, P / 2, P - 1};
                for (int k = 0; k < 3; ++k)
                    for (bool v : {false, true})
                        rooted(net, mem, block_sizes(P, count, v), roots[k], v, k == 1, std::size_t(k));
                const std::size_t unit = P <= 8 ? count : std::min<std::size_t>(count, 3001); // memory
                alltoallv(net, mem, unit, false, 1);
                alltoallv(net, mem, unit, true, 2);
                scans(net, mem, sum, ints, count, count % 2 == 1);
            });
            // After the set-up (3 (P-1) messages) only the blocks over a small slot (gather,
            // scatter) or over 32 KiB / P (alltoallv) go by message: none at small counts.
            if (count <= 64) CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
        }
    }
}

TEST_CASE("shm scan and exscan keep rank order: matmul, every P, in place and not", "[shm][exchange]")
{
    for (int P : comm_sizes())
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(97), std::size_t(2049)}) {
            if (P > 33 && count > 97) continue;
            INFO("P=" << P << " count=" << count);
            const auto inputs = all_inputs(P, count, &matmul_input); // 2049 x 16 bytes: two large chunks
            run_ranks(P, [&](InprocTransport& net) {
                HostMemory mem;
                for (bool in_place : {false, true}) scans(net, mem, matmul(), inputs, count, in_place);
            });
        }
}

TEST_CASE("shm gather, scatter, alltoallv, scan: more calls in a row than small regions, roots moving",
          "[shm][exchange]")
{
    // Every rank runs 2 x 16 + 3 rounds back to back: the ranks that never wait (gather's
    // non-roots, scatter's root, scan's low ranks) run ahead into regions the others still read.
    const Reduction max = kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE);
    for (int P : {2, 3, 4, 7, 16}) {
        for (std::size_t count : {std::size_t(8), std::size_t(56), std::size_t(57), std::size_t(1000)}) {
            INFO("P=" << P << " count=" << count);
            const auto doubles = all_inputs(P, count, typed_input<double>(3));
            run_ranks(P, [&](InprocTransport& net) {
                HostMemory mem;
                for (int round = 0; round < 2 * ShmComm::kSmallRegions + 3; ++round) {
                    const int root = round * 5 % P;
                    const bool v = round % 2 == 1;
                    rooted(net, mem, block_sizes(P, count + std::size_t(round), v), root, v, round % 3 == 0,
                           std::size_t(round));
                    if (round % 4 == 0) alltoallv(net, mem, count, round % 8 == 0, std::size_t(round));
                    scans(net, mem, max, doubles, count, round % 2 == 0);
                }
            });
        }
    }
}

TEST_CASE("shm gather in place away from the root (device staging): the block read from its place in recvbuf",
          "[shm][exchange]")
{
    for (int P : {1, 2, 5}) {
        for (std::size_t count : {std::size_t(0), std::size_t(7), std::size_t(5000)}) {
            const std::vector<std::size_t> bytes(std::size_t(P), count);
            const BlockOffsets blocks(bytes);
            run_ranks(P, [&](InprocTransport& net) {
                const int r = net.rank(), root = P - 1;
                HostMemory mem;
                Bytes buf(blocks.total(), std::byte{0});
                const Bytes mine = pattern(r, count, 4);
                std::copy(mine.begin(), mine.end(), buf.begin() + std::ptrdiff_t(blocks.begin(r)));
                AllgatherArgs ga{nullptr, buf.data(), bytes};
                ga.root = root;
                shm_gather(net, mem, ga);
                for (int q = 0; r == root && q < P; ++q)
                    rank_check_bytes(std::span(buf).subspan(blocks.begin(q), blocks.length(q)), pattern(q, count, 4),
                                     "gather in place everywhere, block " + std::to_string(q));
            });
        }
    }
}

TEST_CASE("shm gather, scatter, alltoallv, scan without a segment: every rank refuses alike, nothing sent",
          "[shm][exchange][fallback]")
{
    for (int P : {1, 2, 5}) {
        std::vector<int> refused(std::size_t(P), 0);
        const auto stats = run_ranks(P, [&](InprocTransport& inproc) {
            StatelessTransport net(inproc);
            HostMemory mem;
            const int r = net.rank();
            const std::vector<std::size_t> bytes(std::size_t(P), 8);
            Bytes in(8 * std::size_t(P), std::byte{1}), out(8 * std::size_t(P));
            auto attempt = [&](auto&& call) {
                try {
                    call();
                } catch (const ShmUnavailable&) {
                    ++refused[std::size_t(r)];
                }
            };
            AllgatherArgs ga{in.data(), out.data(), bytes};
            ga.root = 0;
            attempt([&] { shm_gather(net, mem, ga); });
            attempt([&] { shm_scatter(net, mem, ScatterArgs{in.data(), out.data(), bytes, 0}); });
            attempt([&] { shm_alltoallv(net, mem, AlltoallvArgs{in.data(), out.data(), bytes, bytes}); });
            const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
            attempt([&] { shm_scan(net, mem, ScanArgs{in.data(), out.data(), 2, sum}); });
            attempt([&] { shm_exscan(net, mem, ScanArgs{in.data(), out.data(), 2, sum}); });
        });
        for (int n : refused) CHECK(n == 5);
        CHECK(total_messages(stats) == 0);
    }
}

TEST_CASE("shm alltoallv: at 2 ranks a block of 16 KiB goes by message, one byte less through the segment",
          "[shm][exchange]")
{
    // Both fit a 2-rank piece (16 KiB); 16 KiB itself was slower through the segment (shm_exchange.cpp,
    // kMessageFrom). Blocks to itself never travel.
    for (const std::size_t block : {std::size_t(16 * 1024 - 1), std::size_t(16 * 1024)}) {
        INFO("block " << block);
        const RunStats stats = run_ranks(2, [&](InprocTransport& net) {
            HostMemory mem;
            const int r = net.rank();
            const std::vector<std::size_t> bytes(2, block);
            Bytes send;
            for (int q = 0; q < 2; ++q) {
                const Bytes b = pattern(r * 1000 + q, block, 7);
                send.insert(send.end(), b.begin(), b.end());
            }
            Bytes recv(2 * block, kCanary), want;
            for (int q = 0; q < 2; ++q) {
                const Bytes b = pattern(q * 1000 + r, block, 7);
                want.insert(want.end(), b.begin(), b.end());
            }
            shm_alltoallv(net, mem, AlltoallvArgs{send.data(), recv.data(), bytes, bytes});
            rank_check_bytes(recv, want, "alltoallv of 2 ranks");
        });
        // The set-up's 3 (P - 1) messages, and one each way for a block by message.
        CHECK(total_messages(stats) == 3 + (block >= 16 * 1024 ? 2u : 0u));
    }
}
