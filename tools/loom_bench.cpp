// loom-bench: times MPI collectives with each of loom's algorithms forced in turn, with loom's own
// choice, or (in a job without loom) with Open MPI's default, side by side in one job.
//
//   mpirun -np N loom-bench
//       [--collectives allreduce,reduce,bcast,allgather,reduce_scatter_block,barrier
//                      (also allgatherv, reduce_scatter, alltoall, scan, exscan, gather, scatter,
//                       gatherv, scatterv, alltoallv, alltoallw, neighbor_allgather(v),
//                       neighbor_alltoall(v, w))]
//       [--sizes 8:64K | --bytes 8,1K,...] [--algorithms all|each|loom|fallback|NAME,...]
//       [--repeats 5] [--time 0.05] [--csv FILE] [--output FILE] [--bound]
//       [--form blocking|nonblocking|persistent]
//       [--overlap] [--topology ring|cart:AxB...|stencil:AxB]
//
// Contenders. If loom is enabled on MPI_COMM_WORLD, "all" means every algorithm of the
// collective in loom's registry that can serve the call at this np (loom::why_not, with the
// node count found by comparing MPI_Get_processor_name across ranks, so the shared-memory
// algorithms take part when every rank is on one node), plus "loom": loom's own choice (the
// algorithm parameter as the job set it: empty, unless the job forces one with --mca
// coll_loom_<collective>_algorithm, which rank 0 then reports). "loom" alone, or a list of algorithm names (and "loom"),
// picks some of them, and "each" is every algorithm that can serve without "loom" (what
// tools/loom-tune measures); a name a collective lacks is skipped for that collective. Algorithms are
// forced through MPI_T (coll_loom_<collective>_algorithm), the way users force them. "fallback"
// (never part of "all" or "each") is Open MPI's default in the same job: loom forced to hand
// every call on (coll_loom_<collective>_algorithm=fallback), so it is timed interleaved with
// loom's contenders, in the same state of the machine, at the cost of loom's hand-on (what a
// handed-on call costs wherever loom is installed). If loom is not loaded, or loaded but not
// enabled (coll_loom_priority -1, or loom standing aside), the one contender is "ompi", Open
// MPI's default, and --algorithms is ignored. Which it was is the second line rank 0 prints:
// "# loom enabled on MPI_COMM_WORLD: ...", "# loom loaded but not enabled on MPI_COMM_WORLD:
// ..." or "# loom not loaded: ..." (tools/common/loom_state.h; loom's MPI_T counter
// coll_loom_communicators_enabled): a job run with Open MPI's default selection, as
// tools/loom-bench-compare runs both of its jobs, proves with it that loom was used, or not.
//
// Sizes are loom's message sizes (selection_rules/RULES.md, "Message size": the whole vector
// for allgather(v) and reduce_scatter(_block)); --sizes A:B is A, 2A, 4A, ... up to B, except
// for alltoall, where the size asked for is each rank's whole send buffer and the size
// reported is loom's, one block (size / N). Reductions are MPI_DOUBLE with MPI_SUM, the rest
// MPI_BYTE, bcast and reduce from root 0, allgatherv and reduce_scatter with equal blocks;
// barrier runs once, at 0 bytes. A size too small for a collective at this np (a vector or
// per-rank block under one element) is skipped, and the block collectives round the vector
// down to N equal blocks: the bytes reported are those of the calls made.
//
// The neighbourhood collectives run on a communicator with a process topology made from
// --topology (tools/bench/bench_topology.hpp): "ring" (the default), a 1-D periodic Cartesian
// grid over every rank; "cart:AxB..." a Cartesian grid, periodic along an extent written with a
// 'p' (cart:2px2); "stencil:AxB", a distributed graph where each rank of a periodic AxB grid
// exchanges with its 8 Moore neighbours (a 2-D halo exchange with corners). Their size is the
// bytes of one neighbour's block (every neighbour the same; loom's own message size for them
// is 0, since ranks' blocks may differ), and their result is checked block by block, in the
// order MPI defines for the topology (algorithms/neighbourhood.hpp, "Matching").
//
// Per collective and size: every contender makes one call whose result is checked against
// values computed here (never by Open MPI), then warms up and is given enough iterations for
// about --time seconds. Then --repeats rounds time the contenders interleaved, A B C A B C ...,
// each run OSU-style (a barrier, the iterations, the slowest rank's mean time per call); a
// contender's time is the median of its runs. For loom's contenders, loom's MPI_T counters
// must show that loom served every call made with a forced algorithm and declined none (for
// "loom", that every call was served or handed on by a `fallback` rule; for "fallback", that it
// handed every call on). A wrong
// result or a call loom did not serve stops the program with exit status 1 and a message
// naming the collective, the contender and the size.
//
// In a job with loom, each collective ends with "# loom <collective>: served S declined D":
// loom's counters on rank 0 for every call of that collective in the job so far (the timed
// ones, and any a rule or the job's settings made loom hand on).
//
// Rank 0 prints one table per collective (bytes, then microseconds per call for each
// contender), then for sizes of 64 KiB and more the same runs as bus bandwidth: the bytes one
// link must carry for the collective divided by the time, in GB/s (10^9 B/s), by NCCL's
// definitions: S/t for bcast, reduce, scan and exscan, 2(P-1)/P * S/t for allreduce, (P-1)/P *
// S/t for allgather(v), reduce_scatter(_block), gather(v) and scatter(v), (P-1) * S/t for
// alltoall(v/w) (S: loom's message size,
// t: seconds per call); a value near
// the machine's copy or link bandwidth means the algorithm is bandwidth-bound. With --csv it
// writes rows collective,contender,np,bytes,time_us,iterations,busbw_GBps. Progress (one line per
// size, with the elapsed time) goes to stderr. With --output FILE rank 0 writes what it would
// print on standard output to FILE itself, not through the launcher: Open MPI 5's (PRRTE over
// PMIx) has been seen here to drop pieces of a busy job's output (a job with coll verbose on
// four ranks lost part of a line), and a test that reads the report must get all of it.
// --bound adds, for allreduce, reduce_scatter_block, allgather and bcast, the single-copy
// lower bound of each size, measured on this machine (tools/bench/bound.hpp: every rank copying
// and reducing at once), as a column "bound" (CSV rows with contender "bound") and a third
// block: the bound over each contender's time, in percent (100%: the contender is at the
// bound).
// --form nonblocking times the non-blocking calls instead (MPI_Iallreduce then MPI_Wait at
// once), with loom's coll_loom_i<collective>_* counters, and without single copy (cma), which
// operations never use; on one node it first makes the shared segment with one blocking
// barrier (shm forced), so that the set-up a non-blocking call would start is not timed
// (coll_loom_call.c). --overlap
// (implies it) also times each contender OSU-style (osu_iallreduce): start, a computation as long as the contender's
// pure time (a busy loop that makes no MPI call), wait; it adds columns "NAME+compute" (CSV
// rows with that contender name) and an "overlap %" block: 100 (1 - (T - t) / t), at least
// 0, t the pure time and T the time with computation.
// --form persistent times persistent requests: MPI_Allreduce_init (MPIX_ on Open MPI 4.1) once
// per timed run, outside the clock, then MPI_Start and MPI_Wait per call, with loom's
// coll_loom_<collective>_init_* counters; also with --overlap.
// The header names loom-bench's own build and, in a job with loom, the plugin the job loaded (its
// coll_loom_version, read through MPI_T). --version prints loom-bench's version line and exits
// before MPI_Init: it needs no MPI job.
// Bad arguments: exit status 2. tools/loom-bench-compare runs it with and without loom.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "bench_core.hpp"
#include "bound.hpp"
#include "loom_mpi_t.hpp"
#include "reduction_reach.hpp"
#include "registry.hpp"
#include "size_text.hpp"
#include "tool_version.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using loom::Algorithm;
using loom::Collective;
using loom::Layout;
using loom::tools::format_size;
using loom::tools::parse_size;
namespace bench = loom::bench;

