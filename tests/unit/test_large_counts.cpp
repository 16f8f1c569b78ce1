// 64-bit sizes end to end (issue 58): MPI-4's large-count calls (MPI_Allreduce_c and friends, whose
// counts are size_t) and a count of a large derived type bring messages past 2^31 and 2^32 bytes.
// The core's counts, byte sizes, offsets and segments must be exact there. Checked here without
// allocating such memory:
//   * the arithmetic itself: BlockPartition, BlockOffsets, message_bytes by layout, pat_plan, the
//     shm family's chunk and inline choices, the staging segments;
//   * every messaging algorithm of the registry, its real code, on a Transport and MemoryOps that
//     touch no data (the Ledger below). Buffers are addresses in a reserved, inaccessible region
//     (PROT_NONE: touching one faults), so a run of many GiB costs no memory. Nothing waits, so each
//     rank's schedule runs alone to its end; then the test checks that every byte range an
//     operation names lies inside a buffer of the call (its send and receive buffers, or scratch
//     it asked for), that nothing writes a send buffer (nor MPI_Exscan's rank 0 its result), that the
//     messages pair up between every two ranks in posting order with equal sizes (MPI's matching,
//     one tag per call), and that the ranges written cover the rank's whole result. A size or an
//     offset cut to 32 bits shows as a range outside its buffer, a size mismatch or a hole;
//   * staging (device buffers, staging.hpp) through a copier that checks and records the copies
//     between the user's buffers and its real host slots instead of making them.
// The real runs of many GiB are the integration tests' (mpirun); these take about a second.
#include "collectives.hpp"
#include "layouts.hpp"
#include "pat.hpp"
#include "registry.hpp"
#include "shm.hpp"
#include "staging.hpp"
#include "topology.hpp"

#include "loom_catch.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/mman.h>

using namespace loom;

