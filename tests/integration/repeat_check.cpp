// repeat_check: a repeated call decides as the full decision path does (coll_loom_fast_repeats).
//
// loom hands a repeat of the last call it decided (same count, root, in-place use, the same
// predefined datatypes and op, the same forced algorithm) straight on, or serves it with the
// algorithm decided before, without describing and deciding it again
// (coll_component/coll_loom_repeat.c). This test makes one random sequence of calls - 96
// cases (24, each with 3 variants differing in one argument) over every collective of
// algorithms/collectives.def, each call made from its row (call_model.hpp): gatherv, scatterv,
// alltoallv and alltoallw with counts that differ by rank (their handed-on repeats ignore
// counts), reduce_scatter and allgatherv with per-rank counts the same on every rank (their
// handed-on repeats are found by the counts' sum, so one variant spreads the same sum
// differently),
// counts 0 to 30000, int/double/short/char, sum and max, roots first and last, in place and
// not, each case often repeated at once or after other collectives - on two copies of
// MPI_COMM_WORLD (periodic rings, so that the neighbourhood calls repeat too) in step: on the first with coll_loom_fast_repeats 1, on the second with 0 (set
// through MPI_T around each call). Both communicators make the same calls in the same order, so
// their shared segments appear at the same call; loom's MPI_T counters must show the same
// decision (served or handed on) for every call on both, and every result is checked against a
// reference computed here. Now and then the sequence forces an algorithm (any of the registry's)
// for the collective of the next call, or stops forcing it (coll_loom_<collective>_algorithm through MPI_T, the same on
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

#include "call_model.hpp"
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

const auto kAll = loom::all_collectives();

// Makes the call on comm (call_model.hpp: every collective from its row) and checks its result.
void call(const model::Spec& spec, MPI_Comm comm)
{
    model::Call call(spec, comm);
    call.fill(0);
    loom::tools::call(spec.collective, check::form, call.args);
    if (const std::string wrong = call.check(0); !wrong.empty()) fail(wrong);
}

bool rooted(const model::Spec& c) { return loom::rooted(c.collective); }
// reduce_scatter's and allgatherv's per-rank counts, the same on every rank: their handed-on
// repeats are found by the counts' sum, which a shift keeps.
bool shiftable(const model::Spec& c)
{
    return loom::per_rank_counts(c.collective) && !loom::counts_differ_by_rank(c.collective);
}

