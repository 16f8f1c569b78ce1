// Resumable operations (algorithms/resumable.cpp, loom_resumable_* in loom_c_api.h), the core
// of the non-blocking collectives, through the C interface the glue uses: every rank of a
// communicator runs several operations at once on one thread, each over a transport that never
// blocks (a receive completes only when test_all finds its message, so an algorithm that read
// a buffer before waiting would see stale data), resumed round-robin in an order that differs
// between ranks (so operations complete in different orders on different ranks). Every
// algorithm that can run without a shared segment, for every collective, P of 1..9 and a few
// larger, counts 1, small, odd and large, in place and not; results equal the same algorithm
// run directly (run_call on the blocking in-process transport).
#include "combining.hpp"
#include "fiber.hpp"
#include "neighbourhoods.hpp"
#include "registry.hpp"
#include "shm.hpp"
#include "test_support.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <sys/mman.h>
#include <unistd.h>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace loom;
using namespace loom::test;

namespace {

// ---- a non-blocking fabric for P ranks on one thread ----

struct Fabric {
    std::map<std::tuple<int, int, int>, std::deque<Bytes>> queues; // (from, to, tag): messages in order
};

// One rank's end of one operation (its tag).
struct End {
    Fabric* fabric;
    int rank, size, tag;
    struct Recv {
        int peer;
        std::byte* buf;
        std::size_t bytes;
        bool done;
    };
    std::vector<Recv> pending;
    bool truncated = false;
};

int end_isend(void* ctx, int peer, const void* buf, std::size_t bytes)
{
    auto* e = static_cast<End*>(ctx);
    const auto* p = static_cast<const std::byte*>(buf);
    e->fabric->queues[{e->rank, peer, e->tag}].emplace_back(p, p + bytes); // buffered at once
    return 0;
}

int end_irecv(void* ctx, int peer, void* buf, std::size_t bytes)
{
    static_cast<End*>(ctx)->pending.push_back({peer, static_cast<std::byte*>(buf), bytes, false});
    return 0;
}

// Receives match in the order they were posted per peer (MPI's non-overtaking rule).
int end_test_all(void* ctx)
{
    auto* e = static_cast<End*>(ctx);
    bool all = true;
    std::vector<int> blocked;
    for (End::Recv& r : e->pending) {
        if (r.done) continue;
        auto& q = e->fabric->queues[{r.peer, e->rank, e->tag}];
        if (q.empty() || std::find(blocked.begin(), blocked.end(), r.peer) != blocked.end()) {
            blocked.push_back(r.peer);
            all = false;
            continue;
        }
        if (q.front().size() != r.bytes) e->truncated = true;
        std::memcpy(r.buf, q.front().data(), std::min(r.bytes, q.front().size()));
        q.pop_front();
        r.done = true;
    }
    if (!all) return 0;
    e->pending.clear();
    return 1;
}

int must_not_block(void*) { return LOOM_ERR_INTERNAL; }

// ---- the calls ----

struct RankCall {
    Bytes send, recv;
    bool in_place = false;
    std::vector<std::size_t> counts;
    loom_call_t call{};
    std::size_t keep = ~std::size_t(0); // bytes of recv that are the result
    std::vector<int> ring;              // the neighbourhood collectives: a periodic ring's neighbours
    std::vector<int> moore;             // or (combining) a Moore stencil graph's, and its stencil
    std::optional<Stencil> stencil;
    loom_neighbourhood_t neighbours{};
};

const Reduction int_sum = kernel(LOOM_OP_SUM, LOOM_TYPE_INT32);

// Rank r's call number k of collective c on P ranks: count and in-place use vary with k. The
// neighbourhood collectives run on a ring, or with `stencil` (an algorithm that needs one) on
// a Moore stencil graph over MPI_Dims_create's 2-D grid of P.
RankCall prepare(Collective c, int r, int P, int k, bool stencil = false)
{
    const std::size_t n = std::vector<std::size_t>{1, 7, 97, 3001}[std::size_t(k) % 4];
    const bool in_place = k % 2 == 1;
    RankCall rc;
    rc.call.coll = static_cast<loom_coll_t>(c);
    rc.call.op = {int_sum.elem_size, 1, int_sum.fn, int_sum.ctx, int_sum.fn3};
    auto set_in_place = [&] {
        rc.in_place = in_place;
        if (in_place) rc.recv = rc.send;
    };
    // By the collective's layout (collectives.def).
    switch (layout(c)) {
    case Layout::vector:
        if (reduces(c)) { // allreduce, reduce, scan: int32 elements
            const int root = (k + 1) % P;
            rc.call.count = n;
            rc.call.root = root;
            rc.send = as_bytes(rank_input<std::int32_t>(r, n, std::size_t(k)));
            const bool result = !rooted(c) || r == root;
            if (result) rc.recv = Bytes(n * 4, std::byte{0x5a});
            if (result) set_in_place();
        } else { // bcast: bytes, from the root
            const int root = (k + 2) % P;
            rc.call.count = n;
            rc.call.root = root;
            rc.recv = r == root ? pattern(root, n, std::size_t(k)) : Bytes(n, std::byte{0});
            rc.in_place = true;
        }
        break;
    case Layout::split: {
        rc.counts.assign(std::size_t(P), n);
        if (per_rank_counts(c))
            for (int i = 0; i < P; ++i) rc.counts[std::size_t(i)] = std::size_t(i % 3) * n / 2 + 1;
        const std::size_t all = std::accumulate(rc.counts.begin(), rc.counts.end(), std::size_t(0));
        rc.send = as_bytes(rank_input<std::int32_t>(r, all, std::size_t(k)));
        rc.recv = Bytes(rc.counts[std::size_t(r)] * 4, std::byte{0x5a});
        rc.keep = rc.counts[std::size_t(r)] * 4;
        set_in_place();
        break;
    }
    case Layout::gathered: {
        rc.counts.assign(std::size_t(P), n);
        if (per_rank_counts(c))
            for (int i = 0; i < P; ++i) rc.counts[std::size_t(i)] = std::size_t(i % 4) * n / 3;
        const std::size_t all = std::accumulate(rc.counts.begin(), rc.counts.end(), std::size_t(0));
        std::size_t own = 0;
        for (int i = 0; i < r; ++i) own += rc.counts[std::size_t(i)];
        rc.send = pattern(r, rc.counts[std::size_t(r)], std::size_t(k));
        rc.recv = Bytes(all, std::byte{0x5a});
        if (rooted(c)) rc.call.root = (k + 1) % P; // gather
        rc.in_place = in_place;
        if (in_place) std::copy(rc.send.begin(), rc.send.end(), rc.recv.begin() + std::ptrdiff_t(own));
        break;
    }
    case Layout::scattered: { // scatter: the root's blocks, each rank's to it
        rc.counts.assign(std::size_t(P), n);
        rc.call.root = (k + 1) % P;
        if (r == rc.call.root) {
            for (int q = 0; q < P; ++q) {
                const Bytes block = pattern(q, n, std::size_t(k));
                rc.send.insert(rc.send.end(), block.begin(), block.end());
            }
            if (!in_place) rc.recv = Bytes(n, std::byte{0x5a}); // in place: rbuf null, no result here
        } else {
            rc.recv = Bytes(n, std::byte{0x5a});
            rc.in_place = true; // no send buffer
        }
        break;
    }
    case Layout::per_peer_v: { // alltoallv: c(r, q) bytes from r to q, some empty
        auto c_of = [&](int from, int to) { return (from * 3 + to) % 4 == 0 ? std::size_t(0) : n + std::size_t(from + to); };
        rc.counts.resize(2 * std::size_t(P));
        std::size_t out = 0, in = 0;
        for (int q = 0; q < P; ++q) {
            out += rc.counts[std::size_t(q)] = c_of(r, q);
            in += rc.counts[std::size_t(P + q)] = c_of(q, r);
        }
        rc.send = pattern(r, out, std::size_t(k));
        rc.recv = Bytes(in, std::byte{0x5a});
        break;
    }
    case Layout::neighbour_gathered:
    case Layout::per_neighbour: { // a periodic ring (-1, +1): blocks of n bytes
        if (stencil) {
            const test::Topology t = test::stencil(balanced_dims(P, 2), test::moore(2), TopologyKind::graph, "moore");
            rc.moore = t.sources[std::size_t(r)];
            rc.stencil = detect_stencil(P, r, rc.moore, rc.moore);
            const std::size_t out = layout(c) == Layout::neighbour_gathered ? 1 : 8;
            rc.counts.assign(out + 8, n);
            rc.send = pattern(r, n * out, std::size_t(k));
            rc.recv = Bytes(8 * n, std::byte{0x5a});
            break;
        }
        rc.ring = {(r + P - 1) % P, (r + 1) % P, P, 1}; // the lists, then dims and periods
        const std::size_t out = layout(c) == Layout::neighbour_gathered ? 1 : 2;
        rc.counts.assign(out + 2, n);
        rc.send = pattern(r, n * out, std::size_t(k));
        rc.recv = Bytes(2 * n, std::byte{0x5a});
        break;
    }
    case Layout::none: break;
    case Layout::per_peer:
        rc.call.count = n;
        rc.send = pattern(r, n * std::size_t(P), std::size_t(k));
        rc.recv = Bytes(n * std::size_t(P), std::byte{0x5a});
        set_in_place();
        break;
    }
    return rc;
}

void point_at_buffers(RankCall& rc, const Algorithm& algo)
{
    rc.call.counts = rc.counts.empty() ? nullptr : rc.counts.data();
    rc.call.sbuf = rc.in_place ? nullptr : rc.send.data();
    rc.call.rbuf = rc.recv.empty() ? nullptr : rc.recv.data();
    rc.call.chosen = &algo;
    if (!rc.ring.empty()) {
        rc.neighbours = loom_neighbourhood_t{LOOM_TOPO_CARTESIAN, 2, 2, rc.ring.data(), rc.ring.data(), 1, rc.ring.data() + 2,
                                            rc.ring.data() + 3, 2, nullptr};
        rc.call.neighbours = &rc.neighbours;
    }
    if (!rc.moore.empty()) {
        rc.neighbours = loom_neighbourhood_t{LOOM_TOPO_GRAPH, 8, 8, rc.moore.data(), rc.moore.data(), 0, nullptr, nullptr,
                                            8, rc.stencil ? &*rc.stencil : nullptr};
        rc.call.neighbours = &rc.neighbours;
    }
}

Bytes result(const RankCall& rc)
{
    return Bytes(rc.recv.begin(), rc.recv.begin() + std::ptrdiff_t(std::min(rc.keep, rc.recv.size())));
}

// Each rank's results of calls 0..K-1, run one after the other on the blocking transport.
std::vector<std::vector<Bytes>> run_directly(Collective c, const Algorithm& algo, int P, int K)
{
    std::vector<std::vector<Bytes>> out(std::size_t(P), std::vector<Bytes>(std::size_t(K), Bytes{}));
    run_ranks(P, [&](InprocTransport& net) {
        for (int k = 0; k < K; ++k) {
            RankCall rc = prepare(c, net.rank(), P, k, algo.needs.stencil);
            point_at_buffers(rc, algo);
            HostMemory mem;
            run_call(algo, net, mem, rc.call);
            out[std::size_t(net.rank())][std::size_t(k)] = result(rc);
        }
    });
    return out;
}

struct ResumableRun {
    std::vector<std::vector<Bytes>> results;
    std::size_t resumptions = 0;
    bool stuck = false, failed = false, truncated = false;
};

// The same calls all started at once as resumable operations on every rank, resumed
// round-robin: rank r goes through its operations starting at r % K, odd ranks backwards.
ResumableRun run_resumable(Collective c, const Algorithm& algo, int P, int K)
{
    Fabric fabric;
    std::vector<RankCall> calls;
    std::vector<End> ends;
    calls.reserve(std::size_t(P * K));
    ends.reserve(std::size_t(P * K));
    std::vector<loom_resumable_t*> ops;
    for (int r = 0; r < P; ++r)
        for (int k = 0; k < K; ++k) {
            calls.push_back(prepare(c, r, P, k, algo.needs.stencil));
            point_at_buffers(calls.back(), algo);
            ends.push_back(End{&fabric, r, P, k, {}});
            const loom_transport_t t{&ends.back(), r,       P,       end_isend, end_irecv,    must_not_block,
                                     nullptr,      nullptr, nullptr, nullptr,   end_test_all, nullptr};
            ops.push_back(loom_resumable_create(&t, &calls.back().call));
            REQUIRE(ops.back() != nullptr);
        }
    ResumableRun run;
    std::size_t running = ops.size();
    for (std::size_t sweep = 0; running > 0; ++sweep) {
        if (sweep > 100000) {
            run.stuck = true;
            break;
        }
        for (int r = 0; r < P; ++r)
            for (int j = 0; j < K; ++j) {
                const int k = r % 2 == 0 ? (r + j) % K : (r + K - j) % K;
                loom_resumable_t*& op = ops[std::size_t(r * K + k)];
                if (op == nullptr) continue;
                int rc = 0;
                ++run.resumptions;
                if (loom_resumable_resume(op, &rc) == 0) continue;
                if (rc != LOOM_SUCCESS) run.failed = true;
                loom_resumable_free(op);
                op = nullptr;
                --running;
            }
    }
    for (loom_resumable_t* op : ops)
        if (op != nullptr) loom_resumable_free(op); // only after a failure: leaks its stack's frames
    run.results.assign(std::size_t(P), std::vector<Bytes>(std::size_t(K)));
    for (int r = 0; r < P; ++r)
        for (int k = 0; k < K; ++k) run.results[std::size_t(r)][std::size_t(k)] = result(calls[std::size_t(r * K + k)]);
    for (const End& e : ends) run.truncated = run.truncated || e.truncated;
    return run;
}

// The algorithms of c that need no shared segment, single copy or node map, on P ranks.
std::vector<const Algorithm*> resumable_algorithms(Collective c, int P)
{
    CallShape shape{P, 4096, true, 1, P};
    shape.segment = false;
    shape.single_copy = false;
    shape.element_bytes = 4;
    shape.stencil = balanced_dims(P, 2)[1] >= 3; // a Moore stencil graph (prepare)
    std::vector<const Algorithm*> list;
    for (const Algorithm& a : all_algorithms())
        if (a.collective == c && !a.needs.topology && !why_not(a, shape)) list.push_back(&a);
    return list;
}

void check_collective(Collective c)
{
    const int K = 4;
    std::size_t algorithms = 0;
    for (int P : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17}) {
        for (const Algorithm* algo : resumable_algorithms(c, P)) {
            ++algorithms;
            INFO(to_string(c) << " " << algo->name << ", P " << P << ", " << K << " operations per rank at once");
            const auto direct = run_directly(c, *algo, P, K);
            const ResumableRun run = run_resumable(c, *algo, P, K);
            REQUIRE_FALSE(run.stuck);
            REQUIRE_FALSE(run.failed);
            CHECK_FALSE(run.truncated);
            for (int r = 0; r < P; ++r)
                for (int k = 0; k < K; ++k) {
                    INFO("rank " << r << ", operation " << k);
                    CHECK(first_difference(run.results[std::size_t(r)][std::size_t(k)],
                                           direct[std::size_t(r)][std::size_t(k)]) == "");
                }
            // Operations that exchange data pause at least once (P > 1): they really resumed. A
            // chain (linear scan and exscan: receive from the rank before, then send to the next) may find
            // every message there already when the ranks run in order, and never pause.
            CHECK(run.resumptions >= std::size_t(P * K));
            if (P > 1 && c != Collective::scan && c != Collective::exscan)
                CHECK(run.resumptions > std::size_t(P * K));
        }
    }
    CHECK(algorithms > 0);
}

} // namespace