const char* const kUsage =
    "usage: mpirun -np N loom-bench\n"
    "           [--collectives allreduce,reduce,bcast,allgather,reduce_scatter_block,barrier]\n"
    "                         (also allgatherv, reduce_scatter, alltoall, scan, exscan, gather,\n"
    "                          scatter, gatherv, scatterv, alltoallv, alltoallw, neighbor_allgather,\n"
    "                          neighbor_allgatherv, neighbor_alltoall, neighbor_alltoallv,\n"
    "                          neighbor_alltoallw)\n"
    "           [--sizes 8:64K | --bytes 8,1K,...] [--algorithms all|each|loom|fallback|NAME,...]\n"
    "           [--repeats 5] [--time 0.05] [--csv FILE] [--output FILE] [--bound]\n"
    "           [--form blocking|nonblocking|persistent] [--overlap]\n"
    "           [--topology ring|cart:AxB...|stencil:AxB] (the neighbourhood collectives; a 'p'\n"
    "                         after an extent: periodic)\n"
    "       loom-bench --version\n";

struct Usage : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

struct Options {
    std::vector<Collective> collectives{Collective::allreduce,
                                        Collective::reduce,
                                        Collective::bcast,
                                        Collective::allgather,
                                        Collective::reduce_scatter_block,
                                        Collective::barrier};
    std::vector<std::size_t> sizes; // nominal message sizes, ascending
    std::vector<std::string> algorithms{"all"};
    int repeats = 5;
    double seconds = 0.05; // per timed run
    std::string csv;
    std::string output; // rank 0's report to this file instead of standard output
    bool bound = false;       // measure and show the single-copy lower bound
    bool nonblocking = false; // --form nonblocking: MPI_Iallreduce + MPI_Wait (also set for persistent)
    bool persistent = false;  // --form persistent: MPI_Allreduce_init once, MPI_Start + MPI_Wait
    bool overlap = false;     // also time each call with computation in between (OSU-style)
    std::string topology = "ring"; // the neighbourhood collectives' (bench_topology.hpp)
};

