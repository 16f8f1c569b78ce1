// Tests of the single-copy family (cma, single_copy.hpp) through the registry's entries, with
// P threads of one process as the ranks: process_vm_readv then reads this process's own
// memory, through the same system call and the same addresses as between processes (the
// integration tests run it between processes). Every collective (reduce to a middle rank too)
// at every P of comm_sizes(),
// counts 0, 1, < P, odd and large, in place and not, a non-commutative op, uneven blocks,
// gather and scatter with non-roots that know only their own count (the v forms); gather and
// scatter again at every root, back to back (more calls than the small regions' turn);
// alltoallv's sizes pair by pair;
// then that nothing but the set-up went through messages, which ranks take a bounce buffer for
// their reduction, and that one rank refusing single
// copy turns it off on every rank alike. The same runs again through a mapping (SameProcessMap:
// the view of an address is the address), the path XPMEM takes, where each rank reduces
// straight from the others' buffers; and one rank that cannot map turns the mapping off on
// every rank, CMA still serving.
#include "shm.hpp"
#include "single_copy.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <string>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// Counts: every family's, plus pieces of the 64 KiB reduction pipeline and one past them.
std::vector<std::size_t> cma_counts(int P)
{
    std::vector<std::size_t> c = counts_for(P);
    if (P <= 8) c.push_back(3 * 16384 * std::size_t(P) + 5); // int32: 3 pieces per slice, and a tail
    // Two ranks reduce the whole vector up to 4 MiB (kWholeReduceBytes), halves above: both.
    if (P == 2) c.push_back((4u << 20) / 4 + 3);
    return c;
}

// The reference for reduce_scatter: the fold of the whole inputs, block r.
Bytes block_of(const Bytes& whole, const BlockOffsets& blocks, int r, std::size_t es)
{
    return Bytes(whole.begin() + std::ptrdiff_t(blocks.begin(r) * es),
                 whole.begin() + std::ptrdiff_t((blocks.begin(r) + blocks.length(r)) * es));
}