// Every collective of the table (collectives.def): every algorithm without a segment, several
// operations at once (rooted ones to different roots), against the same calls run directly.
TEST_CASE("resumable: every collective, every algorithm without a segment, several at once", "[resumable]")
{
    for (const Collective c : all_collectives()) DYNAMIC_SECTION(to_string(c)) { check_collective(c); }
}

TEST_CASE("resumable: a restarted operation keeps its scratch memory", "[resumable]")
{
    // A persistent request's starts: each rank's operation runs to the end, is restarted
    // (loom_resumable_restart) with new input and runs again; the scratch blocks of the first
    // run are reused, none added.
    const std::size_t n = 20000;
    std::size_t algorithms_keeping = 0;
    for (int P : {4, 5})
        for (const Algorithm* algo : resumable_algorithms(Collective::allreduce, P)) {
            INFO("allreduce " << algo->name << ", P " << P);
            Fabric fabric;
            std::vector<RankCall> calls(static_cast<std::size_t>(P));
            std::vector<End> ends;
            ends.reserve(std::size_t(P));
            std::vector<loom_resumable_t*> ops;
            std::vector<loom_transport_t> transports;
            transports.reserve(std::size_t(P));
            std::vector<std::size_t> kept(static_cast<std::size_t>(P));
            for (int start = 0; start < 4; ++start) {
                for (int r = 0; r < P; ++r) {
                    RankCall& rc = calls[std::size_t(r)];
                    rc = prepare(Collective::allreduce, r, P, 0);
                    rc.call.count = n;
                    rc.send = as_bytes(rank_input<std::int32_t>(r, n, std::size_t(start)));
                    rc.recv = Bytes(n * 4, std::byte{0x5a});
                    rc.in_place = false;
                    point_at_buffers(rc, *algo);
                    if (start == 0) {
                        ends.push_back(End{&fabric, r, P, 0, {}});
                        transports.push_back({&ends.back(), r, P, end_isend, end_irecv, must_not_block, nullptr,
                                              nullptr, nullptr, nullptr, end_test_all, nullptr});
                        ops.push_back(loom_resumable_create(&transports.back(), &rc.call));
                        REQUIRE(ops.back() != nullptr);
                    } else {
                        REQUIRE(loom_resumable_restart(ops[std::size_t(r)], &transports[std::size_t(r)], &rc.call) ==
                                LOOM_SUCCESS);
                        CHECK(loom_resumable_kept_bytes(ops[std::size_t(r)]) == kept[std::size_t(r)]); // still there
                    }
                }
                std::vector<bool> ended(static_cast<std::size_t>(P), false);
                for (int sweep = 0, left = P; left > 0; ++sweep) {
                    REQUIRE(sweep < 100000);
                    for (int r = 0; r < P; ++r) {
                        int rc = 0;
                        if (ended[std::size_t(r)] || loom_resumable_resume(ops[std::size_t(r)], &rc) == 0) continue;
                        REQUIRE(rc == LOOM_SUCCESS);
                        ended[std::size_t(r)] = true;
                        --left;
                    }
                }
                std::vector<std::int32_t> want(n, 0);
                for (int q = 0; q < P; ++q) {
                    const auto in = rank_input<std::int32_t>(q, n, std::size_t(start));
                    for (std::size_t i = 0; i < n; ++i) want[i] += in[i];
                }
                for (int r = 0; r < P; ++r) {
                    INFO("start " << start << ", rank " << r);
                    CHECK(first_difference(calls[std::size_t(r)].recv, as_bytes(want)) == "");
                    const std::size_t now = loom_resumable_kept_bytes(ops[std::size_t(r)]);
                    if (start == 0) kept[std::size_t(r)] = now;
                    CHECK(now == kept[std::size_t(r)]);
                }
            }
            if (kept[0] > 0) ++algorithms_keeping;
            for (loom_resumable_t* op : ops) loom_resumable_free(op);
        }
    CHECK(algorithms_keeping > 0);
}