std::vector<std::string> split(const std::string& text, const std::string& what)
{
    std::vector<std::string> words;
    std::stringstream in(text);
    std::string word;
    while (std::getline(in, word, ','))
        if (!word.empty()) words.push_back(word);
    if (words.empty()) throw Usage(what + ": empty list");
    return words;
}

constexpr std::size_t kMaxBytes = std::size_t(1) << 30;

// "A:B": A, 2A, 4A, ... up to B.
std::vector<std::size_t> parse_range(const std::string& text)
{
    const auto colon = text.find(':');
    if (colon == std::string::npos) throw Usage("--sizes wants FROM:TO (e.g. 8:64K); use --bytes for a list");
    const std::size_t from = parse_size(text.substr(0, colon)), to = parse_size(text.substr(colon + 1));
    if (from == 0 || from > to || to > kMaxBytes) throw Usage("--sizes " + text + ": want 0 < FROM <= TO <= 1G");
    std::vector<std::size_t> sizes;
    for (std::size_t s = from; s <= to; s *= 2) sizes.push_back(s);
    return sizes;
}

std::vector<std::size_t> parse_list(const std::string& text)
{
    std::vector<std::size_t> sizes;
    for (const auto& word : split(text, "--bytes")) sizes.push_back(parse_size(word));
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    if (sizes.back() > kMaxBytes) throw Usage("--bytes: sizes up to 1G");
    return sizes;
}

Collective parse_collective(const std::string& name)
{
    for (int i = 0; i < loom::kCollectiveCount; ++i) {
        const auto c = Collective(i);
        if (loom::to_string(c) == name && bench::can_call(c)) return c;
    }
    std::string known;
    for (int i = 0; i < loom::kCollectiveCount; ++i) {
        if (!bench::can_call(Collective(i))) continue;
        if (!known.empty()) known += ", ";
        known += loom::to_string(Collective(i));
    }
    throw Usage("--collectives: unknown collective '" + name + "' (known: " + known + ")");
}

Options parse_options(int argc, char** argv)
{
    Options o;
    bool sizes_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw Usage(arg + " needs a value");
            return argv[++i];
        };
        auto number = [&](const std::string& text) {
            std::size_t used = 0;
            double v = 0;
            try {
                v = std::stod(text, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != text.size()) throw Usage(arg + ": bad number '" + text + "'");
            return v;
        };
        if (arg == "--collectives") {
            o.collectives.clear();
            for (const auto& word : split(value(), arg)) o.collectives.push_back(parse_collective(word));
        } else if (arg == "--sizes" || arg == "--bytes") {
            if (sizes_given) throw Usage("give --sizes or --bytes once");
            sizes_given = true;
            o.sizes = arg == "--sizes" ? parse_range(value()) : parse_list(value());
        } else if (arg == "--algorithms")
            o.algorithms = split(value(), arg);
        else if (arg == "--repeats") {
            const double v = number(value());
            if (v < 1 || v != int(v)) throw Usage("--repeats wants a whole number >= 1");
            o.repeats = int(v);
        } else if (arg == "--time") {
            o.seconds = number(value());
            if (!(o.seconds > 0 && o.seconds <= 10)) throw Usage("--time wants seconds in (0, 10]");
        } else if (arg == "--csv")
            o.csv = value();
        else if (arg == "--output")
            o.output = value();
        else if (arg == "--bound")
            o.bound = true;
        else if (arg == "--form") {
            const std::string f = value();
            if (f != "blocking" && f != "nonblocking" && f != "persistent")
                throw Usage("--form wants blocking, nonblocking or persistent");
            o.persistent = f == "persistent";
            o.nonblocking = o.persistent || f == "nonblocking";
        } else if (arg == "--topology")
            o.topology = value();
        else if (arg == "--overlap")
            o.overlap = o.nonblocking = true;
        else if (arg == "-h" || arg == "--help")
            throw Usage("");
        else
            throw Usage("unknown argument '" + arg + "'");
    }
    if (!sizes_given) o.sizes = parse_range("8:64K");
    if (o.bound && o.nonblocking) throw Usage("--bound is for blocking calls");
    return o;
}

// Checks the algorithm names of --algorithms against the registry (loom jobs only): each must
// name an algorithm of at least one of the collectives asked for.
void check_algorithm_names(const Options& o)
{
    for (const auto& name : o.algorithms) {
        if (name == "all" || name == "each" || name == "loom" || name == LOOM_FORCED_FALLBACK) continue;
        bool found = false;
        for (Collective c : o.collectives) found = found || loom::find_algorithm(c, name) != nullptr;
        if (!found) throw Usage("--algorithms: no collective asked for has an algorithm named '" + name + "'");
    }
}