namespace {

constexpr std::size_t kTwo31 = std::size_t(1) << 31, kTwo32 = std::size_t(1) << 32;

// ---- the fake address space --------------------------------------------------------------

// 1 TiB of address space and no memory: send buffers in the first quarter, receive buffers in the
// second, scratch from the third on.
constexpr std::size_t kSpace = std::size_t(1) << 40, kQuarter = kSpace / 4;

std::byte* space()
{
    static std::byte* const base = [] {
        void* p = mmap(nullptr, kSpace, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    }();
    return base;
}
std::byte* send_area() { return space(); }
std::byte* recv_area() { return space() + kQuarter; }

void never_called(const void*, void*, std::size_t, void*) { std::abort(); } // data is never touched

using Interval = std::pair<std::size_t, std::size_t>; // [begin, end) in bytes

// ---- the ledger: one rank's operations, checked as they come ---------------------------------

struct Buffer {
    const std::byte* at;
    std::size_t bytes;
    bool writable;
    std::string name;
};

struct Posted {
    int peer;
    std::size_t bytes;
};

class Ledger {
public:
    explicit Ledger(int rank) : rank_(rank) {}
    void add(const std::byte* at, std::size_t bytes, bool writable, std::string name)
    {
        buffers_.push_back({at, bytes, writable, std::move(name)});
    }
    // The buffer whose writes make the result (its intervals are kept), or none.
    void set_result(const std::byte* at) { result_at_ = at; }
    // Transport-level checks off: staging's host runs use real memory the ledger does not know.
    void check_ranges(bool on) { check_ranges_ = on; }

    void read(const void* p, std::size_t n, const char* what) { access(p, n, false, what); }
    void write(void* p, std::size_t n, const char* what) { access(p, n, true, what); }
    // A schedule gone wrong (a length cut to 32 bits may become a loop of billions of pieces)
    // stops here instead of filling the machine's memory with its record.
    void count_operation()
    {
        if (++operations_ > kMaxOperations)
            throw std::runtime_error("more than " + std::to_string(kMaxOperations) + " operations on one rank");
    }
    void error(const std::string& what)
    {
        if (errors_.size() < 8) errors_.push_back("rank " + std::to_string(rank_) + ": " + what);
        ++error_count_;
    }
    void sent(int peer, std::size_t bytes)
    {
        count_operation();
        sends_.push_back({peer, bytes});
    }
    void received(int peer, std::size_t bytes)
    {
        count_operation();
        recvs_.push_back({peer, bytes});
    }

    std::byte* scratch(std::size_t bytes)
    {
        std::byte* p = space() + 2 * kQuarter + scratch_used_;
        scratch_used_ += (bytes + 63) / 64 * 64 + 64;
        if (scratch_used_ > 2 * kQuarter) {
            error("scratch beyond the fake address space");
            return space() + 2 * kQuarter;
        }
        add(p, bytes, true, "scratch");
        return p;
    }

    // Writes to the result buffer, merged, cover every interval of `expected`.
    void check_result(std::vector<Interval> expected, const std::vector<Interval>& preset)
    {
        std::vector<Interval> w = writes_;
        w.insert(w.end(), preset.begin(), preset.end());
        std::sort(w.begin(), w.end());
        std::vector<Interval> merged;
        for (const Interval& x : w) {
            if (x.first == x.second) continue;
            if (!merged.empty() && x.first <= merged.back().second)
                merged.back().second = std::max(merged.back().second, x.second);
            else
                merged.push_back(x);
        }
        for (const Interval& e : expected) {
            if (e.first == e.second) continue;
            const auto it = std::upper_bound(merged.begin(), merged.end(), Interval{e.first, ~std::size_t(0)});
            if (it == merged.begin() || std::prev(it)->second < e.second) {
                std::size_t hole = e.first;
                if (it != merged.begin() && std::prev(it)->second > hole) hole = std::prev(it)->second;
                error("the result [" + std::to_string(e.first) + ", " + std::to_string(e.second) +
                      ") is not all written: nothing from byte " + std::to_string(hole));
            }
        }
    }

    const std::vector<Posted>& sends() const { return sends_; }
    const std::vector<Posted>& recvs() const { return recvs_; }
    const std::vector<std::string>& errors() const { return errors_; }
    std::size_t error_count() const { return error_count_; }

private:
    void access(const void* p, std::size_t n, bool write, const char* what)
    {
        count_operation();
        if (n == 0 || !check_ranges_) return;
        const auto* b = static_cast<const std::byte*>(p);
        for (const Buffer& buf : buffers_) {
            if (b < buf.at || b >= buf.at + std::max<std::size_t>(buf.bytes, 1)) continue;
            if (std::size_t(b - buf.at) + n > buf.bytes) {
                error(std::string(what) + " of " + std::to_string(n) + " bytes at " + std::to_string(b - buf.at) +
                      " runs past the " + buf.name + " buffer of " + std::to_string(buf.bytes) + " bytes");
            } else if (write && !buf.writable) {
                error(std::string(what) + " writes the " + buf.name + " buffer");
            } else if (write && buf.at == result_at_) {
                writes_.push_back({std::size_t(b - buf.at), std::size_t(b - buf.at) + n});
            }
            return;
        }
        error(std::string(what) + " of " + std::to_string(n) + " bytes is in no buffer of the call" +
              (p == nullptr ? " (a null pointer)" : ""));
    }

    static constexpr std::size_t kMaxOperations = 4'000'000; // the largest case here needs about 200 000
    int rank_;
    std::size_t operations_ = 0;
    std::vector<Buffer> buffers_;
    const std::byte* result_at_ = nullptr;
    bool check_ranges_ = true;
    std::vector<Interval> writes_;
    std::vector<Posted> sends_, recvs_;
    std::vector<std::string> errors_;
    std::size_t error_count_ = 0, scratch_used_ = 0;
};

class LedgerTransport final : public Transport {
public:
    LedgerTransport(Ledger& ledger, int rank, int size, const topo::Layout* layout)
        : ledger_(ledger), rank_(rank), size_(size), layout_(layout)
    {}
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void post_send(int peer, const void* buf, std::size_t bytes) override
    {
        check_peer(peer);
        ledger_.read(buf, bytes, "a send");
        ledger_.sent(peer, bytes);
    }
    void post_recv(int peer, void* buf, std::size_t bytes) override
    {
        check_peer(peer);
        ledger_.write(buf, bytes, "a receive");
        ledger_.received(peer, bytes);
    }
    void wait_all() override {}
    const topo::Layout* layout() const override { return layout_; }

private:
    void check_peer(int peer)
    {
        if (peer < 0 || peer >= size_) ledger_.error("a message to rank " + std::to_string(peer));
    }
    Ledger& ledger_;
    int rank_, size_;
    const topo::Layout* layout_;
};

class LedgerMemory final : public MemoryOps {
public:
    explicit LedgerMemory(Ledger& ledger) : ledger_(ledger) {}
    void copy(void* dst, const void* src, std::size_t bytes) override
    {
        ledger_.read(src, bytes, "a copy's source");
        ledger_.write(dst, bytes, "a copy");
    }
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override
    {
        ledger_.read(in, count * op.elem_size, "a reduction's input");
        ledger_.write(inout, count * op.elem_size, "a reduction");
    }
    void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count) override
    {
        ledger_.read(in, count * op.elem_size, "a reduction's input");
        ledger_.read(in2, count * op.elem_size, "a reduction's input");
        ledger_.write(out, count * op.elem_size, "a reduction");
    }
    Scratch scratch(std::size_t bytes) override
    {
        return Scratch(ledger_.scratch(bytes), [](std::byte*) {});
    }

private:
    Ledger& ledger_;
};

// MPI's matching: between every two ranks, the k-th send matches the k-th receive, of equal size.
std::string unmatched(const std::vector<Ledger>& ledgers)
{
    const int P = int(ledgers.size());
    std::ostringstream out;
    for (int s = 0; s < P; ++s)
        for (int d = 0; d < P; ++d) {
            std::vector<std::size_t> sent, received;
            for (const Posted& m : ledgers[std::size_t(s)].sends())
                if (m.peer == d) sent.push_back(m.bytes);
            for (const Posted& m : ledgers[std::size_t(d)].recvs())
                if (m.peer == s) received.push_back(m.bytes);
            if (sent == received) continue;
            out << "rank " << s << " sends rank " << d << " " << sent.size() << " messages, which receives "
                << received.size() << ";";
            for (std::size_t k = 0; k < std::min(sent.size(), received.size()); ++k)
                if (sent[k] != received[k]) {
                    out << " message " << k << ": " << sent[k] << " bytes sent, " << received[k] << " received;";
                    break;
                }
        }
    return out.str();
}

std::string report(const std::vector<Ledger>& ledgers)
{
    std::string all;
    for (const Ledger& l : ledgers) {
        for (const std::string& e : l.errors()) all += e + "\n";
        if (l.error_count() > l.errors().size())
            all += "(" + std::to_string(l.error_count() - l.errors().size()) + " more)\n";
    }
    return all + unmatched(ledgers);
}

// ---- calls -----------------------------------------------------------------------------------

// One call as the test describes it for every rank; sizes in the call's units (elements for a
// reduction, bytes otherwise).
struct Case {
    Collective coll;
    int ranks;
    std::size_t elem = 1;                           // reductions: element bytes
    std::size_t count = 0;                          // vector, per_peer, neighbour_gathered uniform
    std::function<std::size_t(int)> block = {};     // split, gathered, scattered: rank i's; neighbours: rank i's send
    std::function<std::size_t(int, int)> pair = {}; // per_peer_v: from i to j; per_neighbour v: direction 0/1
    int root = 0;
    bool in_place = false;
    std::size_t segment = 0, buffer = 0; // the call's segment_bytes and buffer_bytes (0: defaults)