// `map`: probe single copy again with it, so the calls read through the mapping.
RunStats run_all(int P, std::size_t count, PeerMap* map = nullptr)
{
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    const Reduction max = kernel(LOOM_OP_MAX, LOOM_TYPE_DOUBLE);
    const Reduction mm = matmul();
    const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
    const auto doubles = all_inputs(P, count, typed_input<double>(5));
    const std::size_t mcount = std::min<std::size_t>(count, 4099); // 16-byte matrices
    std::vector<Bytes> mats;
    for (int r = 0; r < P; ++r) mats.push_back(matmul_input(r, mcount));
    const Bytes int_sum = fold(sum, ints, count), double_max = fold(max, doubles, count),
                mat_prod = fold(mm, mats, mcount);
    // reduce_scatter: uneven blocks (rank q gets count / (q + 1) elements); _block: count each
    std::vector<std::size_t> uneven, even(std::size_t(P), count);
    for (int q = 0; q < P; ++q) uneven.push_back(count / (std::size_t(q) + 1));
    const BlockOffsets ublocks(uneven), eblocks(even);
    const auto rs_in = all_inputs(P, ublocks.total(), typed_input<std::int32_t>(3));
    const auto rsb_in = all_inputs(P, eblocks.total(), typed_input<std::int32_t>(7));
    const Bytes rs_sum = fold(sum, rs_in, ublocks.total()), rsb_sum = fold(sum, rsb_in, eblocks.total());
    const int root = P / 2;
    INFO("P=" << P << " count=" << count);
    return run_ranks(P, [&](InprocTransport& net) {
        const int r = net.rank();
        const auto R = std::size_t(r);
        HostMemory mem;
        shm_setup(net, SingleCopy::cma_only); // as the glue does, with coll_loom_single_copy 2
        if (map != nullptr) shm_comm(net)->probe_single_copy(true, map);
        rank_check(shm_comm(net)->peer_map() == map, "the probe did not settle on the mapping asked for");
        // allreduce: int sum out of place, double max in place, matrices (non-commutative) both ways
        Bytes out(count * 4, std::byte{0x5a});
        cma_allreduce(net, mem, AllreduceArgs{ints[R].data(), out.data(), count, sum});
        rank_check_bytes(out, int_sum, "allreduce int32 sum", 4);
        rank_check_bytes(ints[R], typed_input<std::int32_t>()(r, count), "allreduce wrote its input");
        Bytes inout = doubles[R];
        cma_allreduce(net, mem, AllreduceArgs{nullptr, inout.data(), count, max});
        rank_check_bytes(inout, double_max, "allreduce double max in place", 8);
        Bytes mout(mcount * 16);
        cma_allreduce(net, mem, AllreduceArgs{mats[R].data(), mout.data(), mcount, mm});
        rank_check_bytes(mout, mat_prod, "allreduce matrix product (non-commutative)", 16);
        Bytes minout = mats[R];
        cma_allreduce(net, mem, AllreduceArgs{nullptr, minout.data(), mcount, mm});
        rank_check_bytes(minout, mat_prod, "allreduce matrix product in place", 16);
        // reduce to a middle rank: int sum out of place, matrices (non-commutative) in place at the root
        Bytes red(count * 4, std::byte{0x5a});
        cma_reduce(net, mem, ReduceArgs{ints[R].data(), r == root ? red.data() : nullptr, count, sum, root});
        if (r == root) rank_check_bytes(red, int_sum, "reduce int32 sum", 4);
        Bytes mred = mats[R];
        cma_reduce(
            net, mem,
            ReduceArgs{r == root ? nullptr : mats[R].data(), r == root ? mred.data() : nullptr, mcount, mm, root});
        if (r == root) rank_check_bytes(mred, mat_prod, "reduce matrix product in place at the root", 16);
        // reduce_scatter with uneven blocks, out of place; _block in place (the tail kept)
        Bytes rs(uneven[R] * 4, std::byte{0x5a});
        cma_reduce_scatter(net, mem, ReduceScatterArgs{rs_in[R].data(), rs.data(), uneven, sum});
        rank_check_bytes(rs, block_of(rs_sum, ublocks, r, 4), "reduce_scatter uneven", 4);
        Bytes rsb = rsb_in[R];
        cma_reduce_scatter(net, mem, ReduceScatterArgs{nullptr, rsb.data(), even, sum});
        rank_check_bytes(prefix(rsb, count * 4), block_of(rsb_sum, eblocks, r, 4), "reduce_scatter_block in place", 4);
        rank_check(tail_intact(rsb, rsb_in[R], count * 4), "reduce_scatter_block in place changed the tail");
        // bcast of `count` bytes from a middle rank
        Bytes buf = r == root ? pattern(root, count) : Bytes(count, std::byte{0});
        cma_bcast(net, mem, BcastArgs{buf.data(), count, root});
        rank_check_bytes(buf, pattern(root, count), "bcast");
        // allgather out of place; allgatherv with uneven blocks in place
        Bytes gathered(count * std::size_t(P)), expected;
        const Bytes mine = pattern(r, count);
        cma_allgather(net, mem, AllgatherArgs{mine.data(), gathered.data(), even});
        for (int q = 0; q < P; ++q) {
            const Bytes b = pattern(q, count);
            expected.insert(expected.end(), b.begin(), b.end());
        }
        rank_check_bytes(gathered, expected, "allgather");
        Bytes v(ublocks.total(), std::byte{0});
        const Bytes own = pattern(r, uneven[R], 3);
        std::copy(own.begin(), own.end(), v.begin() + std::ptrdiff_t(ublocks.begin(r)));
        cma_allgather(net, mem, AllgatherArgs{nullptr, v.data(), uneven});
        for (int q = 0; q < P; ++q)
            rank_check_bytes(std::span(v).subspan(ublocks.begin(q), ublocks.length(q)),
                             pattern(q, uneven[std::size_t(q)], 3), "allgatherv in place, block " + std::to_string(q));
        // alltoall of count / P + 1 bytes per block, out of place and in place
        const std::size_t b = count / std::size_t(P) + 1;
        auto send_block = [&](int from, int to) { return pattern(from * 1000 + to, b); };
        Bytes send, recv(b * std::size_t(P)), want;
        for (int q = 0; q < P; ++q) {
            const Bytes s = send_block(r, q), w = send_block(q, r);
            send.insert(send.end(), s.begin(), s.end());
            want.insert(want.end(), w.begin(), w.end());
        }
        cma_alltoall(net, mem, AlltoallArgs{send.data(), recv.data(), b});
        rank_check_bytes(recv, want, "alltoall");
        cma_alltoall(net, mem, AlltoallArgs{nullptr, send.data(), b});
        rank_check_bytes(send, want, "alltoall in place");
        // gather and scatter at the middle rank: equal blocks out of place; uneven ones in place
        // at the root with the non-roots knowing only their own count (gatherv, scatterv)
        std::vector<std::size_t> own_only(std::size_t(P), 0);
        own_only[R] = uneven[R];
        const std::vector<std::size_t>& vcounts = r == root ? uneven : own_only;
        Bytes gat(r == root ? expected.size() : 0, std::byte{0x5a});
        AllgatherArgs ga{mine.data(), r == root ? gat.data() : nullptr, even};
        ga.root = root;
        cma_gather(net, mem, ga);
        if (r == root) rank_check_bytes(gat, expected, "gather");
        Bytes gv(r == root ? ublocks.total() : 0, std::byte{0});
        if (r == root) std::copy(own.begin(), own.end(), gv.begin() + std::ptrdiff_t(ublocks.begin(r)));
        AllgatherArgs gva{r == root ? nullptr : own.data(), r == root ? gv.data() : nullptr, vcounts};
        gva.root = root;
        cma_gather(net, mem, gva);
        for (int q = 0; r == root && q < P; ++q)
            rank_check_bytes(std::span(gv).subspan(ublocks.begin(q), ublocks.length(q)),
                             pattern(q, uneven[std::size_t(q)], 3), "gatherv in place, block " + std::to_string(q));
        Bytes sc(count);
        cma_scatter(net, mem, ScatterArgs{r == root ? expected.data() : nullptr, sc.data(), even, root});
        rank_check_bytes(sc, mine, "scatter");
        Bytes sv(uneven[R]);
        cma_scatter(net, mem,
                    ScatterArgs{r == root ? v.data() : nullptr, r == root ? nullptr : sv.data(), vcounts, root});
        if (r != root) rank_check_bytes(sv, own, "scatterv, the root in place");
        // alltoallv: sizes pair by pair, zeros among them, out of place; in place made symmetric
        // (MPI's in place has send_bytes == recv_bytes); the bytes past the output kept
        const std::size_t unit = count / (8 * std::size_t(P)) + 1;
        auto vbytes = [&](int from, int to) { return std::size_t((from * 7 + to * 3) % 11) * unit; };
        auto sym = [&](int from, int to) { return vbytes(std::min(from, to), std::max(from, to)); };
        for (bool in_place : {false, true}) {
            auto bytes = [&](int from, int to) { return in_place ? sym(from, to) : vbytes(from, to); };
            std::vector<std::size_t> sends, recvs;
            Bytes vsend, vwant;
            for (int q = 0; q < P; ++q) {
                sends.push_back(bytes(r, q));
                recvs.push_back(bytes(q, r));
                const Bytes s = pattern(r * 1000 + q, sends.back(), 9), w = pattern(q * 1000 + r, recvs.back(), 9);
                vsend.insert(vsend.end(), s.begin(), s.end());
                vwant.insert(vwant.end(), w.begin(), w.end());
            }
            const Bytes kept = vsend;
            Bytes vrecv(vwant.size() + 8, std::byte{0x5a});
            if (in_place) std::copy(vsend.begin(), vsend.end(), vrecv.begin());
            cma_alltoallv(net, mem, AlltoallvArgs{in_place ? nullptr : vsend.data(), vrecv.data(), sends, recvs});
            const std::string what = in_place ? "alltoallv in place" : "alltoallv";
            rank_check_bytes(prefix(vrecv, vwant.size()), vwant, what);
            rank_check_bytes(std::span(vrecv).subspan(vwant.size()), Bytes(8, std::byte{0x5a}),
                             what + ": the bytes past the output");
            rank_check_bytes(vsend, kept, what + ": the input");
        }
    });
}

} // namespace