// A column of the tables: one of loom's algorithms forced, loom's choice, Open MPI's default
// reached through loom ("fallback": loom forced to hand every call on), or Open MPI's default
// in a job without loom ("ompi").
struct Contender {
    std::string name;
    const Algorithm* algorithm = nullptr; // forced algorithm; nullptr for "loom", "fallback" and "ompi"
    bool loom = false;                    // loom's counters must agree: it served (or handed on) every call
    std::string setting;                  // "loom": the algorithm parameter the job set ("" by default)
    std::string forced_value() const { return algorithm ? std::string(algorithm->name) : setting; }
    bool hands_on() const { return name == LOOM_FORCED_FALLBACK; }
};

// The contenders of collective `c` asked for, whatever the size (registry order, "loom" last);
// `setting` is the job's own value of the collective's algorithm parameter.
std::vector<Contender> contenders_for(Collective c, const Options& o, bool loom_enabled, const std::string& setting)
{
    if (!loom_enabled) return {Contender{"ompi", nullptr, false, ""}};
    const auto listed = [&](std::string_view name) {
        return std::find(o.algorithms.begin(), o.algorithms.end(), name) != o.algorithms.end();
    };
    std::vector<Contender> list;
    for (const Algorithm& a : loom::all_algorithms())
        if (a.collective == c && (listed("all") || listed("each") || listed(a.name)))
            list.push_back(Contender{std::string(a.name), &a, true, ""});
    if (listed(LOOM_FORCED_FALLBACK))
        list.push_back(Contender{LOOM_FORCED_FALLBACK, nullptr, true, LOOM_FORCED_FALLBACK});
    if (listed("all") || listed("loom")) list.push_back(Contender{"loom", nullptr, true, setting});
    return list;
}

struct Result {
    std::string contender;
    double time_us;
    long iterations;
    double busbw_gbps; // bus bandwidth (see the top of the file); 0 for barrier
};

// The bytes one link carries per message byte (NCCL's bus bandwidth factors), by layout: a
// vector crosses one link (bcast, reduce, scan, exscan) or, reduced on every rank from every
// rank (allreduce), two of its (P-1)/P parts; a split, gathered or scattered call moves (P-1)/P
// of the whole vector into or out of each rank; an exchange with every peer, P-1 blocks.
double bus_factor(Collective c, int ranks)
{
    const double p = ranks;
    switch (loom::layout(c)) {
    case Layout::vector:
        return loom::reduces(c) && !loom::rooted(c) && loom::tools::reach(c) == loom::tools::Reach::all ? 2 * (p - 1) / p
                                                                                                       : 1;
    case Layout::split:
    case Layout::gathered:
    case Layout::scattered: return (p - 1) / p;
    case Layout::per_peer:
    case Layout::per_peer_v: return p - 1;
    case Layout::none:
    case Layout::neighbour_gathered: // a topology's links are not the bus: no bus bandwidth shown
    case Layout::per_neighbour: return 0;
    }
    return 0; // not reached: every layout is a case above (no default, so -Wswitch names a new one)
}

constexpr std::size_t kBusBandwidthFrom = 64 * 1024; // smaller sizes are latency-bound

struct Job {
    int rank, size, nodes, ranks_per_node;
    bool loom_enabled;
    double started; // MPI_Wtime at the start, for progress
    const Options* options;
    bench::Buffers* buffers;
    std::ofstream* csv;            // rank 0, with --csv
    bench::SingleCopyBound* bound; // with --bound
};

// Forces the contender's algorithm ("loom": the job's own setting) for the collective's next calls; every rank
// calls it alike, between collectives. Nothing to do for "ompi".
void force(const std::string& collective, const Contender& k)
{
    if (!k.loom) return;
    const std::string value = k.forced_value();
    if (!loom::tools::force_algorithm(collective, value))
        throw std::runtime_error("cannot set " + loom::tools::algorithm_control(collective) + " through MPI_T");
}

// What one contender did at one size.
struct Run {
    long iterations = 0;
    long calls = 0; // calls made with it forced, warm-up included
    unsigned long long served = 0, declined = 0;
    bool correct = true;
    std::vector<double> seconds; // rank 0: one per round
};

// Reads loom's counters around a stretch of calls made with one contender forced.
class CounterWindow {
public:
    CounterWindow(loom::tools::LoomCounters* c, Run& run) : counters_(c), run_(run)
    {
        if (counters_) served0_ = counters_->served(), declined0_ = counters_->declined();
    }
    ~CounterWindow()
    {
        if (!counters_) return;
        run_.served += counters_->served() - served0_;
        run_.declined += counters_->declined() - declined0_;
    }

private:
    loom::tools::LoomCounters* counters_;
    Run& run_;
    unsigned long long served0_ = 0, declined0_ = 0;
};

// Every rank learns whether any rank raised `flag`.
bool any_rank(bool flag, int rank, int size)
{
    return bench::from_root(long(bench::max_over_ranks(flag ? 1.0 : 0.0, rank, size)), size) != 0;
}

