// loom-sim-calibrate (tools/meson.build builds it from the three .cpp files named below): fits a
// loom-sim cost model (model.hpp) to this machine with --measure, and checks the model's
// predictions for loom's real algorithms against MPI measurements of the same calls with --check.
// How each value is measured and compared is described at the top of calibrate.cpp.
//
//   calibrate.cpp          the tool's description, the helpers declared here, option parsing, main()
//   calibrate_measure.cpp  --measure: ping-pong, stream, fits, local timings, the model file
//   calibrate_check.cpp    --check: every algorithm forced, verified, timed and simulated
//
// This header holds what the parts share: the options and the small MPI and text helpers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace loom::calibrate {

constexpr double kUs = 1e-6;

struct Options {
    bool measure = false, check = false;
    std::string out, model_path, csv, name = "this-machine", command;
    std::vector<std::size_t> sizes{8, 1024, 64 * 1024, 1024 * 1024};
    int repeats = 3;
};

// The median of `v` (0 if it is empty).
double median(std::vector<double> v);

// A barrier whose waiting ranks sleep instead of spinning, so on a machine with few cores the
// ranks that are not measuring do not steal the measuring ranks' CPU.
void sleeping_barrier();

// Rank 0 gets every rank's value (through MPI_Gather: not a collective loom serves, so it
// never runs a forced algorithm and never counts in loom's counters).
std::vector<double> gather_to_root(double value, int rank, int size);

// Rank 0 gets the largest of every rank's value (the others get 0).
double max_over_ranks(double value, int rank, int size);

// Every rank gets rank 0's value (MPI_Scatter, for the same reason as gather_to_root).
long from_root(long value, int size);

// An integer MPI control variable (e.g. btl_vader_eager_limit), or nothing if it is absent.
std::optional<unsigned long long> read_cvar(const std::string& name);

// The local date and time, e.g. "2024-05-01 12:00:00 UTC".
std::string now_text();

// "model name" from /proc/cpuinfo, without characters a model file's value may not hold.
std::string cpu_name();

std::string host_name();

// The two modes (calibrate_measure.cpp, calibrate_check.cpp); every rank calls one.
int run_measure(const Options& o, int rank, int size);
int run_check(const Options& o, int rank, int size);

} // namespace loom::calibrate