TEST_CASE("cma: every collective, every P, counts 0 to several pieces, in place and not", "[cma][collectives]")
{
    for (int P : comm_sizes()) {
        for (std::size_t count : cma_counts(P)) {
            if (P > 33 && count > 1000) continue; // 100 threads on 2 cores: keep it short
            const RunStats stats = run_all(P, count);
            // The segment's set-up is the only traffic: the data went through process_vm_readv.
            CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
        }
    }
}

TEST_CASE("cma: a rank's reduction takes a bounce buffer only where it reads more than one term", "[cma]")
{
    // reduce_from_all reads the first term straight into the output and the later ones
    // through a buffer of one piece (64 KiB): at 2 ranks rank 0 has no later term, the last
    // rank one; at 3 ranks every rank has one.
    const std::size_t count = 3 * 16384 + 5; // int32: several pieces
    const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
    for (int P : {2, 3}) {
        INFO("P = " << P);
        const auto ints = all_inputs(P, count, typed_input<std::int32_t>());
        const Bytes want = fold(sum, ints, count);
        std::vector<std::size_t> peaks(std::size_t(P), 0);
        run_ranks(P, [&](InprocTransport& net) {
            const auto R = std::size_t(net.rank());
            shm_setup(net, SingleCopy::cma_only);
            CountingMemory mem;
            Bytes out(count * 4);
            cma_allreduce(net, mem, AllreduceArgs{ints[R].data(), out.data(), count, sum});
            rank_check_bytes(out, want, "allreduce int32 sum", 4);
            peaks[R] = mem.peak();
        });
        for (int r = 0; r < P; ++r) {
            INFO("rank " << r);
            CHECK(peaks[std::size_t(r)] == (P == 2 && r == 0 ? 0 : 64 * 1024));
        }
    }
}