// Checks and times every contender at one size; rank 0 returns the results. Every rank
// returns nullopt (rank 0 after printing why) if a contender gave a wrong result or was not
// served by loom.
std::optional<std::vector<Result>> bench_size(Collective c, const bench::Case& k, const std::vector<Contender>& all,
                                              loom::tools::LoomCounters* counters, const Job& job)
{
    const std::string name(loom::to_string(c));
    const Options& o = *job.options;
    std::vector<const Contender*> here;
    // On one node a hierarchical algorithm is its intra-node phase alone: shm under another
    // name, not worth the time of a contender.
    // Operations never use single copy (coll_loom_call.c); the segment is made (main).
    // (The neighbourhood collectives' message size is 0 for loom: make_case.)
    const bool neighbours = loom::counts(c) == loom::Counts::per_neighbour;
    loom::CallShape shape{job.size, neighbours ? 0 : k.bytes, true, job.nodes, job.ranks_per_node};
    shape.single_copy = !o.nonblocking;
    shape.stencil = neighbours && bench::topology() != nullptr && bench::topology()->stencil;
    for (const Contender& x : all)
        if (!x.algorithm || (!loom::why_not(*x.algorithm, shape) && !(x.algorithm->needs.topology && job.nodes < 2)))
            here.push_back(&x);
    if (here.empty()) return std::vector<Result>{};
    const std::string where = " at " + format_size(k.bytes) + " bytes (np " + std::to_string(job.size) + ")";
    auto fail = [&](const std::string& what) {
        if (job.rank == 0) std::fprintf(stderr, "loom-bench: %s\n", what.c_str());
    };

    // One checked call, then warm-up and the iteration count, per contender.
    std::vector<Run> runs(here.size());
    const bench::IterationPlan plan{
        .target_seconds = o.seconds, .min_iterations = 3, .max_iterations = 200000, .refine = true};
    for (std::size_t i = 0; i < here.size(); ++i) {
        force(name, *here[i]);
        CounterWindow window(here[i]->loom ? counters : nullptr, runs[i]);
        runs[i].correct = bench::call_and_verify(k, *job.buffers, job.rank, job.size);
        runs[i].calls = 1;
        runs[i].iterations = bench::plan_iterations(k, *job.buffers, job.rank, job.size, plan, runs[i].calls);
    }
    bool failed = false;
    for (std::size_t i = 0; i < here.size(); ++i)
        if (any_rank(!runs[i].correct, job.rank, job.size)) {
            fail(name + " " + here[i]->name + where + ": wrong result");
            failed = true;
        }
    if (failed) return std::nullopt;

    // The timed rounds, contenders interleaved.
    for (int round = 0; round < o.repeats; ++round)
        for (std::size_t i = 0; i < here.size(); ++i) {
            force(name, *here[i]);
            CounterWindow window(here[i]->loom ? counters : nullptr, runs[i]);
            bench::call_once(k, *job.buffers); // a first call after switching, untimed
            runs[i].seconds.push_back(bench::timed_run(k, *job.buffers, job.rank, job.size, runs[i].iterations));
            runs[i].calls += 1 + runs[i].iterations;
        }

    // With --overlap: the same calls with computation as long as each contender's pure time
    // in between (the same on every rank: rank 0's median), rounds interleaved again.
    std::vector<double> compute(here.size(), 0.0);
    std::vector<std::vector<double>> with_compute(here.size());
    if (o.overlap) {
        for (std::size_t i = 0; i < here.size(); ++i)
            compute[i] = double(bench::from_root(long(bench::median(runs[i].seconds) * 1e9), job.size)) / 1e9;
        for (int round = 0; round < o.repeats; ++round)
            for (std::size_t i = 0; i < here.size(); ++i) {
                force(name, *here[i]);
                CounterWindow window(here[i]->loom ? counters : nullptr, runs[i]);
                with_compute[i].push_back(
                    bench::timed_overlap_run(k, *job.buffers, job.rank, job.size, runs[i].iterations, compute[i]));
                runs[i].calls += runs[i].iterations;
            }
    }

    // loom served every call of its forced contenders (barrier: timed_run's own barriers count
    // too). loom's own choice may hand calls on by a `fallback` rule: then every call is counted
    // as served or declined (at least once: see may_return). "fallback" must have handed every
    // call on.
    for (std::size_t i = 0; i < here.size(); ++i) {
        if (!here[i]->loom) continue;
        const auto calls = (unsigned long long)runs[i].calls;
        const auto counted = here[i]->algorithm    ? runs[i].served
                             : here[i]->hands_on() ? runs[i].declined
                                                   : runs[i].served + runs[i].declined;
        // A call loom's own choice hands on may come back to loom: han runs its phases on
        // sub-communicators of its own (Open MPI 5 across nodes), where loom serves them, and
        // loom's counters are the process's: those calls count too.
        const bool may_return = here[i]->algorithm == nullptr && !here[i]->hands_on() && runs[i].declined > 0;
        bool served = (c == Collective::barrier || may_return ? counted >= calls : counted == calls) &&
                      (here[i]->algorithm == nullptr || runs[i].declined == 0) &&
                      (!here[i]->hands_on() || runs[i].served == 0);
        // A persistent request loom hands on is counted once, at its init: its starts are the
        // next component's.
        if (o.persistent && here[i]->algorithm == nullptr && runs[i].served == 0 && runs[i].declined > 0) served = true;
        if (!served)
            std::fprintf(stderr, "loom-bench: rank %d: %s %s%s: loom served %llu and declined %llu of %llu calls\n",
                         job.rank, name.c_str(), here[i]->name.c_str(), where.c_str(), runs[i].served, runs[i].declined,
                         calls);
        if (any_rank(!served, job.rank, job.size)) {
            fail(name + " " + here[i]->name + where + ": loom did not serve every call");
            failed = true;
        }
    }
    if (failed) return std::nullopt;

    std::vector<Result> results;
    if (job.rank == 0) {
        for (std::size_t i = 0; i < here.size(); ++i) {
            const double seconds = bench::median(runs[i].seconds);
            results.push_back(Result{here[i]->name, seconds / bench::kUs, runs[i].iterations,
                                     seconds > 0 ? bus_factor(c, job.size) * double(k.bytes) / seconds / 1e9 : 0});
            if (o.overlap)
                results.push_back(Result{here[i]->name + "+compute", bench::median(with_compute[i]) / bench::kUs,
                                         runs[i].iterations, 0});
        }
    }
    return results;
}