    std::string text() const
    {
        std::ostringstream s;
        s << to_string(coll) << " on " << ranks << " ranks, element " << elem << ", count " << count
          << (block ? ", counts per rank" : "") << (pair ? ", counts per pair" : "") << ", root " << root
          << (in_place ? ", in place" : "") << (segment ? ", segment " + std::to_string(segment) : "")
          << (buffer ? ", buffer " + std::to_string(buffer) : "");
        return s.str();
    }
};

// One rank's view of a Case: its loom_call_t (as the glue fills it), its buffers and the bytes of
// its receive buffer the call must write.
struct RankCall {
    loom_call_t call{};
    std::vector<std::size_t> counts;
    std::vector<int> neighbours;
    int dims[1] = {0}, periods[1] = {1};
    loom_neighbourhood_t nb{};
    std::size_t send_bytes = 0, recv_bytes = 0;
    bool has_send = false, has_recv = false, recv_writable = true;
    std::vector<Interval> result, preset;

    RankCall() = default;
    RankCall(const RankCall&) = delete;
    RankCall& operator=(const RankCall&) = delete;
};

std::size_t sum(const std::vector<std::size_t>& v, std::size_t from, std::size_t to)
{
    std::size_t s = 0;
    for (std::size_t i = from; i < to; ++i) s += v[i];
    return s;
}

void describe(const Case& k, int r, RankCall& rc)
{
    const int P = k.ranks;
    const auto n = std::size_t(P);
    const Collective c = k.coll;
    const std::size_t unit = reduces(c) ? k.elem : 1;
    loom_call_t& call = rc.call;
    call.coll = loom_coll_t(c);
    call.root = k.root;
    call.segment_bytes = k.segment;
    call.buffer_bytes = k.buffer;
    call.op = loom_reduction_t{k.elem, 1, &never_called, nullptr, nullptr};
    const bool result_here = has_result(c, r, k.root);
    // MPI_IN_PLACE: a rooted collective's root alone passes it.
    const bool in_place = k.in_place && (!rooted(c) || r == k.root);
    switch (layout(c)) {
    case Layout::vector: {
        call.count = k.count;
        const std::size_t bytes = k.count * unit;
        rc.recv_bytes = bytes;
        // bcast: the root's buffer is the source (which scatter_allgather's ring may write back
        // into, the same bytes: not checked).
        if (!reduces(c)) {
            rc.has_recv = true;
            if (r != k.root) rc.result.push_back({0, bytes});
            break;
        }
        rc.has_send = !in_place;
        rc.send_bytes = bytes;
        rc.has_recv = result_here || c != Collective::reduce;
        // MPI_Exscan leaves rank 0's receive buffer as it was.
        rc.recv_writable = !(c == Collective::exscan && r == 0);
        if (result_here) rc.result.push_back({0, bytes});
        if (in_place && c == Collective::scan && r == 0) rc.preset.push_back({0, bytes}); // its own input
        break;
    }
    case Layout::split: {
        for (int i = 0; i < P; ++i) rc.counts.push_back(k.block ? k.block(i) : k.count);
        const std::size_t total = sum(rc.counts, 0, n) * unit, mine = rc.counts[std::size_t(r)] * unit;
        rc.has_send = !in_place;
        rc.send_bytes = total;
        rc.has_recv = true;
        rc.recv_bytes = in_place ? total : mine;
        rc.result.push_back({0, mine});
        break;
    }
    case Layout::gathered: {
        // gatherv: a rank other than the root knows its own count only (the glue gives the others 0).
        for (int i = 0; i < P; ++i)
            rc.counts.push_back(counts_at_root_only(c) && r != k.root && i != r ? 0 : k.block ? k.block(i) : k.count);
        const std::size_t total = sum(rc.counts, 0, n), at = sum(rc.counts, 0, std::size_t(r));
        const std::size_t mine = rc.counts[std::size_t(r)];
        rc.has_send = !in_place;
        rc.send_bytes = mine;
        rc.has_recv = result_here || in_place;
        rc.recv_bytes = total;
        if (result_here) rc.result.push_back({0, total});
        if (in_place) rc.preset.push_back({at, at + mine});
        break;
    }
    case Layout::scattered: {
        for (int i = 0; i < P; ++i)
            rc.counts.push_back(counts_at_root_only(c) && r != k.root && i != r ? 0 : k.block ? k.block(i) : k.count);
        const std::size_t mine = rc.counts[std::size_t(r)];
        rc.has_send = r == k.root;
        rc.send_bytes = sum(rc.counts, 0, n);
        rc.has_recv = !in_place; // the root's own block stays in its send buffer
        rc.recv_bytes = mine;
        if (rc.has_recv) rc.result.push_back({0, mine});
        break;
    }
    case Layout::per_peer: {
        call.count = k.count;
        rc.has_send = !in_place;
        rc.has_recv = true;
        rc.send_bytes = rc.recv_bytes = n * k.count;
        rc.result.push_back({0, n * k.count});
        if (in_place) rc.preset.push_back({std::size_t(r) * k.count, std::size_t(r + 1) * k.count});
        break;
    }
    case Layout::per_peer_v: {
        for (int j = 0; j < P; ++j) rc.counts.push_back(k.pair(r, j));
        for (int j = 0; j < P; ++j) rc.counts.push_back(k.pair(j, r));
        rc.has_send = !in_place;
        rc.has_recv = true;
        rc.send_bytes = sum(rc.counts, 0, n);
        rc.recv_bytes = sum(rc.counts, n, 2 * n);
        rc.result.push_back({0, rc.recv_bytes});
        const std::size_t at = sum(rc.counts, n, n + std::size_t(r));
        if (in_place) rc.preset.push_back({at, at + rc.counts[n + std::size_t(r)]});
        break;
    }
    case Layout::neighbour_gathered:
    case Layout::per_neighbour: {
        // A periodic ring of P ranks (a 1-D Cartesian communicator): the -1 then the +1 neighbour.
        const int left = (r + P - 1) % P, right = (r + 1) % P;
        rc.neighbours = {left, right};
        rc.dims[0] = P;
        if (layout(c) == Layout::neighbour_gathered) { // one block to both, each source's block in
            rc.counts = {k.block ? k.block(r) : k.count, k.block ? k.block(left) : k.count,
                         k.block ? k.block(right) : k.count};
            rc.send_bytes = rc.counts[0];
        } else { // direction 0 (to -1) and 1 (to +1); what comes from -1 went its +1 way
            auto to = [&](int q, int dir) { return k.pair ? k.pair(q, dir) : k.count; };
            rc.counts = {to(r, 0), to(r, 1), to(left, 1), to(right, 0)};
            rc.send_bytes = rc.counts[0] + rc.counts[1];
        }
        rc.has_send = rc.has_recv = true;
        rc.recv_bytes = rc.counts[rc.counts.size() - 2] + rc.counts[rc.counts.size() - 1];
        rc.result.push_back({0, rc.recv_bytes});
        break;
    }
    case Layout::none: break;
    }
    call.sbuf = rc.has_send ? send_area() : nullptr;
    call.rbuf = rc.has_recv ? recv_area() : nullptr;
    if (!rc.counts.empty()) call.counts = rc.counts.data();
    if (!rc.neighbours.empty()) {
        rc.nb = loom_neighbourhood_t{
            LOOM_TOPO_CARTESIAN, 2, 2, rc.neighbours.data(), rc.neighbours.data(), 1, rc.dims, rc.periods, 2, nullptr};
        call.neighbours = &rc.nb;
    }
}

// Nodes of the test's layout: the first half of the ranks on node 0, the rest on node 1.
std::unique_ptr<topo::Layout> two_nodes(int P)
{
    std::vector<topo::Place> places(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) places[std::size_t(r)].node = P == 1 ? 0 : (r < (P + 1) / 2 ? 0 : 1);
    return std::make_unique<topo::Layout>(std::move(places));
}

// Why `a` cannot run a case here (a shared segment, single copy, a stencil, P, the nodes), or "".
std::string cannot_run(const Algorithm& a, const Case& k, const topo::Layout& nodes)
{
    if (a.needs.segment || a.needs.single_copy || a.needs.stencil) return "needs shared memory or a stencil";
    int most = 0;
    for (int q = 0; q < nodes.nodes(); ++q) most = std::max(most, int(nodes.node_ranks(q).size()));
    const CallShape shape{k.ranks, 0, true, nodes.nodes(), most, false, reduces(k.coll) ? k.elem : 0, false, false};
    const auto why = why_not(a, shape);
    return why ? std::string(*why) : "";
}

// Runs every rank's schedule of `a` on the case; "" if every check held, else what failed.
std::string run_ledgers(const Algorithm& a, const Case& k)
{
    if (space() == nullptr) return "cannot reserve 1 TiB of address space";
    const auto nodes = two_nodes(k.ranks);
    std::vector<Ledger> ledgers;
    for (int r = 0; r < k.ranks; ++r) ledgers.emplace_back(r);
    for (int r = 0; r < k.ranks; ++r) {
        Ledger& ledger = ledgers[std::size_t(r)];
        RankCall rc;
        describe(k, r, rc);
        // A hierarchical algorithm's node leaders run its default flat algorithm (a job's rules
        // may name another: decide() sets it).
        if (a.reads.leaders) rc.call.leaders = find_algorithm(a.collective, a.default_leaders);
        if (rc.has_send) ledger.add(send_area(), rc.send_bytes, false, "send");
        if (rc.has_recv) ledger.add(recv_area(), rc.recv_bytes, rc.recv_writable, "receive");
        ledger.set_result(recv_area());
        LedgerTransport net(ledger, r, k.ranks, nodes.get());
        LedgerMemory mem(ledger);
        try {
            run_call(a, net, mem, rc.call);
        } catch (const std::exception& e) {
            ledger.error(std::string("threw: ") + e.what());
        }
        ledger.check_result(rc.result, rc.preset);
    }
    return report(ledgers);
}

// The cases of a collective at its large sizes: every block or vector past 2^31 bytes, offsets
// past 2^32, uneven splits, a single block past 2^32 among tiny ones, and elements of 1, 4 and 8
// bytes (more than 2^31 of them).
std::vector<Case> cases_of(Collective c)
{
    std::vector<Case> out;
    const bool reduction = reduces(c);
    auto add = [&](Case k) { out.push_back(std::move(k)); };
    switch (layout(c)) {
    case Layout::vector:
        for (int P : {2, 3}) add({c, P, 1, kTwo31 + 13});
        add({c, 4, 1, kTwo32 + (1 << 20) + 5, {}, {}, 3});
        if (reduction) {
            add({c, 2, 8, kTwo31 + 3});            // 2^31 + 3 elements of 8 bytes: 16 GiB + 24
            add({c, 3, 4, (kTwo32 + 12) / 4 + 1}); // past 2^32 bytes in 4-byte elements
            // A few elements of a large derived type (4.1 and 5.0: a count of a type past 2^31 bytes)
            add({c, 3, kTwo31 + 8, 5});
            add({c, 2, (std::size_t(1) << 23) + 8, 1000}); // 1000 elements of 8 MiB + 8
            add({c, 3, 1, kTwo31 + 13, {}, {}, 1, true});  // in place (a reduce: at its root)
        } else {
            add({c, 3, 1, kTwo32 + 7, {}, {}, 2});
        }
        // Pipelined algorithms (binomial bcast, ring_pipelined, the linear scans) with segments
        // past 2^31 bytes, and their default segments over 2^32 + 2^31 bytes.
        add({.coll = c, .ranks = 3, .elem = 1, .count = 3 * kTwo31 + 1, .root = 1, .segment = kTwo31 + 1});
        add({.coll = c, .ranks = 2, .elem = 1, .count = 3 * kTwo31 + 1});
        break;
    case Layout::split: {
        const bool uniform = !per_rank_counts(c);
        for (int P : {2, 3}) {
            add({c, P, 1, kTwo31 + 1});
            add({c, P, 4, (kTwo31 >> 2) + 3}); // 2^31 + 12 bytes a block
            add({c, P, kTwo31 + 8, 1});        // one element of a type past 2^31 bytes a block
            if (!uniform) {
                add({c, P, 1, 0, [](int i) { return kTwo31 + 2 * std::size_t(i) + 1; }});
                add({c, P, 1, 0, [P](int i) { return i == P - 1 ? kTwo32 + 7 : i == 0 ? 0 : 3; }});
            }
            add({c, P, 1, kTwo31 + 1, {}, {}, 0, true});
        }
        // PAT with a 16 GiB buffer: two blocks past 2^31 a message (A = 2 at 4 ranks).
        add({.coll = c, .ranks = 4, .elem = 1, .count = kTwo31 + 1, .buffer = std::size_t(1) << 34});
        break;
    }
    case Layout::gathered:
    case Layout::scattered: {
        const bool uniform = !per_rank_counts(c);
        const bool rooted_c = rooted(c);
        for (int P : {2, 3}) {
            const int root = rooted_c ? P - 1 : 0;
            add({c, P, 1, kTwo31 + 3, {}, {}, root});
            if (!uniform) {
                add({c, P, 1, 0, [](int i) { return kTwo31 + 2 * std::size_t(i) + 1; }, {}, root});
                add({c, P, 1, 0, [P](int i) { return i == P - 1 ? kTwo32 + 7 : i == 0 ? 0 : 3; }, {}, root});
            }
            add({c, P, 1, kTwo31 + 3, {}, {}, root, true}); // rooted: in place at the root
        }
        if (!rooted_c) {
            add({c, 4, 1, (kTwo32 >> 1) + 9}); // the last two blocks past 2^32
            add({.coll = c, .ranks = 4, .elem = 1, .count = kTwo31 + 1, .buffer = std::size_t(1) << 34}); // PAT
        }
        break;
    }
    case Layout::per_peer:
        for (int P : {2, 3}) {
            add({c, P, 1, kTwo31 + 5});
            add({c, P, 1, kTwo31 + 5, {}, {}, 0, true});
        }
        break;
    case Layout::per_peer_v:
        for (int P : {2, 3}) {
            // symmetric (so also in place): pairs of an even sum past 2^31 bytes, others tiny
            auto even = [](int i, int j) {
                return (i + j) % 2 == 0 ? kTwo31 + std::size_t(i + j) + 1 : 3 + std::size_t(i + j);
            };
            add({c, P, 1, 0, {}, even});
            add({c, P, 1, 0, {}, even, 0, true});
            add({c, P, 1, 0, {}, [P](int i, int j) { return i == 0 && j == P - 1 ? kTwo32 + 3 : 1; }});
        }
        break;
    case Layout::neighbour_gathered:
        for (int P : {2, 3}) {
            if (per_rank_counts(c) && c != Collective::neighbor_allgather)
                add({c, P, 1, 0, [](int q) { return kTwo31 + std::size_t(q) + 1; }});
            add({c, P, 1, kTwo31 + 3});
        }
        break;
    case Layout::per_neighbour:
        for (int P : {2, 3}) {
            add({c, P, 1, kTwo31 + 5});
            if (c != Collective::neighbor_alltoall)
                add({c, P, 1, 0, {}, [](int, int dir) { return dir == 0 ? kTwo32 + 9 : kTwo31 + 1; }});
        }
        break;
    case Layout::none: break;
    }
    return out;
}

// ---- staging through a copier that checks its copies -------------------------------------------

// Host slots are real memory (the algorithms run on them with HostMemory); the user's buffers
// are the fake ones, which only the copies name: each copy is checked against them (in: from a
// user buffer to a slot; out: from a slot to the user's receive buffer) and recorded, not made.
class LedgerCopier final : public AsyncCopier {
public:
    explicit LedgerCopier(Ledger& ledger) : ledger_(ledger) {}
    Scratch host_buffer(std::size_t bytes) override
    {
        if (bytes > (std::size_t(1) << 30))
            throw std::runtime_error("staging slots of " + std::to_string(bytes) + " bytes");
        auto* p = static_cast<std::byte*>(std::calloc(bytes == 0 ? 1 : bytes, 1));
        if (p == nullptr) throw std::bad_alloc();
        host_.push_back({p, bytes});
        return Scratch(p, [](std::byte* q) { std::free(q); });
    }
    void copy(Lane lane, void* dst, const void* src, std::size_t bytes) override
    {
        const void* host = lane == Lane::in ? dst : src;
        if (!in_host(host, bytes)) ledger_.error("a staging copy's host side is not in a slot");
        if (lane == Lane::in)
            ledger_.read(src, bytes, "a copy in");
        else
            ledger_.write(dst, bytes, "a copy out");
        ++posted_[lane == Lane::in ? 0 : 1];
    }
    std::uint64_t mark(Lane lane) override { return posted_[lane == Lane::in ? 0 : 1]; }
    void wait(Lane lane, std::uint64_t ticket) override
    {
        if (ticket > posted_[lane == Lane::in ? 0 : 1]) ledger_.error("a wait for copies never posted");
    }

private:
    bool in_host(const void* p, std::size_t n) const
    {
        const auto* b = static_cast<const std::byte*>(p);
        for (const auto& [at, bytes] : host_)
            if (b >= at && b + n <= at + bytes) return true;
        return false;
    }
    Ledger& ledger_;
    std::vector<std::pair<std::byte*, std::size_t>> host_;
    std::uint64_t posted_[2] = {0, 0};
};

void no_op_reduce(const void*, void*, std::size_t, void*) {}

std::string run_staged_ledgers(const Algorithm& a, const Case& k)
{
    if (space() == nullptr) return "cannot reserve 1 TiB of address space";
    std::vector<Ledger> ledgers;
    for (int r = 0; r < k.ranks; ++r) ledgers.emplace_back(r);
    for (int r = 0; r < k.ranks; ++r) {
        Ledger& ledger = ledgers[std::size_t(r)];
        RankCall rc;
        describe(k, r, rc);
        rc.call.op.fn = &no_op_reduce; // the host runs reduce real slots: of nothing that matters here
        rc.call.memory = LOOM_MEMORY_CUDA;
        if (rc.has_send) ledger.add(send_area(), rc.send_bytes, false, "send");
        if (rc.has_recv) ledger.add(recv_area(), rc.recv_bytes, rc.recv_writable, "receive");
        ledger.set_result(recv_area());
        LedgerCopier copier(ledger);
        Ledger inner(r); // the host runs' messages, whose buffers are real slots
        inner.check_ranges(false);
        LedgerTransport net(inner, r, k.ranks, nullptr);
        try {
            run_staged(a, net, copier, rc.call);
        } catch (const std::exception& e) {
            ledger.error(std::string("threw: ") + e.what());
        }
        ledger.check_result(rc.result, rc.preset);
        for (const Posted& m : inner.sends()) ledger.sent(m.peer, m.bytes);
        for (const Posted& m : inner.recvs()) ledger.received(m.peer, m.bytes);
    }
    return report(ledgers);
}

const Algorithm& algo(Collective c, const char* name)
{
    const Algorithm* found = find_algorithm(c, name);
    REQUIRE(found != nullptr);
    return *found;
}

} // namespace