TEST_CASE("cma: one rank refusing single copy turns it off on every rank, and cma refuses alike", "[cma][fallback]")
{
    for (int P : {2, 3, 7}) {
        for (int refusing : {0, P - 1}) {
            INFO("P=" << P << ", rank " << refusing << " refuses");
            std::vector<int> segment(std::size_t(P), -1), single(std::size_t(P), -1), refused(std::size_t(P), 0);
            const std::size_t count = 300;
            run_ranks(P, [&](InprocTransport& net) {
                const auto R = std::size_t(net.rank());
                segment[R] = shm_setup(net, net.rank() != refusing ? SingleCopy::any : SingleCopy::off) ? 1 : 0;
                single[R] = shm_comm(net)->single_copy() ? 1 : 0;
                HostMemory mem;
                Bytes in(count * 4, std::byte{1}), out(count * 4);
                try {
                    cma_allreduce(net, mem,
                                  AllreduceArgs{in.data(), out.data(), count, kernel(LOOM_OP_SUM, LOOM_TYPE_INT32)});
                } catch (const ShmUnavailable&) {
                    ++refused[R];
                }
                // The segment still serves the shm family.
                shm_barrier(net, mem, BarrierArgs{});
            });
            for (int s : segment) CHECK(s == 1);
            for (int s : single) CHECK(s == 0);
            for (int r : refused) CHECK(r == 1);
        }
    }
}

TEST_CASE("cma: a segment whose ranks all allow it has single copy on; one set up on first use, off", "[cma][fallback]")
{
    std::vector<int> single(4, -1), first_use(4, -1);
    run_ranks(4, [&](InprocTransport& net) {
        shm_setup(net, SingleCopy::any);
        single[std::size_t(net.rank())] = shm_comm(net)->single_copy() ? 1 : 0;
    });
    run_ranks(4, [&](InprocTransport& net) {
        HostMemory mem;
        shm_barrier(net, mem, BarrierArgs{}); // sets the segment up, as hierarchical's node phases do
        first_use[std::size_t(net.rank())] = shm_comm(net)->single_copy() ? 1 : 0;
    });
    for (int s : single) CHECK(s == 1);
    for (int s : first_use) CHECK(s == 0);
}

TEST_CASE("cma through a mapping: every collective reduces and copies straight from the others' buffers",
          "[cma][mapped][collectives]")
{
    for (int P : comm_sizes()) {
        for (std::size_t count : cma_counts(P)) {
            if (P > 33 && count > 1000) continue;
            SameProcessMap map;
            const RunStats stats = run_all(P, count, &map);
            CHECK(total_messages(stats) == 3 * std::size_t(P - 1));
            // Every collective but a 1-rank one went through the mapping (the probe maps too).
            if (P > 1 && count > 0) CHECK(map.maps() > std::size_t(P) * std::size_t(P - 1));
        }
    }
}