void print_table(Collective c, const std::vector<Contender>& contenders,
                 const std::vector<std::pair<std::size_t, std::vector<Result>>>& rows, const Job& job)
{
    const std::string name(loom::to_string(c));
    const bool neighbours = loom::counts(c) == loom::Counts::per_neighbour;
    std::printf("\n%s%s, %s%s, np=%d: microseconds per call, median of %d interleaved runs\n",
                job.options->nonblocking && !job.options->persistent ? "i" : "",
                (name + (job.options->persistent ? "_init" : "")).c_str(),
                loom::reduces(c)           ? "MPI_DOUBLE + MPI_SUM"
                : c == Collective::barrier ? "no data"
                                           : "MPI_BYTE",
                neighbours ? (" per neighbour, topology " + job.options->topology).c_str() : "", job.size,
                job.options->repeats);
    std::vector<std::string> columns; // the contenders (not their "+compute" runs)
    for (const Contender& x : contenders)
        for (const auto& row : rows)
            if (std::any_of(row.second.begin(), row.second.end(),
                            [&](const Result& r) { return r.contender == x.name; })) {
                columns.push_back(x.name);
                break;
            }
    const auto is_bound = [](const Result& r) { return r.contender == "bound"; };
    const bool bounded = std::any_of(rows.begin(), rows.end(), [&](const auto& row) {
        return std::any_of(row.second.begin(), row.second.end(), is_bound);
    });
    // One block of the table: a column per name of `cols`, the rows of `table` of at least
    // `from` bytes.
    using Rows = std::vector<std::pair<std::size_t, std::vector<Result>>>;
    auto block = [&](std::size_t from, double Result::*value, const Rows& table, const std::vector<std::string>& cols) {
        std::printf("%10s", "bytes");
        for (const auto& col : cols) std::printf(" %*s", int(std::max<std::size_t>(10, col.size())), col.c_str());
        std::printf("\n");
        for (const auto& [bytes, results] : table) {
            if (bytes < from) continue;
            std::printf("%10zu", bytes);
            for (const auto& col : cols) {
                const int width = int(std::max<std::size_t>(10, col.size()));
                const auto r =
                    std::find_if(results.begin(), results.end(), [&](const Result& x) { return x.contender == col; });
                if (r == results.end())
                    std::printf(" %*s", width, "-");
                else
                    std::printf(" %*.2f", width, (*r).*value);
            }
            std::printf("\n");
        }
    };
    std::vector<std::string> with_bound = columns;
    if (bounded) with_bound.push_back("bound");
    block(0, &Result::time_us, rows, with_bound);
    if (job.options->overlap) {
        // OSU's overlap: pure time t, time T with computation c = t in between; 100 (1 - (T - c) / t).
        std::vector<std::string> totals;
        for (const auto& col : columns) totals.push_back(col + "+compute");
        std::printf("%s, np=%d: microseconds per call with computation as long as the pure call in between\n",
                    name.c_str(), job.size);
        block(0, &Result::time_us, rows, totals);
        std::printf("%s, np=%d: overlap %% (100: the call hid wholly behind the computation)\n", name.c_str(),
                    job.size);
        Rows percent;
        for (const auto& [bytes, results] : rows) {
            std::vector<Result> row;
            for (const auto& col : columns) {
                const auto pure =
                    std::find_if(results.begin(), results.end(), [&](const Result& r) { return r.contender == col; });
                const auto total = std::find_if(results.begin(), results.end(),
                                                [&](const Result& r) { return r.contender == col + "+compute"; });
                if (pure == results.end() || total == results.end() || pure->time_us <= 0) continue;
                const double overlap = 100 * (1 - (total->time_us - pure->time_us) / pure->time_us);
                row.push_back(Result{col, std::max(0.0, overlap), 0, 0});
            }
            percent.emplace_back(bytes, row);
        }
        block(0, &Result::time_us, percent, columns);
    }
    if (bus_factor(c, job.size) > 0 && !rows.empty() && rows.back().first >= kBusBandwidthFrom) {
        std::printf("%s, np=%d: bus bandwidth, GB/s (the same runs, sizes from %s)\n", name.c_str(), job.size,
                    format_size(kBusBandwidthFrom).c_str());
        block(kBusBandwidthFrom, &Result::busbw_gbps, rows, columns);
    }
    if (bounded) {
        std::printf("%s, np=%d: %% of the single-copy bound (bound / time; tools/bench/bound.hpp)\n", name.c_str(),
                    job.size);
        Rows percent;
        for (const auto& [bytes, results] : rows) {
            const auto b = std::find_if(results.begin(), results.end(), is_bound);
            if (b == results.end()) continue;
            std::vector<Result> row;
            for (const Result& r : results)
                if (!is_bound(r) && r.time_us > 0)
                    row.push_back(Result{r.contender, 100 * b->time_us / r.time_us, 0, 0});
            percent.emplace_back(bytes, row);
        }
        block(0, &Result::time_us, percent, columns);
    }
    std::fflush(stdout);
}

