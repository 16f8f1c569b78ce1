// repeat_check: a repeated call decides as the full decision path does (coll_loom_fast_repeats).
//
// loom hands a repeat of the last call it decided (same count, root, in-place use, the same
// predefined datatypes and op, the same forced algorithm) straight on, or serves it with the
// algorithm decided before, without describing and deciding it again
// (coll_component/coll_loom_repeat.c). This test makes one random sequence of calls - 80
// cases (20, each with 3 variants differing in one argument) across allreduce, reduce, reduce_scatter_block, allgather, bcast, barrier, alltoall,
// gatherv and alltoallv (counts that differ by rank: their handed-on repeats ignore counts),
// reduce_scatter and allgatherv (per-rank counts the same on every rank: their handed-on repeats
// are found by the counts' sum, so one variant spreads the same sum differently),
// counts 0 to 30000, int/double/short/char, sum and max, roots first and last, in place and
// not, each case often repeated at once or after other collectives - on two duplicates of
// MPI_COMM_WORLD in step: on the first with coll_loom_fast_repeats 1, on the second with 0 (set
// through MPI_T around each call). Both communicators make the same calls in the same order, so
// their shared segments appear at the same call; loom's MPI_T counters must show the same
// decision (served or handed on) for every call on both, and every result is checked against a
// reference computed here. Now and then the sequence forces an algorithm for the collective of
// the next call, or stops forcing it (coll_loom_<collective>_algorithm through MPI_T, the same on
// both communicators), so repeats meet a changed forced algorithm. Run it with a rule file that
// hands some sizes on (rules/repeat.rules) so there are repeats to remember; the test fails if no
// repeat was handed on, none served, or no call served.
//
// With --compare-lines (and coll_loom_verbose 2, which prints a line per call naming the
// algorithm that served it and its rule, or why it was handed on) each rank sends its stderr to
// a file, and the lines of the two communicators must be the same, call by call: a repeat served
// by another algorithm than the full path chooses fails here.
//
// With --form nonblocking|persistent the calls are MPI_Iallreduce + MPI_Wait (or _init, Start,
// Wait, Request_free; check_forms.hpp) and the counters loom's coll_loom_i<collective>_* (or
// _init_*): repeats of a handed-on non-blocking call skip the decision too.
//
//   mpirun ... repeat_check [--steps 400] [--form blocking|nonblocking|persistent] [--compare-lines]
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "check_forms.hpp"
#include "loom_mpi_t.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int rank = 0, size = 1;
long failures = 0;
int report_fd = 2; // stderr, or where it was while stderr goes to a file (--compare-lines)

void fail(const std::string& what)
{
    if (failures++ < 20) dprintf(report_fd, "repeat_check FAIL (rank %d): %s\n", rank, what.c_str());
}

enum Coll {
    allreduce,
    reduce,
    reduce_scatter_block,
    allgather,
    bcast,
    barrier,
    alltoall,
    gatherv,
    alltoallv,
    reduce_scatter,
    allgatherv,
    coll_count
};
const char* const names[coll_count] = {"allreduce", "reduce",   "reduce_scatter_block", "allgather",
                                       "bcast",     "barrier",  "alltoall",             "gatherv",
                                       "alltoallv", "reduce_scatter", "allgatherv"};

// gatherv's and alltoallv's counts differ from rank to rank (their repeats are decided by the
// communicator alone, counts left out): rank r's block is count + r % 3 elements, and r sends q
// count + (r + 2q) % 3 in alltoallv.
int own_count(int count, int r) { return count + r % 3; }
int pair_count(int count, int from, int to) { return count + (from + 2 * to) % 3; }
// reduce_scatter's and allgatherv's counts, the same on every rank: rank r's block is
// own_count(count, r + shift); shifting spreads the same sum differently.
std::vector<int> spread_counts(int count, int shift)
{
    std::vector<int> counts(static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) counts[std::size_t(q)] = own_count(count, q + shift);
    return counts;
}