TEST_CASE("resumable: refused without test_all, and for staged (device) calls", "[resumable]")
{
    const Algorithm* ring = find_algorithm(Collective::allreduce, "ring");
    REQUIRE(ring != nullptr);
    End e{nullptr, 0, 1, 0, {}};
    loom_transport_t t{&e,      0,       1,       end_isend, end_irecv, must_not_block,
                       nullptr, nullptr, nullptr, nullptr,   nullptr,   nullptr};
    loom_call_t call{};
    call.coll = LOOM_COLL_ALLREDUCE;
    call.chosen = ring;
    CHECK(loom_resumable_create(&t, &call) == nullptr);
    t.test_all = end_test_all;
    int copier = 0;
    call.copier = &copier;
    CHECK(loom_resumable_create(&t, &call) == nullptr);
    call.copier = nullptr;
    call.chosen = nullptr;
    CHECK(loom_resumable_create(&t, &call) == nullptr);
}

TEST_CASE("resumable: what an operation's stack costs in resident memory", "[resumable]")
{
    // Runs every collective's algorithms (P 8, the largest counts above) on this thread, whose
    // operations are pooled with their stacks and reused; then finds the stacks (in
    // /proc/self/maps: a read-write mapping of Fiber::kDefaultStack right above a one-page
    // guard) and counts each one's resident pages with mincore: what an operation costs beyond
    // the request. The largest counts.
    for (Collective c : {Collective::allreduce, Collective::reduce_scatter, Collective::allgatherv, Collective::bcast,
                         Collective::alltoall})
        run_resumable(c, *resumable_algorithms(c, 8).front(), 8, 4);
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    std::ifstream maps("/proc/self/maps");
    REQUIRE(maps);
    std::string line;
    std::uintptr_t guard_end = 0;
    std::size_t stacks = 0, most = 0;
    while (std::getline(maps, line)) {
        unsigned long lo = 0, hi = 0;
        char perms[5] = {};
        if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3) continue;
        const bool is_stack = std::string(perms) == "rw-p" && lo == guard_end && hi - lo == Fiber::kDefaultStack;
        guard_end = std::string(perms) == "---p" && hi - lo == page ? hi : 0;
        if (!is_stack) continue;
        std::vector<unsigned char> resident((hi - lo) / page);
        REQUIRE(mincore(reinterpret_cast<void*>(lo), hi - lo, resident.data()) == 0);
        std::size_t pages = 0;
        for (unsigned char r : resident) pages += r & 1;
        ++stacks;
        most = std::max(most, pages);
    }
    const std::size_t kib = most * page / 1024;
    INFO(stacks << " stacks; the most resident: " << kib << " KiB of " << Fiber::kDefaultStack / 1024);
    CHECK(stacks >= 8); // the 8 ranks' operations, pooled with their stacks
    CHECK(most > 0);
    CHECK(kib <= 128); // far below the 256 KiB mapped (docs/algorithms.md: 64 KiB measured)
    std::printf("resumable: fiber stacks after every collective's algorithms: %zu, the most resident %zu KiB of %zu "
                "KiB\n",
                stacks, kib, Fiber::kDefaultStack / 1024);
}