// ---- the arithmetic ------------------------------------------------------------------------------

TEST_CASE("large counts: BlockPartition and BlockOffsets are exact past 2^31 and 2^32", "[large_counts]")
{
    // 3 x 2^32 + 2 elements in 3 blocks: the first two one longer, offsets past 2^32.
    const std::size_t count = 3 * kTwo32 + 2;
    const BlockPartition p(count, 3);
    CHECK(p.begin(0) == 0);
    CHECK(p.length(0) == kTwo32 + 1);
    CHECK(p.begin(1) == kTwo32 + 1);
    CHECK(p.length(1) == kTwo32 + 1);
    CHECK(p.begin(2) == 2 * kTwo32 + 2);
    CHECK(p.length(2) == kTwo32);
    CHECK(p.begin(2) + p.length(2) == count);
    CHECK(p.max_length() == kTwo32 + 1);
    // More than 2^31 elements on two ranks, and on one.
    const BlockPartition q(kTwo31 + 1, 2);
    CHECK(q.length(0) == (kTwo31 >> 1) + 1);
    CHECK(q.begin(1) == (kTwo31 >> 1) + 1);
    CHECK(q.length(1) == kTwo31 >> 1);
    CHECK(BlockPartition(kTwo32 + 5, 1).length(0) == kTwo32 + 5);
    // Many ranks, each block past 2^31: a begin past 2^40.
    const BlockPartition many(std::size_t(1000) * (kTwo31 + 7) + 999, 1000);
    CHECK(many.begin(999) == std::size_t(999) * (kTwo31 + 8));
    CHECK(many.length(998) == kTwo31 + 8);
    CHECK(many.length(999) == kTwo31 + 7);

    const std::vector<std::size_t> sizes{kTwo31 + 1, kTwo32 + 3, 0, 5};
    const BlockOffsets o(sizes);
    CHECK(o.begin(1) == kTwo31 + 1);
    CHECK(o.begin(2) == kTwo31 + kTwo32 + 4);
    CHECK(o.begin(3) == kTwo31 + kTwo32 + 4);
    CHECK(o.length(1) == kTwo32 + 3);
    CHECK(o.length(2) == 0);
    CHECK(o.span_length(0, 2) == kTwo31 + kTwo32 + 4);
    CHECK(o.span_length(1, 4) == kTwo32 + 8);
    CHECK(o.total() == kTwo31 + kTwo32 + 9);
    // Past 64 blocks the offsets live on the heap: the same sums.
    std::vector<std::size_t> big(70);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = kTwo31 + i;
    const BlockOffsets h(big);
    CHECK(h.begin(69) == 69 * kTwo31 + 69 * 68 / 2);
    CHECK(h.length(69) == kTwo31 + 69);
    CHECK(h.total() == 70 * kTwo31 + 70 * 69 / 2);
}