struct Case {
    Coll coll;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int root;
    bool in_place;
    int shift = 0; // reduce_scatter, allgatherv: see spread_counts
    std::string text() const
    {
        char type_name[MPI_MAX_OBJECT_NAME];
        int len = 0;
        MPI_Type_get_name(type, type_name, &len);
        return std::string(names[coll]) + " count " + std::to_string(count) + " " + type_name +
               (op == MPI_MAX ? " max" : " sum") + " root " + std::to_string(root) + (in_place ? " in place" : "") +
               (shift != 0 ? " counts shifted by " + std::to_string(shift) : "");
    }
};

bool reduces(Coll c) { return c == allreduce || c == reduce || c == reduce_scatter_block || c == reduce_scatter; }

// Element i of rank r's input: small integers, exact in every type and under sum.
int value(int r, long i) { return int((r * 7 + i * 3) % 11) + 1; }

double get(const std::vector<unsigned char>& b, MPI_Datatype t, long i)
{
    if (t == MPI_INT) return reinterpret_cast<const int*>(b.data())[i];
    if (t == MPI_DOUBLE) return reinterpret_cast<const double*>(b.data())[i];
    if (t == MPI_SHORT) return reinterpret_cast<const short*>(b.data())[i];
    return reinterpret_cast<const signed char*>(b.data())[i];
}

void set(std::vector<unsigned char>& b, MPI_Datatype t, long i, int v)
{
    if (t == MPI_INT)
        reinterpret_cast<int*>(b.data())[i] = v;
    else if (t == MPI_DOUBLE)
        reinterpret_cast<double*>(b.data())[i] = v;
    else if (t == MPI_SHORT)
        reinterpret_cast<short*>(b.data())[i] = short(v);
    else
        reinterpret_cast<signed char*>(b.data())[i] = static_cast<signed char>(v);
}

std::vector<unsigned char> buffer(MPI_Datatype t, long n)
{
    int bytes = 0;
    MPI_Type_size(t, &bytes);
    return std::vector<unsigned char>(std::size_t(std::max(1L, n * bytes)), 0);
}

// The reduction of element i over every rank.
int reduced(const Case& c, long i)
{
    int r = value(0, i);
    for (int q = 1; q < size; ++q) r = c.op == MPI_MAX ? std::max(r, value(q, i)) : r + value(q, i);
    return r;
}