TEST_CASE("cma: gather and scatter, the v forms and in place, at every root back to back", "[cma][rooted]")
{
    constexpr std::byte kCanary{0xEE};
    constexpr std::size_t kGuard = 16;
    for (int P : {1, 2, 3, 4, 7, 16, 33}) {
        for (bool mapped : {false, true}) {
            INFO("P=" << P << " mapped=" << mapped);
            SameProcessMap map;
            std::vector<std::size_t> bytes; // uneven, every third empty
            for (int i = 0; i < P; ++i) bytes.push_back(std::size_t(i % 3 == 1 ? 0 : 5 + 3 * i));
            const BlockOffsets blocks(bytes);
            run_ranks(P, [&](InprocTransport& net) {
                const int r = net.rank();
                const auto R = std::size_t(r);
                HostMemory mem;
                shm_setup(net, SingleCopy::cma_only);
                if (mapped) shm_comm(net)->probe_single_copy(true, &map);
                std::vector<std::size_t> own_only(std::size_t(P), 0);
                own_only[R] = bytes[R];
                auto guard_intact = [&](const Bytes& b, std::size_t from) {
                    return std::all_of(b.begin() + std::ptrdiff_t(from), b.end(),
                                       [&](std::byte x) { return x == kCanary; });
                };
                // More rounds than small regions: cma_scatter takes one per call.
                for (int round = 0; round < 2 * ShmComm::kSmallRegions + 3; ++round) {
                    const int root = round * 5 % P;
                    const bool v = round % 2 == 1, in_place = round % 3 == 0;
                    const std::vector<std::size_t>& counts = v && r != root ? own_only : bytes;
                    const std::string what = " (round " + std::to_string(round) + ")";
                    Bytes whole;
                    for (int q = 0; q < P; ++q) {
                        const Bytes b = pattern(q, bytes[std::size_t(q)], std::size_t(round));
                        whole.insert(whole.end(), b.begin(), b.end());
                    }
                    const Bytes send = whole;
                    Bytes recv(bytes[R] + kGuard, kCanary);
                    cma_scatter(net, mem,
                                ScatterArgs{r == root ? send.data() : nullptr,
                                            r == root && in_place ? nullptr : recv.data(), counts, root});
                    if (r == root) rank_check_bytes(send, whole, "scatter changed the root's sendbuf" + what);
                    if (r != root || !in_place)
                        rank_check_bytes(prefix(recv, bytes[R]), pattern(r, bytes[R], std::size_t(round)),
                                         "scatter" + what);
                    rank_check(guard_intact(recv, r == root && in_place ? 0 : bytes[R]), "scatter's guard" + what);
                    // The blocks back to the root, in place there or not.
                    gather_and_check(&cma_gather, net, mem, bytes, counts, root, in_place, std::size_t(round) + 100,
                                     what);
                }
            });
        }
    }
}

namespace {
// A mapping that fails on one process: as a node where one rank cannot open /dev/xpmem, or
// whose xpmem_get of another's memory is refused.
class FailingMap final : public PeerMap {
public:
    explicit FailingMap(bool at_key) : at_key_(at_key) {}
    const char* name() const override { return "failing"; }
    std::int64_t own_key() override { return at_key_ ? -1 : 0; }
    const std::byte* map(std::int64_t, const void*, std::size_t) override
    {
        throw TransportError(LOOM_ERR_INTERNAL, "failing map");
    }

private:
    bool at_key_;
};
} // namespace

TEST_CASE("cma through a mapping: one rank that cannot map turns the mapping off everywhere; CMA serves",
          "[cma][mapped][fallback]")
{
    for (int P : {2, 3, 7}) {
        for (int failing : {0, P - 1}) {
            for (bool at_key : {true, false}) {
                INFO("P=" << P << ", rank " << failing << (at_key ? " has no key" : " cannot map"));
                SameProcessMap good;
                FailingMap bad(at_key);
                std::vector<int> mapped(std::size_t(P), -1), single(std::size_t(P), -1);
                const std::size_t count = 3000;
                const Reduction sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);
                const auto ins = all_inputs(P, count, typed_input<std::int32_t>());
                const Bytes want = fold(sum, ins, count);
                run_ranks(P, [&](InprocTransport& net) {
                    const auto R = std::size_t(net.rank());
                    shm_setup(net, SingleCopy::cma_only);
                    ShmComm& shm = *shm_comm(net);
                    shm.probe_single_copy(true, net.rank() == failing ? static_cast<PeerMap*>(&bad) : &good);
                    mapped[R] = shm.peer_map() != nullptr ? 1 : 0;
                    single[R] = shm.single_copy() ? 1 : 0;
                    HostMemory mem;
                    Bytes out(count * 4);
                    cma_allreduce(net, mem, AllreduceArgs{ins[R].data(), out.data(), count, sum});
                    rank_check_bytes(out, want, "allreduce over CMA after the mapping was refused", 4);
                });
                for (int m : mapped) CHECK(m == 0);
                for (int s : single) CHECK(s == 1);
                CHECK(good.maps() <= std::size_t(P) * std::size_t(P)); // the probe's maps only
            }
        }
    }
}