TEST_CASE("large counts: message_bytes is exact past 2^32 for every layout", "[large_counts]")
{
    loom_call_t c{};
    // vector: count x element
    c.coll = LOOM_COLL_ALLREDUCE;
    c.count = kTwo31 + 3;
    c.op = loom_reduction_t{8, 1, nullptr, nullptr, nullptr};
    CHECK(loom_message_bytes(&c, 2) == 8 * (kTwo31 + 3));
    c.op.elem_size = 1;
    CHECK(loom_message_bytes(&c, 2) == kTwo31 + 3);
    c.count = 1000; // a count of a large derived type (4.1, 5.0): 1000 elements of 8 MiB + 8
    c.op.elem_size = (std::size_t(1) << 23) + 8;
    CHECK(loom_message_bytes(&c, 2) == 1000 * ((std::size_t(1) << 23) + 8));
    c.coll = LOOM_COLL_BCAST;
    c.count = kTwo32 + 1;
    CHECK(loom_message_bytes(&c, 2) == kTwo32 + 1);
    c.coll = LOOM_COLL_SCAN;
    c.count = kTwo32 / 2 + 1;
    c.op.elem_size = 2;
    CHECK(loom_message_bytes(&c, 2) == kTwo32 + 2);
    // split: the sum of the counts, in elements
    std::size_t counts[4] = {kTwo31 + 1, kTwo31 + 1, kTwo31 + 1, kTwo31 + 1};
    c.coll = LOOM_COLL_REDUCE_SCATTER_BLOCK;
    c.counts = counts;
    c.op.elem_size = 4;
    CHECK(loom_message_bytes(&c, 4) == 16 * kTwo31 + 16);
    // gathered, scattered: the sum of the counts, in bytes
    c.coll = LOOM_COLL_ALLGATHER;
    CHECK(loom_message_bytes(&c, 3) == 3 * kTwo31 + 3);
    c.coll = LOOM_COLL_SCATTER;
    CHECK(loom_message_bytes(&c, 4) == 4 * kTwo31 + 4);
    // per_peer: one block
    c.coll = LOOM_COLL_ALLTOALL;
    c.count = kTwo32 + 7;
    CHECK(loom_message_bytes(&c, 3) == kTwo32 + 7);
    // counts that differ from rank to rank: 0, whatever their size
    c.coll = LOOM_COLL_GATHERV;
    CHECK(loom_message_bytes(&c, 3) == 0);
    c.coll = LOOM_COLL_ALLTOALLV;
    CHECK(loom_message_bytes(&c, 2) == 0);
    // the uniform neighbourhood collectives on a Cartesian grid: the larger block
    const int ring[2] = {1, 1}, dims[1] = {2}, periods[1] = {1};
    const loom_neighbourhood_t nb{LOOM_TOPO_CARTESIAN, 2, 2, ring, ring, 1, dims, periods, 2, nullptr};
    std::size_t blocks[4] = {kTwo32 + 9, kTwo32 + 9, kTwo32 + 9, kTwo32 + 9};
    c.coll = LOOM_COLL_NEIGHBOR_ALLTOALL;
    c.counts = blocks;
    c.neighbours = &nb;
    CHECK(loom_message_bytes(&c, 2) == kTwo32 + 9);
    c.coll = LOOM_COLL_NEIGHBOR_ALLGATHER;
    CHECK(loom_message_bytes(&c, 2) == kTwo32 + 9);
}

