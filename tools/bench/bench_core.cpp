// bench_core (bench_core.hpp): one collective call, checked and timed, and the small MPI helpers
// of the tools that time collectives.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include "mpi_call.hpp"

#include "bench_core.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <thread>

namespace loom::bench {

// ---- small MPI and text helpers ------------------------------------------------------------

double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void sleeping_barrier()
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    int done = 0;
    while (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
}

// The bench's own bookkeeping between timed runs goes point to point: a collective here would
// be one more call of the collective under test (MPI_Gather, MPI_Scatter) in loom's counters.
constexpr int kBookkeepingTag = 4242;

std::vector<double> gather_to_root(double value, int rank, int size)
{
    std::vector<double> all(rank == 0 ? std::size_t(size) : 1, value);
    if (rank != 0) {
        MPI_Send(&value, 1, MPI_DOUBLE, 0, kBookkeepingTag, MPI_COMM_WORLD);
        return all;
    }
    for (int r = 1; r < size; ++r)
        MPI_Recv(&all[std::size_t(r)], 1, MPI_DOUBLE, r, kBookkeepingTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return all;
}

double max_over_ranks(double value, int rank, int size)
{
    const auto all = gather_to_root(value, rank, size);
    return rank == 0 ? *std::max_element(all.begin(), all.end()) : 0;
}

long from_root(long value, int size)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int r = 1; r < size; ++r) MPI_Send(&value, 1, MPI_LONG, r, kBookkeepingTag, MPI_COMM_WORLD);
        return value;
    }
    long mine = 0;
    MPI_Recv(&mine, 1, MPI_LONG, 0, kBookkeepingTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return mine;
}

int count_nodes(int rank, int size, int* max_per_node)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    std::vector<char> all(rank == 0 ? std::size_t(size) * MPI_MAX_PROCESSOR_NAME : 1);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    std::map<std::string, int> names;
    if (rank == 0)
        for (int r = 0; r < size; ++r) {
            const char* p = all.data() + std::size_t(r) * MPI_MAX_PROCESSOR_NAME;
            ++names[std::string(p, strnlen(p, MPI_MAX_PROCESSOR_NAME))];
        }
    int most = 0;
    for (const auto& [name, n] : names) most = std::max(most, n);
    if (max_per_node != nullptr) *max_per_node = int(from_root(long(most), size));
    return int(from_root(long(names.size()), size));
}

std::optional<unsigned long long> read_cvar(const std::string& name)
{
    int provided, index, count;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return std::nullopt;
    std::optional<unsigned long long> result;
    MPI_Datatype type;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_index(name.c_str(), &index) == MPI_SUCCESS &&
        MPI_T_cvar_get_info(index, nullptr, nullptr, nullptr, &type, nullptr, nullptr, nullptr, nullptr, nullptr) ==
            MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
        alignas(8) unsigned char raw[16] = {};
        if (count == 1 && MPI_T_cvar_read(handle, raw) == MPI_SUCCESS) {
            if (type == MPI_INT)
                result = (unsigned long long)*reinterpret_cast<int*>(raw);
            else if (type == MPI_UNSIGNED)
                result = *reinterpret_cast<unsigned*>(raw);
            else if (type == MPI_UNSIGNED_LONG)
                result = *reinterpret_cast<unsigned long*>(raw);
            else if (type == MPI_UNSIGNED_LONG_LONG)
                result = *reinterpret_cast<unsigned long long*>(raw);
        }
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return result;
}

std::string now_text()
{
    char buf[64];
    const std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&t));
    return buf;
}

std::string cpu_name()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        std::string name = line.substr(line.find(':') + 2);
        std::replace(name.begin(), name.end(), '#', ' ');
        return name;
    }
    return "unknown CPU";
}