// The cases, the same on every rank (a fixed seed): 24 (one of each collective first, then any),
// each followed by three variants that differ in one argument (the datatype, the count, the root,
// in-place use, or how reduce_scatter's and allgatherv's counts are spread), so that calls alike
// but for one argument meet each other.
std::vector<model::Spec> make_cases(std::mt19937& rng)
{
    const int counts[] = {0, 1, 2, 5, 16, 64, 300, 2048, 30000};
    const MPI_Datatype reduction_types[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    const MPI_Datatype movement_types[] = {MPI_INT, MPI_DOUBLE, MPI_SIGNED_CHAR};
    auto type_for = [&](loom::Collective c) {
        return loom::reduces(c) ? reduction_types[rng() % 3] : movement_types[rng() % 3];
    };
    std::vector<model::Spec> cases;
    for (std::size_t k = 0; k < 24; ++k) {
        model::Spec c{};
        c.collective = k < kAll.size() ? kAll[k] : kAll[rng() % kAll.size()]; // every collective, then any
        const bool data = loom::layout(c.collective) != loom::Layout::none;
        c.count = data ? counts[rng() % std::size(counts)] : 0;
        c.type = data ? type_for(c.collective) : MPI_INT; // barrier: unused
        c.op = loom::reduces(c.collective) ? (rng() % 2 ? MPI_MAX : MPI_SUM) : MPI_OP_NULL;
        c.root = rooted(c) && rng() % 2 ? size - 1 : 0;
        c.in_place = model::has_in_place(c.collective) && rng() % 3 == 0;
        cases.push_back(c);
        for (int v = 0; v < 3; ++v) {
            model::Spec d = c;
            if (!data) {
            } else if (v == 0) {
                d.type = type_for(c.collective);
            } else if (v == 1) {
                d.count = counts[rng() % std::size(counts)];
            } else if (rooted(c)) {
                d.root = size - 1 - c.root;
            } else if (shiftable(c)) {
                d.shift = c.shift + 1; // the same sum of counts, spread differently
            } else if (model::has_in_place(c.collective)) {
                d.in_place = !c.in_place;
            }
            cases.push_back(d);
        }
    }
    // neighbor_allgather and neighbor_alltoall on call_model's ring (Cartesian) have a block's
    // size, which rules/repeat.rules hands on up to 256 bytes and serves above: a repeat at the
    // other size must be decided again (their handed-on repeats are kept by their counts).
    for (loom::Collective c : {loom::Collective::neighbor_allgather, loom::Collective::neighbor_alltoall})
        for (int count : {16, 2048}) {
            model::Spec d{};
            d.collective = c;
            d.count = count;
            d.type = MPI_INT;
            d.op = MPI_OP_NULL;
            cases.push_back(d);
        }
    return cases;
}

// The algorithms of collective c to force now and then: every one in loom's registry. One that
// cannot serve a case (cma in an operation, a hierarchical one on one node, ...) hands it on,
// alike with and without fast repeats; shm's segment is made at once when it is forced.
std::vector<std::string> forcible(loom::Collective c)
{
    std::vector<std::string> names;
    for (const loom::Algorithm& a : loom::all_algorithms())
        if (a.collective == c) names.emplace_back(a.name);
    return names;
}

void force(loom::Collective c, const std::string& algorithm)
{
    if (!loom::tools::force_algorithm(loom::to_string(c), algorithm)) fail("cannot force " + algorithm + " through MPI_T");
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

    constexpr std::size_t N = loom::kCollectiveCount;
    loom::tools::LoomCounters counters[N];
    for (loom::Collective c : kAll)
        if (!counters[int(c)].open(check::form_name(std::string(loom::to_string(c)).c_str()))) {
            std::fprintf(stderr, "repeat_check: loom is not loaded\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    // 1 if loom served the call, 0 if it handed it on, -1 if the call never reached a
    // collective component (Open MPI returns at once from a call with no data).
    auto decided = [&](const model::Spec& c, MPI_Comm comm) {
        auto& counter = counters[int(c.collective)];
        const unsigned long long served = counter.served(), declined = counter.declined();
        call(c, comm);
        const unsigned long long ds = counter.served() - served, dd = counter.declined() - declined;
        if (ds + dd == 0 && c.count == 0 && loom::layout(c.collective) != loom::Layout::none) return -1;
        if (ds + dd != 1) fail(c.text() + ": the counters moved by " + std::to_string(ds + dd) + " for one call");
        return int(ds);
    };

    std::mt19937 rng(20261126);
    const std::vector<model::Spec> cases = make_cases(rng);
    // Two periodic rings of every rank (1-D Cartesian communicators, MPI_COMM_WORLD's ranks in
    // order): every collective runs on them as on a duplicate, and the neighbourhood calls repeat
    // on them (call_model would make a ring per call on a communicator without a topology).
    MPI_Comm fast, full;
    const int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &fast);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &full);
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
    std::string forced[N];
    int last_case[N], last_served[N];
    std::fill(std::begin(last_case), std::end(last_case), -1);
    std::fill(std::begin(last_served), std::end(last_served), -1);
    int k = int(rng() % cases.size());
    for (int step = 0; step < steps; ++step) {
        // Half the steps repeat the case before, so repeats meet the memo directly and after
        // other collectives; a quarter take a variant of it.
        const unsigned pick = rng() % 4;
        if (pick == 2) k = k / 4 * 4 + int(rng() % 4);
        if (pick == 3) k = int(rng() % cases.size());
        const model::Spec& c = cases[std::size_t(k)];
        const int coll = int(c.collective);
        // One step in eight changes what is forced for this collective: nothing, or any algorithm.
        if (rng() % 8 == 0) {
            const auto names = forcible(c.collective);
            const unsigned which = unsigned(rng() % (names.size() + 1));
            const std::string algorithm = which == names.size() ? "" : names[which];
            if (algorithm != forced[coll]) {
                force(c.collective, algorithm);
                forced[coll] = algorithm;
                last_case[coll] = -1; // a call after the change is no repeat
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
        if (last_case[coll] == k && last_served[coll] == on_fast) ++(on_fast ? repeats_served : repeats_handed_on);
        last_case[coll] = k;
        last_served[coll] = on_fast;
    }
    if (served == 0) fail("loom served no call: the test proves nothing");
    if (repeats_handed_on == 0) fail("no repeat of a handed-on call was made: the test proves nothing");
    if (repeats_served == 0) fail("no repeat of a served call was made: the test proves nothing");
    for (loom::Collective c : kAll)
        if (!forced[int(c)].empty()) force(c, "");

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