namespace {

// P ranks on one thread, each with its communicator's shared state: an operation sets the
// segment up (loom_shm_begin_setup + loom_resumable_create_setup) while K allreduces decided
// meanwhile - shm, with recursive doubling standing in - wait in the turns after it. With
// `fail`, the set-up never runs: its turn just ends with no segment (as when a rank could not
// map it), and every call must run its stand-in. Returns each rank's results and stand-ins.
struct PendingRun {
    std::vector<std::vector<Bytes>> results;
    int stand_ins = 0;
    bool stuck = false, failed = false;
};

PendingRun run_pending(int P, int K, bool fail)
{
    const Algorithm& shm = *find_algorithm(Collective::allreduce, "shm");
    const Algorithm& stand_in = *find_algorithm(Collective::allreduce, "recursive_doubling");
    Fabric fabric;
    std::vector<void*> states(std::size_t(P), nullptr);
    std::vector<std::uint64_t> turns(std::size_t(P * (K + 1)));
    std::vector<RankCall> calls;
    std::vector<End> ends;
    calls.reserve(std::size_t(P * K));
    ends.reserve(std::size_t(P * (K + 1)));
    std::vector<loom_resumable_t*> ops; // per rank: the set-up, then the K calls
    for (int r = 0; r < P; ++r) {
        std::uint64_t* turn = &turns[std::size_t(r * (K + 1))];
        REQUIRE(loom_shm_begin_setup(&states[std::size_t(r)], turn) == LOOM_SUCCESS);
        CHECK(*turn == 0);
        ends.push_back(End{&fabric, r, P, 1000, {}});
        const loom_transport_t setup{
            &ends.back(), r,       P,       end_isend,    end_irecv, must_not_block, &states[std::size_t(r)],
            nullptr,      nullptr, nullptr, end_test_all, nullptr};
        if (fail) {
            shm_state_turns(states[std::size_t(r)]).end(); // the set-up's turn, over without a segment
            ops.push_back(nullptr);
        } else {
            ops.push_back(loom_resumable_create_setup(&setup, 0));
            REQUIRE(ops.back() != nullptr);
        }
        for (int k = 0; k < K; ++k) {
            calls.push_back(prepare(Collective::allreduce, r, P, k));
            point_at_buffers(calls.back(), shm);
            calls.back().call.stand_in.algorithm = &stand_in;
            turn[k + 1] = loom_shm_take_turn(&states[std::size_t(r)]);
            ends.push_back(End{&fabric, r, P, k, {}});
            const loom_transport_t t{
                &ends.back(), r,       P,       end_isend,    end_irecv,   must_not_block, &states[std::size_t(r)],
                nullptr,      nullptr, nullptr, end_test_all, &turn[k + 1]};
            ops.push_back(loom_resumable_create(&t, &calls.back().call));
            REQUIRE(ops.back() != nullptr);
        }
    }
    PendingRun run;
    std::size_t running = 0;
    for (loom_resumable_t* op : ops) running += op != nullptr ? 1 : 0;
    for (std::size_t sweep = 0; running > 0; ++sweep) {
        if (sweep > 100000) {
            run.stuck = true;
            break;
        }
        // Later calls first, odd ranks backwards: a call must wait for the turns before it.
        for (int r = 0; r < P; ++r)
            for (int j = 0; j <= K; ++j) {
                const int k = r % 2 == 0 ? K - j : j;
                loom_resumable_t*& op = ops[std::size_t(r * (K + 1) + k)];
                if (op == nullptr) continue;
                int rc = 0;
                if (loom_resumable_resume(op, &rc) == 0) continue;
                if (rc != LOOM_SUCCESS) run.failed = true;
                if (k > 0) run.stand_ins += loom_resumable_stood_in(op);
                loom_resumable_free(op);
                op = nullptr;
                --running;
            }
    }
    for (loom_resumable_t* op : ops)
        if (op != nullptr) loom_resumable_free(op);
    run.results.assign(std::size_t(P), std::vector<Bytes>(std::size_t(K)));
    for (int r = 0; r < P; ++r)
        for (int k = 0; k < K; ++k) run.results[std::size_t(r)][std::size_t(k)] = result(calls[std::size_t(r * K + k)]);
    for (int r = 0; r < P; ++r) {
        CHECK((loom_shm_verdict(states[std::size_t(r)]) != 0) == !fail);
        loom_shm_release(states[std::size_t(r)]);
    }
    return run;
}

} // namespace

TEST_CASE("resumable: a segment set up by an operation serves the calls decided meanwhile, else their stand-ins",
          "[resumable][shm]")
{
    const int K = 4;
    for (bool fail : {false, true})
        for (int P : {1, 2, 3, 4, 5, 8}) {
            INFO("P " << P << (fail ? ", the set-up fails" : ", the set-up succeeds"));
            const auto direct =
                run_directly(Collective::allreduce, *find_algorithm(Collective::allreduce, "ring"), P, K);
            const PendingRun run = run_pending(P, K, fail);
            REQUIRE_FALSE(run.stuck);
            REQUIRE_FALSE(run.failed);
            CHECK(run.stand_ins == (fail ? P * K : 0));
            for (int r = 0; r < P; ++r)
                for (int k = 0; k < K; ++k) {
                    INFO("rank " << r << ", call " << k);
                    CHECK(first_difference(run.results[std::size_t(r)][std::size_t(k)],
                                           direct[std::size_t(r)][std::size_t(k)]) == "");
                }
        }
}