TEST_CASE("large counts: PAT plans, shm chunks and staging segments past 2^32", "[large_counts]")
{
    // A block past 2^32 against a 1 MiB buffer: one block a message, in buffer-sized pieces.
    PatPlan plan = pat_plan(3, kTwo32 + 1, std::size_t(1) << 20, 3);
    CHECK(plan.aggregation == 1);
    CHECK(plan.piece_bytes == std::size_t(1) << 20);
    // A buffer past 2^32 aggregates blocks past 2^31, as many as fit (capped by the ranks).
    plan = pat_plan(64, kTwo31 + 1, std::size_t(1) << 36, 2);
    CHECK(plan.aggregation == 8); // floor(2^36 / 2 / (2^31 + 1)) = 15, a power of two: 8
    CHECK(plan.piece_bytes == 0);
    CHECK(pat_plan(4, kTwo31 + 1, std::size_t(1) << 34, 2).aggregation == 2); // the schedules' PAT cases
    CHECK(pat_plan(4, kTwo31 + 1, std::size_t(1) << 34, 3).aggregation == 2);
    // How many blocks fit is not cut to 32 bits: 2^62 / 1 would be 0 there.
    plan = pat_plan(1024, 1, std::size_t(1) << 62, 1);
    CHECK(plan.aggregation == 512);

    // A call past 2^32 bytes (also one that is 8 more than 2^32, which 32 bits would take as 8)
    // goes in the large chunks, never inline.
    std::vector<std::byte> segment(ShmComm::segment_bytes(2));
    ShmComm shm(segment.data(), 0, 2);
    for (std::size_t bytes : {kTwo31 + 1, kTwo32, kTwo32 + 8, kTwo32 + 64, kTwo32 + 4096}) {
        INFO(bytes);
        CHECK(shm.chunk_bytes(bytes) == ShmComm::kSlotBytes);
        CHECK(shm.inline_slot(bytes) == 0);
    }

    // Staging: whole elements per segment, and the segments of a vector past 2^32 tile it exactly.
    CHECK(staging_segment_bytes(std::size_t(1) << 33, 3) == (std::size_t(1) << 33) / 3 * 3);
    CHECK(staging_segment_bytes(0, kTwo32 + 1) == kTwo32 + 1); // at least one element
    DeferredHostCopier copier;
    const std::size_t bytes = kTwo32 + 3, seg = std::size_t(1) << 20;
    std::size_t next = 0, segments = 0;
    bool tiled = true;
    stage_segments(copier, nullptr, nullptr, bytes, seg, [&](std::byte*, std::size_t offset, std::size_t length) {
        tiled = tiled && offset == next && length == std::min(seg, bytes - offset);
        next = offset + length;
        ++segments;
    });
    CHECK(tiled);
    CHECK(next == bytes);
    CHECK(segments == (bytes + seg - 1) / seg);
}