std::string host_name()
{
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

// ---- one collective call -------------------------------------------------------------------

// Every collective of the table (collectives.def) has its call below; the neighbourhood
// collectives run on the topology set_topology names.
bool can_call(Collective c) { return static_cast<int>(c) >= 0 && static_cast<int>(c) < kCollectiveCount; }

namespace {
const BenchTopology* neighbourhood = nullptr;
} // namespace

void set_topology(const BenchTopology* t) { neighbourhood = t; }
const BenchTopology* topology() { return neighbourhood; }

// By the collective's layout, in units of doubles (reductions) or bytes.
std::optional<Case> make_case(Collective c, std::size_t nominal, int ranks)
{
    if (!can_call(c)) return std::nullopt;
    const std::size_t P = std::size_t(ranks), unit = reduces(c) ? sizeof(double) : 1;
    switch (layout(c)) {
    case Layout::vector:
        return nominal >= unit ? std::optional(Case{c, nominal, nominal / unit * unit, nominal / unit}) : std::nullopt;
    case Layout::split:
    case Layout::gathered:
    case Layout::scattered: {
        const std::size_t block = nominal / P / unit; // units per rank
        return block ? std::optional(Case{c, nominal, block * unit * P, block}) : std::nullopt;
    }
    case Layout::per_peer:
    case Layout::per_peer_v: {
        const std::size_t block = nominal / P / unit; // units to each rank: loom's message size
        return block ? std::optional(Case{c, nominal, block * unit, block}) : std::nullopt;
    }
    case Layout::none: return Case{c, 0, 0, 0};
    // A block per neighbour, in bytes; only on a topology (set_topology). The blocks lie end to end
    // at MPI's int displacements (neighbour_args): a block whose last neighbour's would start past
    // INT_MAX cannot be called so (nor timed: loom-bench makes no MPI-4 _c calls), and is skipped
    // rather than called with an overflowed int.
    case Layout::neighbour_gathered:
    case Layout::per_neighbour: {
        if (!neighbourhood || !nominal) return std::nullopt;
        const std::size_t degree = neighbourhood->degree();
        if (degree > 1 && nominal > std::size_t(INT_MAX) / (degree - 1)) return std::nullopt;
        return Case{c, nominal, nominal, nominal};
    }
    }
    return std::nullopt;
}

namespace {
// Equal blocks of n for the v-collectives, rebuilt only when the block changes.
void equal_blocks(Buffers& b, int n)
{
    int P = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (b.counts.size() == std::size_t(P) && b.counts[0] == n) return; // (a neighbour call's lists differ)
    b.counts.assign(std::size_t(P), n);
    b.types.assign(std::size_t(P), MPI_BYTE); // alltoallw: displacements in bytes, as here
    b.displs.resize(std::size_t(P));
    for (int q = 0; q < P; ++q) b.displs[std::size_t(q)] = q * n;
}

// A case's arguments: doubles summed (reductions) or bytes (data movement), root 0, equal
// blocks for per-rank counts (made by equal_blocks); each signature class takes its own
// (mpi_call.hpp). bcast's buffer is the receive buffer.
loom::tools::CallArgs neighbour_args(const Case& k, Buffers& b);

loom::tools::CallArgs call_args(const Case& k, Buffers& b)
{
    const int n = int(k.count);
    if (counts(k.collective) == Counts::per_neighbour) return neighbour_args(k, b);
    if (per_rank_counts(k.collective)) equal_blocks(b, n);
    const MPI_Datatype type = reduces(k.collective) ? MPI_DOUBLE : MPI_BYTE;
    return {.sbuf = b.send.data(), .rbuf = b.recv.data(), .count = n, .scount = n, .rcount = n, .type = type,
            .stype = type, .rtype = type, .op = MPI_SUM, .root = 0, .scounts = b.counts.data(),
            .sdispls = b.displs.data(), .rcounts = b.counts.data(), .rdispls = b.displs.data(),
            .stypes = b.types.data(), .rtypes = b.types.data(), .comm = MPI_COMM_WORLD};
}

// A neighbourhood call's arguments: n bytes to and from every neighbour, blocks end to end in
// neighbour order (one list serves both sides: a topology here has as many sources as
// destinations), on the topology's communicator.
loom::tools::CallArgs neighbour_args(const Case& k, Buffers& b)
{
    const int n = int(k.count), degree = int(neighbourhood->degree());
    if (b.counts.size() != std::size_t(degree) || (degree && b.counts[0] != n)) {
        b.counts.assign(std::size_t(degree), n);
        b.displs.resize(std::size_t(degree));
        b.byte_displs.resize(std::size_t(degree));
        for (int q = 0; q < degree; ++q) b.displs[std::size_t(q)] = q * n, b.byte_displs[std::size_t(q)] = MPI_Aint(q) * n;
        b.types.assign(std::size_t(degree), MPI_BYTE);
    }
    loom::tools::CallArgs a{.sbuf = b.send.data(), .rbuf = b.recv.data(), .count = n, .scount = n, .rcount = n,
                            .type = MPI_BYTE, .stype = MPI_BYTE, .rtype = MPI_BYTE, .scounts = b.counts.data(),
                            .sdispls = b.displs.data(), .rcounts = b.counts.data(), .rdispls = b.displs.data(),
                            .stypes = b.types.data(), .rtypes = b.types.data(), .comm = neighbourhood->comm};
    a.sadispls = a.radispls = b.byte_displs.data();
    return a;
}
} // namespace

namespace {
bool nonblocking_calls = false, persistent_calls = false;
} // namespace

void set_nonblocking(bool on) { nonblocking_calls = on; }
bool nonblocking() { return nonblocking_calls; }
void set_persistent(bool on)
{
    persistent_calls = on;
    if (on) nonblocking_calls = true;
}
bool persistent() { return persistent_calls; }

namespace {
// The case's non-blocking request, started; or, persistent, made and inactive until MPI_Start.
void make_request(const Case& k, Buffers& b, MPI_Request* r, bool persistent);

// The request the timed calls of a case start: a persistent one made once per run, or none
// (each call makes its own).
struct RunRequest {
    MPI_Request request = MPI_REQUEST_NULL;
    RunRequest(const Case& k, Buffers& b)
    {
        if (persistent_calls) make_request(k, b, &request, true);
    }
    ~RunRequest()
    {
        if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    }
    // Starts one call into *r (the persistent request, or a new non-blocking one).
    void start(const Case& k, Buffers& b, MPI_Request* r)
    {
        if (persistent_calls) {
            MPI_Start(&request);
            *r = request;
        } else {
            start_once(k, b, r);
        }
    }
    void wait(MPI_Request* r) { MPI_Wait(persistent_calls ? &request : r, MPI_STATUS_IGNORE); }
};
} // namespace

void start_once(const Case& k, Buffers& b, MPI_Request* r) { make_request(k, b, r, false); }

namespace {
void make_request(const Case& k, Buffers& b, MPI_Request* r, bool persistent)
{
    using loom::tools::Form;
    loom::tools::start_call(k.collective, persistent ? Form::persistent : Form::nonblocking, call_args(k, b), r);
}
} // namespace

void call_once(const Case& k, Buffers& b)
{
    if (nonblocking_calls) {
        RunRequest run(k, b);
        MPI_Request r;
        run.start(k, b, &r);
        run.wait(&r);
        return;
    }
    loom::tools::call(k.collective, loom::tools::Form::blocking, call_args(k, b));
}

namespace {
unsigned char pattern(std::size_t rank, std::size_t i) { return (unsigned char)(rank * 31 + i * 7 + 1); }
// What rank `from` sends rank `to` at byte i of an alltoall block.
unsigned char pattern(std::size_t from, std::size_t to, std::size_t i)
{
    return (unsigned char)(from * 31 + to * 13 + i * 7 + 1);
}
} // namespace

namespace {
// A neighbourhood call checked: rank r sends pattern(r, i, byte) in its send block i (the
// allgathers: pattern(r, 0, byte) to all), so receive block j must hold what its source put in
// the block that matches it (bench_topology.hpp's sender_block); an MPI_PROC_NULL block keeps
// what was there.
bool neighbour_call_and_verify(const Case& k, Buffers& b, int rank)
{
    const auto& t = *neighbourhood;
    const std::size_t n = k.count, degree = t.degree();
    const bool gathered = layout(k.collective) == Layout::neighbour_gathered;
    for (std::size_t i = 0; i < (gathered ? 1 : degree); ++i)
        for (std::size_t x = 0; x < n; ++x) b.send_bytes()[i * n + x] = pattern(std::size_t(rank), i, x);
    std::fill(b.recv_bytes(), b.recv_bytes() + degree * n, 0xA5);
    call_once(k, b);
    for (std::size_t j = 0; j < degree; ++j) {
        const int source = t.neighbours[j];
        const std::size_t from = source == kNoNeighbour ? 0 : gathered ? 0 : sender_block(t.spec, rank, t.neighbours, j);
        for (std::size_t x = 0; x < n; ++x) {
            const unsigned char want = source == kNoNeighbour ? 0xA5 : pattern(std::size_t(source), from, x);
            if (b.recv_bytes()[j * n + x] != want) return false;
        }
    }
    return true;
}
} // namespace

bool call_and_verify(const Case& k, Buffers& b, int rank, int size)
{
    if (counts(k.collective) == Counts::per_neighbour) return neighbour_call_and_verify(k, b, rank);
    const std::size_t P = std::size_t(size), r = std::size_t(rank);
    const double triangle = double(size) * (size + 1) / 2;
    std::fill(b.recv.begin(), b.recv.end(), -1.0);
    const Collective c = k.collective;
    // By the collective's layout (collectives.def); reductions are sums of doubles, the root is 0.
    if (reduces(c)) {
        // send[i] = (rank + 1) (1 + i mod 5): every sum is triangle (1 + i mod 5), exact in doubles
        for (std::size_t i = 0; i < b.send.size(); ++i) b.send[i] = double(rank + 1) * double(1 + i % 5);
    } else if (layout(c) == Layout::gathered) {
        for (std::size_t i = 0; i < k.count; ++i) b.send_bytes()[i] = pattern(r, i);
    } else if (layout(c) == Layout::per_peer || layout(c) == Layout::per_peer_v) {
        for (std::size_t q = 0; q < P; ++q)
            for (std::size_t i = 0; i < k.count; ++i) b.send_bytes()[q * k.count + i] = pattern(r, q, i);
    } else if (layout(c) == Layout::scattered && rank == 0) { // scatter's root: block q to rank q
        for (std::size_t q = 0; q < P; ++q)
            for (std::size_t i = 0; i < k.count; ++i) b.send_bytes()[q * k.count + i] = pattern(q, i);
    } else if (layout(c) == Layout::vector && rank == 0) { // bcast's root
        for (std::size_t i = 0; i < k.count; ++i) b.recv_bytes()[i] = pattern(0, i);
    }
    call_once(k, b);
    if (!has_result(c, rank, 0)) return true; // none here: reduce's and gather's others, exscan's rank 0
    switch (layout(c)) {
    case Layout::vector:
        if (reduces(c)) {
            // scan: ranks 0..rank, (rank + 1)(rank + 2) / 2 (1 + i mod 5); else every rank's
            const double sum = c == Collective::scan     ? double(rank + 1) * (rank + 2) / 2
                               : c == Collective::exscan ? double(rank) * (rank + 1) / 2
                                                         : triangle;
            for (std::size_t i = 0; i < k.count; ++i)
                if (b.recv[i] != sum * double(1 + i % 5)) return false;
            return true;
        }
        for (std::size_t i = 0; i < k.count; ++i)
            if (b.recv_bytes()[i] != pattern(0, i)) return false;
        return true;
    case Layout::split:
        for (std::size_t j = 0; j < k.count; ++j)
            if (b.recv[j] != triangle * double(1 + (r * k.count + j) % 5)) return false;
        return true;
    case Layout::gathered:
        for (std::size_t q = 0; q < P; ++q)
            for (std::size_t i = 0; i < k.count; ++i)
                if (b.recv_bytes()[q * k.count + i] != pattern(q, i)) return false;
        return true;
    case Layout::per_peer:
    case Layout::per_peer_v:
        for (std::size_t q = 0; q < P; ++q)
            for (std::size_t i = 0; i < k.count; ++i)
                if (b.recv_bytes()[q * k.count + i] != pattern(q, r, i)) return false;
        return true;
    case Layout::scattered:
        for (std::size_t i = 0; i < k.count; ++i)
            if (b.recv_bytes()[i] != pattern(r, i)) return false;
        return true;
    case Layout::none:
    case Layout::neighbour_gathered: // neighbour_call_and_verify
    case Layout::per_neighbour: return true;
    }
    return true;
}

// ---- timing ------------------------------------------------------------------------------

double timed_run(const Case& k, Buffers& b, int rank, int size, long calls)
{
    if (persistent_calls) {
        RunRequest run(k, b); // made before the clock starts
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (long i = 0; i < calls; ++i) {
            MPI_Request r;
            run.start(k, b, &r);
            run.wait(&r);
        }
        return max_over_ranks((MPI_Wtime() - t0) / double(calls), rank, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long i = 0; i < calls; ++i) call_once(k, b);
    return max_over_ranks((MPI_Wtime() - t0) / double(calls), rank, size);
}

double timed_overlap_run(const Case& k, Buffers& b, int rank, int size, long calls, double compute)
{
    RunRequest run(k, b); // a persistent request is made before the clock starts
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (long i = 0; i < calls; ++i) {
        MPI_Request r;
        run.start(k, b, &r);
        const double until = MPI_Wtime() + compute;
        volatile double sink = 0;
        while (MPI_Wtime() < until) sink = sink + 1.0; // computation: no MPI call progresses anything
        run.wait(&r);
    }
    return max_over_ranks((MPI_Wtime() - t0) / double(calls), rank, size);
}

long plan_iterations(const Case& k, Buffers& b, int rank, int size, const IterationPlan& plan, long& calls)
{
    // Only rank 0 knows the estimate (max_over_ranks); from_root gives every rank its count.
    auto iterations_for = [&](double seconds, double per_call) {
        return from_root(long(std::clamp(seconds / std::max(per_call, 1e-7), double(plan.min_iterations),
                                         double(plan.max_iterations))),
                         size);
    };
    const int warmup = 2;
    double estimate = timed_run(k, b, rank, size, warmup);
    calls += warmup;
    if (plan.refine) {
        const long more = from_root(long(std::clamp(plan.target_seconds / 10 / std::max(estimate, 1e-7), 1.0,
                                                    double(plan.max_iterations) / 10 + 1)),
                                    size);
        estimate = timed_run(k, b, rank, size, more);
        calls += more;
    }
    return iterations_for(plan.target_seconds, estimate);
}

Timing time_case(const Case& k, Buffers& b, int rank, int size, int repeats, const IterationPlan& plan)
{
    Timing t;
    t.iterations = plan_iterations(k, b, rank, size, plan, t.calls);
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {
        runs.push_back(timed_run(k, b, rank, size, t.iterations));
        t.calls += t.iterations;
    }
    t.seconds = rank == 0 ? median(runs) : 0;
    return t;
}

} // namespace loom::bench
