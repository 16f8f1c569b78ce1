// shm_check's calls: each collective run with its inputs, checked against references this
// program computes (never through MPI), and loom's MPI_T counters showing loom served it;
// shm (or with --family cma, cma where it exists) forced for every collective through MPI_T.
#include "shm_check.hpp"

#include "call_model.hpp"
#include "loom_mpi_t.hpp"
#include "mpi_call.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shm_check {

// ---- loom through MPI_T ----

namespace {
loom::tools::LoomCounters counters[loom::kCollectiveCount];
std::string name(Coll c) { return std::string(loom::to_string(c)); }
} // namespace

std::string family = "shm";

std::string forced_for(Coll c)
{
    std::string forced;
    for (const loom::Algorithm& a : loom::all_algorithms())
        if (a.collective == c && (a.name == family || (a.name == "shm" && forced.empty()))) forced = a.name;
    return forced;
}

const std::vector<Coll>& tested()
{
    static const std::vector<Coll> list = [] {
        std::vector<Coll> l;
        for (Coll c : loom::all_collectives())
            if (!forced_for(c).empty()) l.push_back(c);
        return l;
    }();
    return list;
}

void open_counters()
{
    for (Coll c : tested())
        if (!counters[int(c)].open(name(c))) {
            std::fprintf(stderr, "shm_check FAIL: loom's MPI_T counters for %s are missing: loom is not loaded\n",
                         name(c).c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
}

void force_shm()
{
    for (Coll c : tested())
        if (!loom::tools::force_algorithm(loom::to_string(c), forced_for(c))) {
            std::fprintf(stderr, "shm_check FAIL: cannot force %s for %s through MPI_T\n", forced_for(c).c_str(),
                         name(c).c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
}

namespace {

// Runs `call` and checks that loom served it (once, if it reaches loom: Open MPI answers
// calls on one rank, and some calls of count 0, itself) and declined nothing.
template <class F>
void counted(Comm& c, Coll coll, bool reaches_loom, const std::string& what, F&& call)
{
    auto& k = counters[int(coll)];
    const auto served0 = k.served(), declined0 = k.declined();
    call();
    ++cases;
    const auto served = k.served() - served0, declined = k.declined() - declined0;
    const unsigned long long want = reaches_loom && c.size >= 2;
    if (served != want || declined != 0)
        fail(what + ": loom served " + std::to_string(served) + " and declined " + std::to_string(declined) +
             " calls, expected " + std::to_string(want) + " and 0");
    if (want != 0) c.mapped = true;
}

// ---- inputs and references (computed here, never by Open MPI) ----

int ival(int salt, int r, std::size_t i)
{
    const unsigned h = unsigned(salt) * 2654435761u + unsigned(r) * 40503u + unsigned(i) * 97u + unsigned(i >> 7);
    return int(h % 2001u) - 1000;
}
std::uint8_t bval(int salt, int r, std::size_t i)
{
    return std::uint8_t(unsigned(salt) * 131u + unsigned(r) * 29u + unsigned(i) * 7u + unsigned(i >> 9));
}

enum Kind { kIntSum, kIntMax, kDoubleSum, kKindCount };
const char* const kKindName[kKindCount] = {"int sum", "int max", "double sum"};

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<int>()
{
    return MPI_INT;
}
template <>
MPI_Datatype mpi_type<double>()
{
    return MPI_DOUBLE;
}

template <class T>
T reference(MPI_Op op, int salt, int size, std::size_t i)
{
    T acc = T(ival(salt, 0, i));
    for (int q = 1; q < size; ++q) {
        const T v = T(ival(salt, q, i));
        acc = op == MPI_MAX ? std::max(acc, v) : acc + v; // small integers: exact in double
    }
    return acc;
}

// Element counts: 0, 1, odd, exactly one 32 KiB chunk of ints, just over one chunk, over two
// chunks (> 64 KiB), larger. Byte counts (bcast, allgather) likewise.
const std::size_t kCounts[] = {0, 1, 7, 1001, 8192, 8193, 16385, 20001};
const std::size_t kBytes[] = {0, 1, 7, 4097, 32768, 32769, 65537, 98305};
static_assert(kSizeClasses == int(sizeof kCounts / sizeof kCounts[0]));
static_assert(kSizeClasses == int(sizeof kBytes / sizeof kBytes[0]));

std::string describe(const Comm& c, const Case& k, const char* type)
{
    return name(k.coll) + " on " + c.name + " (size " + std::to_string(c.size) + "), " +
           std::to_string(std::string_view(type) == "byte" ? kBytes[k.size_class] : kCounts[k.size_class]) +
           " x " + type + (k.in_place ? ", in place" : "") + ", salt " + std::to_string(k.salt);
}

template <class T>
void run_allreduce(Comm& c, const Case& k, MPI_Op op, const char* type)
{
    const std::size_t n = kCounts[k.size_class];
    std::vector<T> send(n), recv(n + 1, T(-77));
    for (std::size_t i = 0; i < n; ++i) send[i] = T(ival(k.salt, c.rank, i));
    if (k.in_place) std::copy(send.begin(), send.end(), recv.begin());
    const std::string what = describe(c, k, type);
    counted(c, Coll::allreduce, n != 0, what, [&] {
        MPI_Allreduce(k.in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(n), mpi_type<T>(), op, c.comm);
    });
    for (std::size_t i = 0; i < n; ++i)
        if (recv[i] != reference<T>(op, k.salt, c.size, i)) return fail(what + ": wrong element " + std::to_string(i));
    if (recv[n] != T(-77)) fail(what + ": wrote past the end");
    for (std::size_t i = 0; i < n && !k.in_place; ++i)
        if (send[i] != T(ival(k.salt, c.rank, i))) return fail(what + ": changed the send buffer");
}

template <class T>
void run_reduce(Comm& c, const Case& k, MPI_Op op, const char* type)
{
    const std::size_t n = kCounts[k.size_class];
    const int root = k.salt % c.size;
    const bool root_in_place = k.in_place && c.rank == root;
    std::vector<T> send(n), recv(n + 1, T(-77));
    for (std::size_t i = 0; i < n; ++i) send[i] = T(ival(k.salt, c.rank, i));
    if (root_in_place) std::copy(send.begin(), send.end(), recv.begin());
    const std::string what = describe(c, k, type) + ", root " + std::to_string(root);
    counted(c, Coll::reduce, n != 0, what, [&] {
        MPI_Reduce(root_in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(n), mpi_type<T>(), op, root, c.comm);
    });
    if (c.rank == root) {
        for (std::size_t i = 0; i < n; ++i)
            if (recv[i] != reference<T>(op, k.salt, c.size, i))
                return fail(what + ": wrong element " + std::to_string(i) + " at the root");
        if (recv[n] != T(-77)) fail(what + ": wrote past the end");
    }
    for (std::size_t i = 0; i < n && !root_in_place; ++i)
        if (send[i] != T(ival(k.salt, c.rank, i))) return fail(what + ": changed the send buffer");
}

template <class T>
void run_reduce_scatter_block(Comm& c, const Case& k, MPI_Op op, const char* type)
{
    const std::size_t n = kCounts[k.size_class], total = n * std::size_t(c.size);
    std::vector<T> send(total), recv(k.in_place ? total : n + 1, T(-77));
    for (std::size_t i = 0; i < total; ++i) send[i] = T(ival(k.salt, c.rank, i));
    if (k.in_place) recv = send;
    const std::string what = describe(c, k, type);
    counted(c, Coll::reduce_scatter_block, n != 0, what, [&] {
        MPI_Reduce_scatter_block(k.in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(n), mpi_type<T>(), op,
                                 c.comm);
    });
    const std::size_t first = std::size_t(c.rank) * n;
    for (std::size_t i = 0; i < n; ++i)
        if (recv[i] != reference<T>(op, k.salt, c.size, first + i))
            return fail(what + ": wrong element " + std::to_string(i) + " of my block");
    if (!k.in_place && recv[n] != T(-77)) fail(what + ": wrote past my block");
    for (std::size_t i = 0; i < total && !k.in_place; ++i)
        if (send[i] != T(ival(k.salt, c.rank, i))) return fail(what + ": changed the send buffer");
}

void run_bcast(Comm& c, const Case& k)
{
    const std::size_t n = kBytes[k.size_class];
    const int root = (k.salt / 3) % c.size;
    std::vector<std::uint8_t> buf(n + 1, 0xEE);
    buf[n] = 0x5A;
    if (c.rank == root)
        for (std::size_t i = 0; i < n; ++i) buf[i] = bval(k.salt, root, i);
    const std::string what = describe(c, k, "byte") + ", root " + std::to_string(root);
    counted(c, Coll::bcast, n != 0, what, [&] { MPI_Bcast(buf.data(), int(n), MPI_BYTE, root, c.comm); });
    for (std::size_t i = 0; i < n; ++i)
        if (buf[i] != bval(k.salt, root, i)) return fail(what + ": wrong byte " + std::to_string(i));
    if (buf[n] != 0x5A) fail(what + ": wrote past the end");
}

void run_allgather(Comm& c, const Case& k)
{
    const std::size_t n = kBytes[k.size_class], P = std::size_t(c.size);
    std::vector<std::uint8_t> send(n), recv(n * P + 1, 0xEE);
    recv[n * P] = 0x5A;
    for (std::size_t i = 0; i < n; ++i) send[i] = bval(k.salt, c.rank, i);
    if (k.in_place) std::copy(send.begin(), send.end(), recv.begin() + std::ptrdiff_t(std::size_t(c.rank) * n));
    const std::string what = describe(c, k, "byte");
    counted(c, Coll::allgather, n != 0, what, [&] {
        MPI_Allgather(k.in_place ? MPI_IN_PLACE : send.data(), int(n), MPI_BYTE, recv.data(), int(n), MPI_BYTE, c.comm);
    });
    for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < n; ++i)
            if (recv[q * n + i] != bval(k.salt, int(q), i))
                return fail(what + ": wrong byte " + std::to_string(i) + " of rank " + std::to_string(q) + "'s block");
    if (recv[n * P] != 0x5A) fail(what + ": wrote past the end");
}

void run_alltoall(Comm& c, const Case& k)
{
    // Block j of rank r's input is bval(salt, r, j n + i): rank r receives from q bytes j = r of q's.
    const std::size_t n = kBytes[k.size_class], P = std::size_t(c.size), me = std::size_t(c.rank);
    std::vector<std::uint8_t> send(n * P), recv(n * P + 1, 0xEE);
    recv[n * P] = 0x5A;
    for (std::size_t i = 0; i < n * P; ++i) send[i] = bval(k.salt, c.rank, i);
    if (k.in_place) std::copy(send.begin(), send.end(), recv.begin());
    const std::string what = describe(c, k, "byte");
    counted(c, Coll::alltoall, n != 0, what, [&] {
        MPI_Alltoall(k.in_place ? MPI_IN_PLACE : send.data(), int(n), MPI_BYTE, recv.data(), int(n), MPI_BYTE, c.comm);
    });
    for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < n; ++i)
            if (recv[q * n + i] != bval(k.salt, int(q), me * n + i))
                return fail(what + ": wrong byte " + std::to_string(i) + " of rank " + std::to_string(q) + "'s block");
    if (recv[n * P] != 0x5A) fail(what + ": wrote past the end");
    for (std::size_t i = 0; i < n * P && !k.in_place; ++i)
        if (send[i] != bval(k.salt, c.rank, i)) return fail(what + ": changed the send buffer");
}

void run_allgatherv(Comm& c, const Case& k)
{
    // Irregular counts (every third rank 0), at displacements with gaps of 2 (odd salts) or dense.
    const std::size_t base = kCounts[k.size_class];
    const bool gaps = k.salt % 2 != 0;
    const int P = c.size;
    std::vector<int> counts(static_cast<std::size_t>(P)), displs(static_cast<std::size_t>(P));
    int next = 0;
    for (int q = 0; q < P; ++q) {
        counts[std::size_t(q)] = base == 0 || q % 3 == 2 ? 0 : int(base) + 3 * q;
        displs[std::size_t(q)] = next;
        next += counts[std::size_t(q)] + (gaps ? 2 : 0);
    }
    const std::size_t mine = std::size_t(counts[std::size_t(c.rank)]);
    std::vector<int> send(mine), recv(std::size_t(next) + 1, -77);
    for (std::size_t i = 0; i < mine; ++i) send[i] = ival(k.salt, c.rank, i);
    if (k.in_place) std::copy(send.begin(), send.end(), recv.begin() + displs[std::size_t(c.rank)]);
    const std::string what = describe(c, k, "int") + (gaps ? ", gaps" : ", dense");
    // Open MPI 4.1's MPI layer returns early when every count is 0.
    counted(c, Coll::allgatherv, base != 0, what, [&] {
        MPI_Allgatherv(k.in_place ? MPI_IN_PLACE : send.data(), int(mine), MPI_INT, recv.data(), counts.data(),
                       displs.data(), MPI_INT, c.comm);
    });
    for (int q = 0; q < P; ++q) {
        const std::size_t d = std::size_t(displs[std::size_t(q)]), m = std::size_t(counts[std::size_t(q)]);
        for (std::size_t i = 0; i < m; ++i)
            if (recv[d + i] != ival(k.salt, q, i))
                return fail(what + ": wrong element " + std::to_string(i) + " of rank " + std::to_string(q));
        if (gaps && (recv[d + m] != -77 || recv[d + m + 1] != -77)) return fail(what + ": wrote into a gap");
    }
    if (recv.back() != -77) fail(what + ": wrote past the end");
}

void run_barrier(Comm& c, const Case& k)
{
    counted(c, Coll::barrier, true, describe(c, k, "-"), [&] { MPI_Barrier(c.comm); });
}

// Any other collective, made from its row (call_model.hpp): ints, summed or maxed, at least
// one per block (a count of 0 may end in Open MPI's MPI layer on some ranks and not others),
// v-blocks spread by the salt and apart with gaps on odd salts, the root chosen by the salt.
void run_from_row(Comm& c, const Case& k, MPI_Op op)
{
    const model::Spec spec{.collective = k.coll, .count = std::max(1, int(kCounts[k.size_class])), .type = MPI_INT,
                           .op = op, .root = k.salt % c.size, .in_place = k.in_place, .shift = k.salt % 3,
                           .gaps = k.salt % 2 != 0};
    model::Call call(spec, c.comm);
    call.fill(k.salt);
    const std::string what = c.name + " (size " + std::to_string(c.size) + "), " + spec.text() + ", salt " +
                             std::to_string(k.salt);
    counted(c, k.coll, true, what, [&] { loom::tools::call(k.coll, loom::tools::Form::blocking, call.args); });
    if (const std::string wrong = call.check(k.salt); !wrong.empty()) fail(c.name + ": " + wrong);
}

// The collectives with calls of their own here: element and byte kinds, gaps, guards past the end.
using Run = void (*)(Comm&, const Case&, MPI_Op, Kind);
template <template <class> class F>
Run by_kind()
{
    return [](Comm& c, const Case& k, MPI_Op op, Kind kind) {
        kind == kDoubleSum ? F<double>::run(c, k, op, kKindName[kind]) : F<int>::run(c, k, op, kKindName[kind]);
    };
}
template <class T>
struct Allreduce {
    static void run(Comm& c, const Case& k, MPI_Op op, const char* type) { run_allreduce<T>(c, k, op, type); }
};
template <class T>
struct Reduce {
    static void run(Comm& c, const Case& k, MPI_Op op, const char* type) { run_reduce<T>(c, k, op, type); }
};
template <class T>
struct ReduceScatterBlock {
    static void run(Comm& c, const Case& k, MPI_Op op, const char* type)
    {
        run_reduce_scatter_block<T>(c, k, op, type);
    }
};
const std::pair<Coll, Run> kOwnCalls[] = {
    {Coll::allreduce, by_kind<Allreduce>()},
    {Coll::reduce, by_kind<Reduce>()},
    {Coll::reduce_scatter_block, by_kind<ReduceScatterBlock>()},
    {Coll::bcast, [](Comm& c, const Case& k, MPI_Op, Kind) { run_bcast(c, k); }},
    {Coll::allgather, [](Comm& c, const Case& k, MPI_Op, Kind) { run_allgather(c, k); }},
    {Coll::allgatherv, [](Comm& c, const Case& k, MPI_Op, Kind) { run_allgatherv(c, k); }},
    {Coll::alltoall, [](Comm& c, const Case& k, MPI_Op, Kind) { run_alltoall(c, k); }},
    {Coll::barrier, [](Comm& c, const Case& k, MPI_Op, Kind) { run_barrier(c, k); }},
};

} // namespace

void run_case(Comm& c, const Case& k)
{
    const Kind kind = Kind(k.salt % kKindCount);
    const MPI_Op op = kind == kIntMax ? MPI_MAX : MPI_SUM;
    for (const auto& [coll, run] : kOwnCalls)
        if (coll == k.coll) return run(c, k, op, kind);
    run_from_row(c, k, op);
}

} // namespace shm_check
