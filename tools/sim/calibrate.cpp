// loom-sim-calibrate: fits a loom-sim cost model (model.hpp) to this machine, and checks the
// model's predictions for loom's real algorithms against MPI measurements of the same calls.
//
//   mpirun -np N loom-sim-calibrate --measure --out FILE.model [--name NAME] [--command TEXT]
//   mpirun -np N loom-sim-calibrate --check --model FILE.model [--csv FILE] [--sizes 8,1K,64K,1M]
//                                   [--repeats R]
// (both with loom's plugin where Open MPI finds it, all N ranks on one node; --check stops unless
// loom is enabled: tools/common/loom_state.h)
//
// --measure: what each model key comes from
//   * intra_latency_us, intra_bandwidth_GBps: MPI_Send/MPI_Recv ping-pong between ranks 0 and 1
//     (the others wait in a sleeping barrier) at 0 B and 1 B .. 4 MiB in powers of two; each
//     size is timed in several repeats of many round trips, and the median half round trip
//     is the size's point. The latency is the intercept of a least-squares line through the
//     points up to 1 KiB, the bandwidth 1 / the slope of one through the points from 64 KiB
//     to 1 MiB (one line through all points would let the big sizes set the intercept).
//   * reduce_bandwidth_GBps: loom's own sum-of-doubles kernel (loom_find_kernel) on 1 MiB of
//     doubles, bytes of the in/out vector per second, median of repeats, rank 0 alone.
//   * copy_bandwidth_GBps: memcpy of 1 MiB, bytes copied per second, the same way.
//   * eager_limit_bytes: the shared-memory BTL's btl_vader_eager_limit, read through MPI_T
//     (65536 if it cannot be read).
//   * cores_per_node: online processors (sysconf); ranks_per_node: N.
//   * inter_* = intra_*: one node has no network to measure (the description says so).
//     When ranks 0 and 1 run on different nodes the ping-pong measured the network instead
//     (bandwidth over 1-4 MiB, the TCP BTL's eager limit), and:
//   * inter_exchange_bandwidth_GBps: ranks 0 and 1 send each other the same size at once
//     (MPI_Irecv + MPI_Isend + MPI_Waitall) from 64 KiB to 4 MiB; written only across nodes
//     and only when the least-squares slope over 1-4 MiB is over 10% above the ping-pong's (the
//     two directions of one connection hinder each other: ob1's TCP BTL behind a rate limit).
//   * inter_exchange_after_bytes, with the key above: F = (a - a_x) / (b_x - b), a the latency
//     fit's intercept, b the bandwidth fit's slope, a_x + m b_x the exchange line: the model's
//     a + F b + (m - F) b_x for an exchange's direction is then that line (the first F bytes move
//     at the one-way rate; below F an exchange costs what a one-way message does).
// The file gets comment lines recording the date, the command and every raw measurement;
// rank 0 writes it and reads it back with load_model() to check the round trip.
//
// --check: for allreduce, allgather, bcast, reduce_scatter_block and barrier, every algorithm
// of loom's registry that can serve N ranks, at each size (loom's message size, RULES.md: the
// whole vector for allgather and reduce_scatter_block; MPI_DOUBLE sum for reductions,
// MPI_BYTE otherwise; reductions skip sizes whose per-rank block is under one double): forces
// the algorithm through MPI_T (coll_loom_<collective>_algorithm), checks one call's result,
// times it OSU-style (warm-up, barrier, enough iterations for about 0.1 s, the maximum over
// ranks of the mean time per call; the median of --repeats such runs), checks with loom's
// MPI_T counters that loom served every call, and compares with loom::sim::simulate() on the
// model (N ranks on one node, the segment and PAT buffer sizes this job's loom uses).
// Rank 0 prints markdown tables: one row per point (error % = (predicted - measured) /
// measured), then the median absolute error per collective.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "calibrate.hpp"
#include "size_text.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::calibrate {

// ---- command line ------------------------------------------------------------------------

namespace {

using loom::tools::parse_size;

const char* const kUsage =
    "usage: mpirun -np N loom-sim-calibrate --measure --out FILE.model [--name NAME] [--command TEXT]\n"
    "       mpirun -np N loom-sim-calibrate --check --model FILE.model [--csv FILE] [--sizes 8,1K,64K,1M]\n"
    "                                       [--repeats R]\n";

std::vector<std::size_t> parse_sizes(const std::string& text)
{
    std::vector<std::size_t> sizes;
    std::stringstream in(text);
    std::string word;
    while (std::getline(in, word, ',')) sizes.push_back(parse_size(word));
    if (sizes.empty() || *std::max_element(sizes.begin(), sizes.end()) > (1u << 30))
        throw std::invalid_argument("--sizes: give one or more sizes up to 1G");
    return sizes;
}

Options parse_options(int argc, char** argv, int size)
{
    Options o;
    o.command = "mpirun -np " + std::to_string(size);
    for (int i = 0; i < argc; ++i) o.command += std::string(" ") + argv[i];
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--measure")
            o.measure = true;
        else if (arg == "--check")
            o.check = true;
        else if (arg == "--out")
            o.out = value();
        else if (arg == "--model")
            o.model_path = value();
        else if (arg == "--csv")
            o.csv = value();
        else if (arg == "--name")
            o.name = value();
        else if (arg == "--command")
            o.command = value();
        else if (arg == "--sizes")
            o.sizes = parse_sizes(value());
        else if (arg == "--repeats")
            o.repeats = std::max(1, std::stoi(value()));
        else
            throw std::invalid_argument("unknown argument '" + arg + "'");
    }
    if (o.measure == o.check) throw std::invalid_argument("give exactly one of --measure and --check");
    if (o.measure && o.out.empty()) throw std::invalid_argument("--measure needs --out FILE");
    if (o.check && o.model_path.empty()) throw std::invalid_argument("--check needs --model FILE");
    if (size < 2) throw std::invalid_argument("run with at least 2 ranks");
    return o;
}

} // namespace
} // namespace loom::calibrate

int main(int argc, char** argv)
{
    using namespace loom::calibrate;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    Options o;
    try {
        o = parse_options(argc, argv, size);
    } catch (const std::exception& e) {
        if (rank == 0) std::fprintf(stderr, "loom-sim-calibrate: %s\n%s", e.what(), kUsage);
        MPI_Finalize();
        return 2;
    }
    try {
        if (o.measure)
            run_measure(o, rank, size);
        else
            run_check(o, rank, size);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loom-sim-calibrate: rank %d: %s\n", rank, e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return 0;
}