// Runs every size of one collective; false (on every rank) if a contender failed.
bool bench_collective(Collective c, const Job& job)
{
    const std::string name(loom::to_string(c));
    const Options& o = *job.options;
    // What the job set coll_loom_<collective>_algorithm to (--mca, environment): "loom" keeps it.
    std::string setting;
    if (job.loom_enabled) {
        const auto value = loom::tools::loom_control(loom::tools::algorithm_control(name));
        if (!value) throw std::runtime_error("cannot read " + loom::tools::algorithm_control(name) + " through MPI_T");
        setting = *value;
    }
    const auto contenders = contenders_for(c, o, job.loom_enabled, setting);
    if (contenders.empty()) return true;
    std::optional<loom::tools::LoomCounters> counters;
    if (job.loom_enabled) {
        counters.emplace();
        const std::string counted = o.persistent ? name + "_init" : o.nonblocking ? "i" + name : name;
        if (!counters->open(counted)) throw std::runtime_error("loom's MPI_T counters for " + counted + " are missing");
    }
    if (job.rank == 0 && !setting.empty()) {
        std::printf("# the job sets coll_loom_%s_algorithm=\"%s\": contender \"loom\" runs with it\n", name.c_str(),
                    setting.c_str());
        std::fflush(stdout);
    }
    std::vector<std::pair<std::size_t, std::vector<Result>>> rows;
    const std::vector<std::size_t> barrier_size{0};
    bool ok = true;
    const auto& sizes = c == Collective::barrier ? barrier_size : o.sizes;
    for (std::size_t n = 0; n < sizes.size(); ++n) {
        const auto k = bench::make_case(c, sizes[n], job.size);
        if (!k) continue;
        if (job.rank == 0) {
            std::fprintf(stderr, "loom-bench: np %d, %s %s bytes (%zu of %zu), %.0f s so far\n", job.size, name.c_str(),
                         format_size(k->bytes).c_str(), n + 1, sizes.size(), MPI_Wtime() - job.started);
            std::fflush(stderr);
        }
        auto results = bench_size(c, *k, contenders, counters ? &*counters : nullptr, job);
        if (!results) {
            ok = false;
            break;
        }
        // Every rank measures the bound together (the same sizes on every rank).
        if (job.bound)
            if (const auto bound = job.bound->seconds(c, k->bytes); bound && job.rank == 0 && !results->empty())
                results->push_back(Result{"bound", *bound / bench::kUs, 0, 0});
        if (job.rank != 0 || results->empty()) continue;
        rows.emplace_back(k->bytes, *results);
        if (job.csv) {
            for (const Result& r : *results)
                *job.csv << name << ',' << r.contender << ',' << job.size << ',' << k->bytes << ',' << r.time_us << ','
                         << r.iterations << ',' << r.busbw_gbps << '\n';
            job.csv->flush();
        }
    }
    if (job.loom_enabled) force(name, Contender{"loom", nullptr, true, setting}); // back to the job's setting
    if (job.rank == 0 && !rows.empty()) print_table(c, contenders, rows, job);
    if (job.rank == 0 && counters) {
        std::printf("# loom %s: served %llu declined %llu\n", name.c_str(), counters->served(), counters->declined());
        std::fflush(stdout);
    }
    return ok;
}

} // namespace