// Makes the call on comm and checks its result.
void call(const Case& c, MPI_Comm comm)
{
    const long n = c.count, all = long(size) * n;
    const void* in_place = MPI_IN_PLACE;
    auto expect = [&](const std::vector<unsigned char>& b, long i, int want) {
        if (get(b, c.type, i) != want)
            fail(c.text() + ": element " + std::to_string(i) + " is " + std::to_string(get(b, c.type, i)) +
                 ", expected " + std::to_string(want));
    };
    switch (c.coll) {
    case allreduce: {
        auto send = buffer(c.type, n), recv = buffer(c.type, n);
        for (long i = 0; i < n; ++i) set(c.in_place ? recv : send, c.type, i, value(rank, i));
        check::allreduce(c.in_place ? in_place : send.data(), recv.data(), c.count, c.type, c.op, comm);
        for (long i = 0; i < n; ++i) expect(recv, i, reduced(c, i));
        break;
    }
    case reduce: {
        const bool root = rank == c.root, here = c.in_place && root;
        auto send = buffer(c.type, n), recv = buffer(c.type, n);
        for (long i = 0; i < n; ++i) set(here ? recv : send, c.type, i, value(rank, i));
        check::reduce(here ? in_place : send.data(), recv.data(), c.count, c.type, c.op, c.root, comm);
        if (root)
            for (long i = 0; i < n; ++i) expect(recv, i, reduced(c, i));
        break;
    }
    case reduce_scatter_block: {
        auto send = buffer(c.type, all), recv = buffer(c.type, c.in_place ? all : n);
        for (long i = 0; i < all; ++i) set(c.in_place ? recv : send, c.type, i, value(rank, i));
        check::reduce_scatter_block(c.in_place ? in_place : send.data(), recv.data(), c.count, c.type, c.op, comm);
        for (long i = 0; i < n; ++i) expect(recv, i, reduced(c, rank * n + i));
        break;
    }
    case allgather: {
        auto send = buffer(c.type, n), recv = buffer(c.type, all);
        for (long i = 0; i < n; ++i)
            set(c.in_place ? recv : send, c.type, (c.in_place ? rank * n : 0) + i, value(rank, i));
        if (c.in_place)
            check::allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), c.count, c.type, comm);
        else
            check::allgather(send.data(), c.count, c.type, recv.data(), c.count, c.type, comm);
        for (int q = 0; q < size; ++q)
            for (long i = 0; i < n; ++i) expect(recv, q * n + i, value(q, i));
        break;
    }
    case bcast: {
        auto b = buffer(c.type, n);
        if (rank == c.root)
            for (long i = 0; i < n; ++i) set(b, c.type, i, value(c.root, i));
        check::bcast(b.data(), c.count, c.type, c.root, comm);
        for (long i = 0; i < n; ++i) expect(b, i, value(c.root, i));
        break;
    }
    case barrier: check::barrier(comm); break;
    case alltoall: {
        auto send = buffer(c.type, all), recv = buffer(c.type, all);
        for (long i = 0; i < all; ++i) set(c.in_place ? recv : send, c.type, i, value(rank, i));
        if (c.in_place)
            check::alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), c.count, c.type, comm);
        else
            check::alltoall(send.data(), c.count, c.type, recv.data(), c.count, c.type, comm);
        for (int q = 0; q < size; ++q)
            for (long i = 0; i < n; ++i) expect(recv, q * n + i, value(q, rank * n + i));
        break;
    }
    case gatherv: {
        const bool root = rank == c.root, here = c.in_place && root;
        const auto P = static_cast<std::size_t>(size);
        std::vector<int> counts(P), displs(P);
        int total = 0;
        for (int q = 0; q < size; ++q) counts[std::size_t(q)] = own_count(c.count, q), displs[std::size_t(q)] = total, total += counts[std::size_t(q)];
        const int mine = counts[std::size_t(rank)];
        auto send = buffer(c.type, mine), recv = buffer(c.type, total);
        for (long i = 0; i < mine; ++i) set(here ? recv : send, c.type, (here ? displs[std::size_t(rank)] : 0) + i, value(rank, i));
        check::gatherv(here ? in_place : send.data(), mine, c.type, recv.data(), counts.data(), displs.data(), c.type,
                       c.root, comm);
        for (int q = 0; root && q < size; ++q)
            for (long i = 0; i < counts[std::size_t(q)]; ++i) expect(recv, displs[std::size_t(q)] + i, value(q, i));
        break;
    }
    case alltoallv: { // in place: the counts made symmetric (MPI's in place sends what it receives)
        const auto P = static_cast<std::size_t>(size);
        std::vector<int> sc(P), sd(P), rc(P), rd(P);
        int out = 0, in = 0;
        for (int q = 0; q < size; ++q) {
            sc[std::size_t(q)] = c.in_place ? pair_count(c.count, std::min(rank, q), std::max(rank, q)) : pair_count(c.count, rank, q);
            rc[std::size_t(q)] = c.in_place ? sc[std::size_t(q)] : pair_count(c.count, q, rank);
            sd[std::size_t(q)] = out, out += sc[std::size_t(q)];
            rd[std::size_t(q)] = in, in += rc[std::size_t(q)];
        }
        auto send = buffer(c.type, out), recv = buffer(c.type, in);
        for (int q = 0; q < size; ++q)
            for (long i = 0; i < sc[std::size_t(q)]; ++i)
                set(c.in_place ? recv : send, c.type, sd[std::size_t(q)] + i, value(rank + q * size, i));
        check::alltoallv(c.in_place ? in_place : send.data(), sc.data(), sd.data(), c.type, recv.data(), rc.data(), rd.data(),
                         c.type, comm);
        for (int q = 0; q < size; ++q)
            for (long i = 0; i < rc[std::size_t(q)]; ++i) expect(recv, rd[std::size_t(q)] + i, value(q + rank * size, i));
        break;
    }
    case reduce_scatter: {
        const auto counts = spread_counts(c.count, c.shift);
        long total = 0, first = 0; // the whole vector's length; where this rank's block begins
        for (int q = 0; q < size; ++q) {
            if (q == rank) first = total;
            total += counts[std::size_t(q)];
        }
        const long mine = counts[std::size_t(rank)];
        auto send = buffer(c.type, total), recv = buffer(c.type, c.in_place ? total : mine);
        for (long i = 0; i < total; ++i) set(c.in_place ? recv : send, c.type, i, value(rank, i));
        check::reduce_scatter(c.in_place ? in_place : send.data(), recv.data(), counts.data(), c.type, c.op, comm);
        for (long i = 0; i < mine; ++i) expect(recv, i, reduced(c, first + i));
        break;
    }
    case allgatherv: {
        const auto counts = spread_counts(c.count, c.shift);
        std::vector<int> displs(counts.size());
        int total = 0;
        for (std::size_t q = 0; q < counts.size(); ++q) displs[q] = total, total += counts[q];
        const int mine = counts[std::size_t(rank)];
        auto send = buffer(c.type, mine), recv = buffer(c.type, total);
        for (long i = 0; i < mine; ++i)
            set(c.in_place ? recv : send, c.type, (c.in_place ? displs[std::size_t(rank)] : 0) + i, value(rank, i));
        if (c.in_place)
            check::allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), counts.data(), displs.data(), c.type, comm);
        else
            check::allgatherv(send.data(), mine, c.type, recv.data(), counts.data(), displs.data(), c.type, comm);
        for (int q = 0; q < size; ++q)
            for (long i = 0; i < counts[std::size_t(q)]; ++i) expect(recv, displs[std::size_t(q)] + i, value(q, i));
        break;
    }
    case coll_count: break;
    }
}