// ---- every algorithm's real schedule ---------------------------------------------------------

TEST_CASE("large counts: every messaging algorithm's schedule stays in its buffers, pairs up and covers its "
          "result past 2^31 and 2^32 bytes",
          "[large_counts]")
{
    std::size_t runs = 0;
    for (const Algorithm& a : all_algorithms()) {
        if (a.collective == Collective::barrier) continue;
        for (const Case& k : cases_of(a.collective)) {
            const auto nodes = two_nodes(k.ranks);
            if (!cannot_run(a, k, *nodes).empty()) continue;
            INFO(a.name << ": " << k.text());
            CHECK(run_ledgers(a, k) == "");
            ++runs;
        }
    }
    CHECK(runs > 200);
}

TEST_CASE("large counts: the ledger sees a block offset cut to 32 bits", "[large_counts]")
{
    // The checks have teeth: a schedule that sends block 1 from its offset mod 2^32 reads a range
    // its receiver never wrote, and leaves a hole in the result.
    struct Cut {
        static void allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args)
        {
            const BlockOffsets blocks(args.bytes);
            auto* out = static_cast<std::byte*>(args.recvbuf);
            const int r = net.rank(), other = 1 - r;
            if (!args.in_place()) mem.copy(out + blocks.begin(r), args.sendbuf, blocks.length(r));
            const auto cut = [&](int b) { return std::size_t(std::uint32_t(blocks.begin(b))); };
            net.post_recv(other, out + cut(other), blocks.length(other));
            net.post_send(other, out + cut(r), blocks.length(r));
            net.wait_all();
        }
    };
    const Algorithm cut{"cut", Collective::allgather, "", "", {}, &Cut::allgather};
    const std::string failed = run_ledgers(cut, Case{Collective::allgather, 2, 1, kTwo32 + 5});
    CHECK_THAT(failed, Catch::Matchers::ContainsSubstring("is not all written"));
}