int main(int argc, char** argv)
{
    if (loom::tools::print_version_if_asked(argc, argv, "loom-bench")) return 0;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    // loom serves this job if it is enabled on MPI_COMM_WORLD (or, a loom that does not count
    // where it is enabled, loaded); printed below for the tools that run loom-bench.
    const loom_state state = loom_state_on(MPI_COMM_WORLD);
    const bool loom_enabled = state == LOOM_ENABLED || state == LOOM_LOADED;
    try {
        o = parse_options(argc, argv);
        if (loom_enabled) check_algorithm_names(o);
    } catch (const Usage& e) {
        if (rank == 0) {
            if (*e.what()) std::fprintf(stderr, "loom-bench: %s\n", e.what());
            std::fputs(kUsage, stderr);
        }
        MPI_Finalize();
        return *e.what() ? 2 : 0;
    } catch (const std::exception& e) { // a bad size: parse_size's message
        if (rank == 0) std::fprintf(stderr, "loom-bench: %s\n%s", e.what(), kUsage);
        MPI_Finalize();
        return 2;
    }

    int status = 0;
    try {
        int ranks_per_node = 0;
        const int nodes = bench::count_nodes(rank, size, &ranks_per_node);
        std::ofstream csv;
        if (rank == 0 && !o.output.empty() && !std::freopen(o.output.c_str(), "w", stdout))
            throw std::runtime_error(o.output + ": cannot write");
        if (rank == 0 && !o.csv.empty()) {
            csv.open(o.csv);
            if (!csv) throw std::runtime_error(o.csv + ": cannot write");
            csv << "collective,contender,np,bytes,time_us,iterations,busbw_GBps\n";
        }
        if (rank == 0) {
            std::printf("# loom-bench: np=%d on %d node%s (%s, %s), %s\n", size, nodes, nodes == 1 ? "" : "s",
                        bench::host_name().c_str(), bench::cpu_name().c_str(), bench::now_text().c_str());
            std::printf("# %s\n", loom::tools::version_line("loom-bench").c_str());
            if (loom_enabled) {
                const auto plugin = loom::tools::loom_control("coll_loom_version");
                std::printf("# %s: %s\n", loom_state_text(state),
                            plugin ? ("loom " + *plugin + " (coll_loom_version)").c_str()
                                   : "a loom older than 0.2.0 (no coll_loom_version)");
                std::printf("# the contenders are loom's algorithms forced, and \"loom\" (its own choice) if asked for "
                            "(--algorithms %s)\n",
                            o.algorithms.size() == 1 ? o.algorithms[0].c_str() : "NAME,...");
            } else
                std::printf("# %s: the contender is \"ompi\", Open MPI's default selection\n", loom_state_text(state));
            std::printf("# each run: about %g s of calls; %d interleaved runs per contender\n", o.seconds, o.repeats);
            std::fflush(stdout);
        }
        // The neighbourhood collectives' topology, made only if one of them is asked for (a
        // bad --topology then stops the job, exit status 2).
        const bool any_neighbours = std::any_of(o.collectives.begin(), o.collectives.end(), [](Collective c) {
            return loom::counts(c) == loom::Counts::per_neighbour;
        });
        std::optional<bench::BenchTopology> topology;
        if (any_neighbours) {
            try {
                topology.emplace(bench::parse_topology(o.topology, size), rank);
            } catch (const bench::BadTopology& e) {
                if (rank == 0) std::fprintf(stderr, "loom-bench: %s\n%s", e.what(), kUsage);
                MPI_Finalize();
                return 2;
            }
            bench::set_topology(&*topology);
            if (rank == 0) {
                std::printf("# topology %s: %zu neighbours a rank (rank 0's:", o.topology.c_str(), topology->degree());
                for (int q : topology->neighbours) std::printf(" %d", q);
                std::printf(")\n");
            }
        }
        std::size_t max_bytes = 0;
        for (std::size_t s : o.sizes) max_bytes = std::max(max_bytes, s);
        bench::Buffers buffers(max_bytes * std::max<std::size_t>(1, topology ? topology->degree() : 1));
        bench::set_nonblocking(o.nonblocking);
        // A non-blocking call uses the shared segment only once a blocking call (or a
        // persistent init) has made it: one barrier with shm forced makes it, for both forms
        // alike (on one node; elsewhere shm is handed on).
        if (loom_enabled && o.nonblocking && nodes == 1 && size > 1) {
            if (!loom::tools::force_algorithm("barrier", "shm"))
                throw std::runtime_error("cannot set coll_loom_barrier_algorithm through MPI_T");
            MPI_Barrier(MPI_COMM_WORLD);
            if (topology) MPI_Barrier(topology->comm); // its own segment
            loom::tools::force_algorithm("barrier", "");
        }
        bench::set_persistent(o.persistent);
        bench::SingleCopyBound bound(rank, size, o.seconds);
        const Job job{rank,
                      size,
                      nodes,
                      ranks_per_node,
                      loom_enabled,
                      MPI_Wtime(),
                      &o,
                      &buffers,
                      csv.is_open() ? &csv : nullptr,
                      o.bound ? &bound : nullptr};
        for (Collective c : o.collectives)
            if (!bench_collective(c, job)) {
                status = 1;
                break;
            }
        if (csv.is_open()) {
            csv.close();
            if (!csv) throw std::runtime_error(o.csv + ": cannot write");
        }
        if (rank == 0 && !o.output.empty() && (std::fflush(stdout) != 0 || std::ferror(stdout)))
            throw std::runtime_error(o.output + ": cannot write");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loom-bench: rank %d: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