// The cases, the same on every rank (a fixed seed): 20 (one of each collective first, then any),
// each followed by three variants that differ in one argument (the datatype, the count, the root,
// in-place use, or how reduce_scatter's and allgatherv's counts are spread), so that calls alike
// but for one argument meet each other.
std::vector<Case> make_cases(std::mt19937& rng)
{
    const int counts[] = {0, 1, 2, 5, 16, 64, 300, 2048, 30000};
    const MPI_Datatype reduction_types[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    const MPI_Datatype movement_types[] = {MPI_INT, MPI_DOUBLE, MPI_SIGNED_CHAR};
    auto type_for = [&](Coll coll) { return reduces(coll) ? reduction_types[rng() % 3] : movement_types[rng() % 3]; };
    std::vector<Case> cases;
    for (int k = 0; k < 20; ++k) {
        Case c{};
        c.coll = k < coll_count ? Coll(k) : Coll(rng() % coll_count); // every collective, then any
        c.count = c.coll == barrier ? 0 : counts[rng() % std::size(counts)];
        c.type = c.coll == barrier ? MPI_INT : type_for(c.coll); // barrier: unused
        c.op = reduces(c.coll) ? (rng() % 2 ? MPI_MAX : MPI_SUM) : MPI_OP_NULL;
        c.root = (c.coll == reduce || c.coll == bcast || c.coll == gatherv) && rng() % 2 ? size - 1 : 0;
        c.in_place = c.coll != bcast && c.coll != barrier && rng() % 3 == 0;
        cases.push_back(c);
        for (int v = 0; v < 3; ++v) {
            Case d = c;
            if (c.coll == barrier) {
            } else if (v == 0) {
                d.type = type_for(c.coll);
            } else if (v == 1) {
                d.count = counts[rng() % std::size(counts)];
            } else if (c.coll == reduce || c.coll == bcast || c.coll == gatherv) {
                d.root = size - 1 - c.root;
            } else if (c.coll == reduce_scatter || c.coll == allgatherv) {
                d.shift = c.shift + 1; // the same sum of counts, spread differently
            } else if (c.coll != bcast) {
                d.in_place = !c.in_place;
            }
            cases.push_back(d);
        }
    }
    return cases;
}

// Two algorithms of each collective to force now and then (every one can serve every case here:
// the ops are commutative, and shm's segment is made at once when it is forced; cma serves
// blocking calls only, and hands the others on alike with and without fast repeats).
const char* const forcible[coll_count][2] = {{"ring", "shm"},
                                             {"binomial", "shm"},
                                             {"ring", "halving_doubling"},
                                             {"ring", "bruck"},
                                             {"binomial", "scatter_allgather"},
                                             {"bruck", "recursive_doubling"},
                                             {"bruck", "shm"},
                                             {"linear", "cma"},
                                             {"pairwise", "linear"},
                                             {"ring", "halving_doubling"},
                                             {"ring", "bruck"}};

void force(Coll c, const char* algorithm)
{
    const std::string name = "coll_loom_" + std::string(names[c]) + "_algorithm";
    if (!loom::tools::set_loom_control(name, algorithm)) fail("cannot write " + name);
}

// loom's per-call lines (coll_loom_verbose 2) for communicator `comm` in stderr's file, with the
// communicator's name taken out, in order.
std::vector<std::string> lines_on(const std::string& path, const std::string& comm)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    const std::string tag = " on " + comm + " (rank ";
    for (std::string line; std::getline(in, line);)
        if (const auto at = line.find(tag); line.find("coll:loom: ") != std::string::npos && at != std::string::npos)
            lines.push_back(line.substr(0, at) + line.substr(at + comm.size() + 4));
    return lines;
}