// Segments of the vector, and pieces of each block (staging.hpp), at offsets past 2^32 within a
// block as well as within the buffer.
TEST_CASE("large counts: staged calls (device buffers) tile buffers past 2^32 bytes exactly", "[large_counts]")
{
    struct Staged {
        Collective coll;
        const char* algorithm;
        Case k;
    };
    for (const Staged& s : std::vector<Staged>{
             {Collective::allreduce, "ring", Case{Collective::allreduce, 2, 1, kTwo32 + 5}},
             {Collective::allreduce, "ring", Case{Collective::allreduce, 3, 8, (kTwo32 >> 3) + 3}},
             {Collective::bcast, "binomial", Case{Collective::bcast, 3, 1, kTwo32 + 7, {}, {}, 1}},
             {Collective::reduce, "binomial", Case{Collective::reduce, 2, 1, kTwo32 + 5, {}, {}, 1}},
             {Collective::reduce_scatter_block, "ring", Case{Collective::reduce_scatter_block, 2, 1, kTwo32 + 3}},
             {Collective::reduce_scatter_block, "ring", Case{Collective::reduce_scatter_block, 2, 4, kTwo31 + 1}},
             {Collective::reduce_scatter, "ring",
              Case{Collective::reduce_scatter, 3, 1, 0, [](int i) { return i == 1 ? 3 * kTwo31 + 1 : 7; }}},
             {Collective::allgather, "ring", Case{Collective::allgather, 2, 1, kTwo32 + 3}},
             {Collective::allgatherv, "ring",
              Case{Collective::allgatherv, 3, 1, 0, [](int i) { return i == 0 ? 3 * kTwo31 + 1 : kTwo31 + 5; }}},
             {Collective::gather, "linear", Case{Collective::gather, 3, 1, kTwo31 + 3, {}, {}, 2}},
             {Collective::scatter, "linear", Case{Collective::scatter, 2, 1, kTwo32 + 3, {}, {}, 1}},
             {Collective::alltoall, "pairwise", Case{Collective::alltoall, 2, 1, kTwo32 + 5}},
         }) {
        INFO(s.algorithm << ": " << s.k.text());
        CHECK(run_staged_ledgers(algo(s.coll, s.algorithm), s.k) == "");
    }
}
