// loom-sim-calibrate (tools/meson.build builds it from the three .cpp files named below): fits a
// loom-sim cost model (model.hpp) to this machine with --measure, and checks the model's
// predictions for loom's real algorithms against MPI measurements of the same calls with --check.
// How each value is measured and compared is described at the top of calibrate.cpp.
//
//   calibrate.cpp          the tool's description, option parsing, main()
//   calibrate_measure.cpp  --measure: ping-pong, stream, fits, local timings, the model file
//   calibrate_check.cpp    --check: every algorithm forced, verified, timed and simulated
//
// This header holds what the parts share: the options, and the helpers from bench_core.hpp.
#pragma once

#include "bench_core.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace loom::calibrate {

using loom::bench::kUs;

struct Options {
    bool measure = false, check = false;
    std::string out, model_path, csv, name = "this-machine", command;
    std::vector<std::size_t> sizes{8, 1024, 64 * 1024, 1024 * 1024};
    int repeats = 3;
};

// The small MPI and text helpers (median, sleeping_barrier, gather_to_root, max_over_ranks,
// from_root, read_cvar, now_text, cpu_name, host_name) live in tools/bench/bench_core.hpp,
// shared with loom-bench.
using loom::bench::cpu_name;
using loom::bench::from_root;
using loom::bench::gather_to_root;
using loom::bench::host_name;
using loom::bench::max_over_ranks;
using loom::bench::median;
using loom::bench::now_text;
using loom::bench::read_cvar;
using loom::bench::sleeping_barrier;

// The two modes (calibrate_measure.cpp, calibrate_check.cpp); every rank calls one.
int run_measure(const Options& o, int rank, int size);
int run_check(const Options& o, int rank, int size);

} // namespace loom::calibrate