const char* outcome(int decided) { return decided > 0 ? "served" : decided == 0 ? "handed on" : "not reached"; }

void set_fast_repeats(int on)
{
    if (!loom::tools::set_loom_control("coll_loom_fast_repeats", &on)) fail("cannot write coll_loom_fast_repeats");
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = 400;
    bool compare_lines = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--compare-lines") == 0) compare_lines = true;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
        if (std::strcmp(argv[i], "--form") == 0)
            check::form = std::strcmp(argv[i + 1], "nonblocking") == 0  ? check::Form::nonblocking
                          : std::strcmp(argv[i + 1], "persistent") == 0 ? check::Form::persistent
                                                                        : check::Form::blocking;
    }

    loom::tools::LoomCounters counters[coll_count];
    for (int c = 0; c < coll_count; ++c)
        if (!counters[c].open(check::form_name(names[c]))) {
            std::fprintf(stderr, "repeat_check: loom is not loaded\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    // 1 if loom served the call, 0 if it handed it on, -1 if the call never reached a
    // collective component (Open MPI returns at once from a call with no data).
    auto decided = [&](const Case& c, MPI_Comm comm) {
        const unsigned long long served = counters[c.coll].served(), declined = counters[c.coll].declined();
        call(c, comm);
        const unsigned long long ds = counters[c.coll].served() - served, dd = counters[c.coll].declined() - declined;
        if (ds + dd == 0 && c.count == 0 && c.coll != barrier) return -1;
        if (ds + dd != 1) fail(c.text() + ": the counters moved by " + std::to_string(ds + dd) + " for one call");
        return int(ds);
    };

    std::mt19937 rng(20261126);
    const std::vector<Case> cases = make_cases(rng);
    MPI_Comm fast, full;
    MPI_Comm_dup(MPI_COMM_WORLD, &fast);
    MPI_Comm_dup(MPI_COMM_WORLD, &full);
    MPI_Comm_set_name(fast, "fast");
    MPI_Comm_set_name(full, "full");

    // loom's lines go to fd 2; it is pointed at a file of this rank's until the end.
    const std::string lines_path = "repeat_check.lines." + std::to_string(rank) + "." + std::to_string(getpid());
    if (compare_lines) {
        std::fflush(stderr);
        std::FILE* f = std::fopen(lines_path.c_str(), "w");
        report_fd = dup(2);
        if (f == nullptr || report_fd < 0 || dup2(fileno(f), 2) < 0) {
            std::fprintf(stderr, "repeat_check: cannot send stderr to %s\n", lines_path.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        std::fclose(f);
    }

    long served = 0, handed_on = 0, repeats_handed_on = 0, repeats_served = 0, forcings = 0;
    const char* forced[coll_count] = {};
    int last_case[coll_count], last_served[coll_count];
    std::fill(std::begin(last_case), std::end(last_case), -1);
    std::fill(std::begin(last_served), std::end(last_served), -1);
    int k = int(rng() % cases.size());
    for (int step = 0; step < steps; ++step) {
        // Half the steps repeat the case before, so repeats meet the memo directly and after
        // other collectives; a quarter take a variant of it.
        const unsigned pick = rng() % 4;
        if (pick == 2) k = k / 4 * 4 + int(rng() % 4);
        if (pick == 3) k = int(rng() % cases.size());
        const Case& c = cases[std::size_t(k)];
        // One step in eight changes what is forced for this collective: nothing, or one of two.
        if (rng() % 8 == 0) {
            const unsigned which = rng() % 3;
            const char* algorithm = which == 2 ? "" : forcible[c.coll][which];
            if (std::strcmp(algorithm, forced[c.coll] != nullptr ? forced[c.coll] : "") != 0) {
                force(c.coll, algorithm);
                forced[c.coll] = algorithm;
                last_case[c.coll] = -1; // a call after the change is no repeat
                ++forcings;
            }
        }
        set_fast_repeats(1);
        const int on_fast = decided(c, fast);
        set_fast_repeats(0);
        const int on_full = decided(c, full);
        set_fast_repeats(1);
        if (on_fast != on_full)
            fail("step " + std::to_string(step) + ", " + c.text() + ": " + outcome(on_fast) +
                 " with coll_loom_fast_repeats 1 but " + outcome(on_full) + " with 0");
        if (on_fast < 0) continue;
        (on_fast ? served : handed_on) += 1;
        if (last_case[c.coll] == k && last_served[c.coll] == on_fast) ++(on_fast ? repeats_served : repeats_handed_on);
        last_case[c.coll] = k;
        last_served[c.coll] = on_fast;
    }
    if (served == 0) fail("loom served no call: the test proves nothing");
    if (repeats_handed_on == 0) fail("no repeat of a handed-on call was made: the test proves nothing");
    if (repeats_served == 0) fail("no repeat of a served call was made: the test proves nothing");
    for (int c = 0; c < coll_count; ++c)
        if (forced[c] != nullptr) force(Coll(c), "");

    if (compare_lines) {
        std::fflush(stderr);
        dup2(report_fd, 2);
        close(report_fd);
        report_fd = 2;
        const auto on_fast = lines_on(lines_path, "fast"), on_full = lines_on(lines_path, "full");
        if (on_fast.empty()) fail("no loom line per call in stderr: run with coll_loom_verbose 2");
        if (on_fast.size() != on_full.size())
            fail(std::to_string(on_fast.size()) + " lines on the fast communicator, " + std::to_string(on_full.size()) +
                 " on the other");
        const long before = failures;
        for (std::size_t i = 0; i < std::min(on_fast.size(), on_full.size()); ++i)
            if (on_fast[i] != on_full[i]) {
                fail("call " + std::to_string(i) + " differs:\n  fast path: " + on_fast[i] +
                     "\n  full path: " + on_full[i]);
                break;
            }
        if (failures == before)
            std::remove(lines_path.c_str());
        else
            fail("loom's lines are kept in " + lines_path);
    }

    MPI_Comm_free(&fast);
    MPI_Comm_free(&full);
    long all_failures = 0;
    check::reduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("repeat_check np=%d: %d steps over %zu cases, each on two communicators; served %ld, handed on "
                    "%ld; repeats: %ld served, %ld handed on; forced algorithm changed %ld times; %ld failures\n",
                    size, steps, cases.size(), served, handed_on, repeats_served, repeats_handed_on, forcings,
                    all_failures);
    MPI_Finalize();
    return all_failures == 0 ? 0 : 1;
}
