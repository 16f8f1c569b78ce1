// large_count_check: calls of more than 2^31 bytes, and on Open MPI 6 of more than 2^31 elements,
// served by loom exactly (issue 58).
//
//   mpirun -np 2 large_count_check [--bytes N] [--algorithms COLL=A,B;COLL=...] [--skip-derived]
//
// Cases, each with loom's own choice ("loom") and every algorithm --algorithms names for its
// collective, forced through MPI_T:
//   derived  (every Open MPI)  allreduce (a user-defined sum: MPI_SUM is for predefined datatypes)
//            and bcast of N bytes as a count of a 1 MiB contiguous datatype of unsigned chars, allgatherv of blocks summing to N bytes
//            (counts in that datatype): int counts, byte sizes past 2^31;
//   _c       (MPI 4's bindings: Open MPI 6)  MPI_Allreduce_c and MPI_Bcast_c of N unsigned chars,
//            MPI_Allgatherv_c of blocks summing to N unsigned chars, MPI_Iallreduce_c: counts
//            past 2^31 reach loom as size_t, the per-rank arrays as 64-bit entries.
// N defaults to 2^31 + 4099 (with the derived datatype, rounded up to whole MiB). Every rank holds
// at most 2 N bytes of buffers at a time, freed between cases: at np 2 about 9 GB for the job,
// plus what the algorithm itself stages. loom's counters must show that loom served every call
// with an algorithm forced (a pass where Open MPI served proves nothing about loom); loom's own
// choice may hand a call on by a rule of its table. Results are checked byte by byte
// against a pattern this program computes, never by Open MPI. Prints one line per case and
// `large_count_check np=P: C cases, F failures`; exits 1 on any failure.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using loom::tools::LoomCounters;

int rank = 0, size = 1, cases = 0, failures = 0;

// Rank r's byte i: varies with i in every bit and with the rank.
inline unsigned char pattern(std::size_t i, int r)
{
    return static_cast<unsigned char>((i * 2654435761u >> 13) + std::size_t(r) * 29 + (i >> 24));
}

// The sum over every rank of pattern(i, r), modulo 256 (MPI_SUM of unsigned chars wraps).
inline unsigned char summed(std::size_t i)
{
    unsigned v = 0;
    for (int r = 0; r < size; ++r) v += pattern(i, r);
    return static_cast<unsigned char>(v);
}

// One case's verdict on every rank: a failure on any rank fails it everywhere.
void report(const std::string& name, const std::string& algorithm, bool ok_here, unsigned long long served,
            std::size_t first_bad)
{
    // loom's own choice may hand a size on by a rule of its table: its result is checked all the same.
    const bool must_serve = algorithm != "loom";
    int ok = ok_here && (served > 0 || !must_serve) ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ++cases;
    if (all) {
        if (rank == 0)
            std::printf("ok   %s [%s]%s\n", name.c_str(), algorithm.c_str(), served > 0 ? "" : " (handed on by a rule)");
        return;
    }
    ++failures;
    if (!ok_here)
        std::printf("FAIL %s [%s] rank %d: wrong byte at %zu\n", name.c_str(), algorithm.c_str(), rank, first_bad);
    else if (served == 0)
        std::printf("FAIL %s [%s] rank %d: loom did not serve the call (its counters)\n", name.c_str(),
                    algorithm.c_str(), rank);
    std::fflush(stdout);
}

// The first byte of buf[0..n) that differs from want(i), or n.
template <class Want>
std::size_t first_wrong(const unsigned char* buf, std::size_t n, Want want)
{
    for (std::size_t i = 0; i < n; ++i)
        if (buf[i] != want(i)) return i;
    return n;
}

std::unique_ptr<unsigned char[]> bytes(std::size_t n) { return std::unique_ptr<unsigned char[]>(new unsigned char[n]); }

// Runs `call` with `algorithm` forced for `collective` ("loom": loom's own choice) and returns
// how many calls loom served meanwhile, by its counters of `form` ("allreduce", "iallreduce").
template <class Call>
unsigned long long served_by_loom(const char* collective, const char* form, const std::string& algorithm, Call call)
{
    LoomCounters counters;
    if (!counters.open(form)) {
        std::fprintf(stderr, "large_count_check: loom's counters for %s are missing: is loom loaded?\n", form);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!loom::tools::force_algorithm(collective, algorithm == "loom" ? "" : algorithm)) {
        std::fprintf(stderr, "large_count_check: cannot force %s for %s\n", algorithm.c_str(), collective);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const unsigned long long before = counters.served();
    call();
    const unsigned long long served = counters.served() - before;
    loom::tools::force_algorithm(collective, "");
    return served;
}

// The blocks of an allgatherv of `total` units over the ranks: unequal (rank r gets about
// total (r + 1) / (P (P + 1) / 2)), summing to total, and their displacements.
void split(std::size_t total, std::vector<std::size_t>& counts, std::vector<std::size_t>& displs)
{
    counts.assign(std::size_t(size), 0);
    displs.assign(std::size_t(size), 0);
    const std::size_t weights = std::size_t(size) * std::size_t(size + 1) / 2;
    std::size_t given = 0;
    for (int r = 0; r < size; ++r) {
        counts[std::size_t(r)] = r == size - 1 ? total - given : total * std::size_t(r + 1) / weights;
        displs[std::size_t(r)] = given;
        given += counts[std::size_t(r)];
    }
}

// ---- the cases: `unit` bytes per element of `type` (1 MiB for the derived datatype, 1 for
// MPI_UNSIGNED_CHAR through the _c bindings), `n` elements ----

struct Way {
    const char* name;   // "derived" or "_c"
    MPI_Datatype type;  // the element
    std::size_t unit;   // its bytes
    std::size_t n;      // elements per call
    bool large_count;   // through MPI 4's _c bindings
    MPI_Op sum;         // MPI_SUM, or for the derived datatype (MPI defines MPI_SUM on predefined
                        // ones only) a user-defined sum of its unsigned chars
};

// The user-defined op of the derived datatype: inout += in, byte by byte, modulo 256.
void sum_of_bytes(void* in, void* inout, int* len, MPI_Datatype* type)
{
    int type_size = 0;
    MPI_Type_size(*type, &type_size);
    const std::size_t n = std::size_t(*len) * std::size_t(type_size);
    const auto* a = static_cast<const unsigned char*>(in);
    auto* b = static_cast<unsigned char*>(inout);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(b[i] + a[i]);
}

void allreduce_case(const Way& w, const std::string& algorithm, bool nonblocking)
{
    const std::size_t total = w.n * w.unit;
    auto send = bytes(total), recv = bytes(total);
    for (std::size_t i = 0; i < total; ++i) send[i] = pattern(i, rank);
    std::memset(recv.get(), 0xa5, total);
    const auto served = served_by_loom("allreduce", nonblocking ? "iallreduce" : "allreduce", algorithm, [&] {
        int rc = MPI_SUCCESS;
#if MPI_VERSION >= 4
        if (w.large_count && nonblocking) {
            MPI_Request request;
            rc = MPI_Iallreduce_c(send.get(), recv.get(), MPI_Count(w.n), w.type, w.sum, MPI_COMM_WORLD, &request);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        } else if (w.large_count) {
            rc = MPI_Allreduce_c(send.get(), recv.get(), MPI_Count(w.n), w.type, w.sum, MPI_COMM_WORLD);
        } else
#endif
        {
            MPI_Request request;
            rc = nonblocking ? MPI_Iallreduce(send.get(), recv.get(), int(w.n), w.type, w.sum, MPI_COMM_WORLD, &request)
                             : MPI_Allreduce(send.get(), recv.get(), int(w.n), w.type, w.sum, MPI_COMM_WORLD);
            if (rc == MPI_SUCCESS && nonblocking) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS) std::printf("rank %d: allreduce returned %d\n", rank, rc);
    });
    const std::size_t bad = first_wrong(recv.get(), total, summed);
    report(std::string(w.name) + (nonblocking ? " iallreduce " : " allreduce ") + std::to_string(total) + " bytes",
           algorithm, bad == total, served, bad);
}

void bcast_case(const Way& w, const std::string& algorithm)
{
    const std::size_t total = w.n * w.unit;
    const int root = size - 1;
    auto buf = bytes(total);
    if (rank == root)
        for (std::size_t i = 0; i < total; ++i) buf[i] = pattern(i, root);
    else
        std::memset(buf.get(), 0x5a, total);
    const auto served = served_by_loom("bcast", "bcast", algorithm, [&] {
#if MPI_VERSION >= 4
        if (w.large_count) {
            MPI_Bcast_c(buf.get(), MPI_Count(w.n), w.type, root, MPI_COMM_WORLD);
            return;
        }
#endif
        MPI_Bcast(buf.get(), int(w.n), w.type, root, MPI_COMM_WORLD);
    });
    const std::size_t bad = first_wrong(buf.get(), total, [root](std::size_t i) { return pattern(i, root); });
    report(std::string(w.name) + " bcast " + std::to_string(total) + " bytes", algorithm, bad == total, served, bad);
}

void allgatherv_case(const Way& w, const std::string& algorithm)
{
    std::vector<std::size_t> counts, displs;
    split(w.n, counts, displs);
    const std::size_t total = w.n * w.unit, mine = counts[std::size_t(rank)] * w.unit;
    const std::size_t at = displs[std::size_t(rank)] * w.unit;
    auto send = bytes(mine), recv = bytes(total);
    for (std::size_t i = 0; i < mine; ++i) send[i] = pattern(at + i, 7);
    std::memset(recv.get(), 0xc3, total);
    const auto served = served_by_loom("allgatherv", "allgatherv", algorithm, [&] {
#if MPI_VERSION >= 4
        if (w.large_count) {
            std::vector<MPI_Count> c(counts.begin(), counts.end());
            std::vector<MPI_Aint> d(displs.begin(), displs.end());
            MPI_Allgatherv_c(send.get(), MPI_Count(counts[std::size_t(rank)]), w.type, recv.get(), c.data(), d.data(),
                             w.type, MPI_COMM_WORLD);
            return;
        }
#endif
        std::vector<int> c(counts.begin(), counts.end()), d(displs.begin(), displs.end());
        MPI_Allgatherv(send.get(), c[std::size_t(rank)], w.type, recv.get(), c.data(), d.data(), w.type,
                       MPI_COMM_WORLD);
    });
    const std::size_t bad = first_wrong(recv.get(), total, [](std::size_t i) { return pattern(i, 7); });
    report(std::string(w.name) + " allgatherv " + std::to_string(total) + " bytes", algorithm, bad == total, served,
           bad);
}

// --algorithms "allreduce=ring,cma;bcast=shm": the forced algorithms per collective (loom's own
// choice is always run too).
std::map<std::string, std::vector<std::string>> parse_algorithms(const std::string& text)
{
    std::map<std::string, std::vector<std::string>> out;
    std::stringstream groups(text);
    std::string group;
    while (std::getline(groups, group, ';')) {
        const auto eq = group.find('=');
        if (eq == std::string::npos) continue;
        std::stringstream names(group.substr(eq + 1));
        std::string name;
        while (std::getline(names, name, ',')) out[group.substr(0, eq)].push_back(name);
    }
    return out;
}

std::vector<std::string> with_loom(std::vector<std::string> forced)
{
    forced.insert(forced.begin(), "loom");
    return forced;
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::size_t n = (std::size_t(1) << 31) + 4099;
    std::string algorithms_text;
    bool derived = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--bytes" && i + 1 < argc) n = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--algorithms" && i + 1 < argc) algorithms_text = argv[++i];
        else if (a == "--skip-derived") derived = false;
    }
    auto forced = parse_algorithms(algorithms_text);

    std::vector<Way> ways;
    MPI_Datatype mib = MPI_DATATYPE_NULL;
    MPI_Op mib_sum = MPI_OP_NULL;
    if (derived) {
        const std::size_t unit = std::size_t(1) << 20;
        MPI_Type_contiguous(int(unit), MPI_UNSIGNED_CHAR, &mib);
        MPI_Type_commit(&mib);
        MPI_Op_create(sum_of_bytes, 1, &mib_sum);
        ways.push_back({"derived", mib, unit, (n + unit - 1) / unit, false, mib_sum});
    }
#if MPI_VERSION >= 4
    ways.push_back({"_c", MPI_UNSIGNED_CHAR, 1, n, true, MPI_SUM});
#endif
    for (const Way& w : ways) {
        for (const auto& a : with_loom(forced["allreduce"])) allreduce_case(w, a, false);
        if (w.large_count)
            for (const auto& a : with_loom(forced["iallreduce"])) allreduce_case(w, a, true);
        for (const auto& a : with_loom(forced["bcast"])) bcast_case(w, a);
        for (const auto& a : with_loom(forced["allgatherv"])) allgatherv_case(w, a);
    }
    if (mib != MPI_DATATYPE_NULL) MPI_Type_free(&mib), MPI_Op_free(&mib_sum);
    if (rank == 0) std::printf("large_count_check np=%d: %d cases, %d failures\n", size, cases, failures);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
