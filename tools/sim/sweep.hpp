// Many simulations at once: every (algorithm, message size) pair of one collective on one
// described cluster, run in parallel threads (each simulation is single-threaded and
// deterministic, so the results do not depend on the thread count), then the winner per
// size and a rule file choosing the winners.
#pragma once

#include "engine.hpp"

#include <functional>
#include <string>
#include <vector>

namespace loom::sim {

struct SweepSpec {
    const Model* model = nullptr;
    std::vector<const Algorithm*> algorithms; // all of one collective
    std::vector<std::size_t> sizes;
    Scenario shape; // ranks, ranks per node, root, segment...: every
                    // point's scenario, with its algorithm and size
    int jobs = 1;
    std::function<void(std::size_t done, std::size_t total)> progress; // may be empty
};

struct SweepPoint {
    const Algorithm* algorithm;
    std::size_t bytes; // as asked; result.bytes is what was simulated
    Result result;
    std::string error; // non-empty: the simulation failed (result is empty)
};

// Size-major: all algorithms for sizes[0], then sizes[1], ...
std::vector<SweepPoint> run_sweep(const SweepSpec& spec);

// Powers of two from lo to hi inclusive (lo rounded up to a power of two; lo = 0 starts at 1
// after a point at 0).
std::vector<std::size_t> power_of_two_sizes(std::size_t lo, std::size_t hi);

struct Winner {
    std::size_t bytes;
    const Algorithm* algorithm; // fastest
    double seconds;
    const Algorithm* runner_up; // second fastest, or nullptr
    double runner_up_seconds;
};

// The fastest algorithm at each size (ties: the earlier in the registry). Failed points never
// win; a size whose blocks round down to nothing (allgather of fewer bytes than ranks) is left out.
std::vector<Winner> winners(const std::vector<SweepPoint>& points);

// A loom rule file choosing the winners for this exact communicator size: the winner at
// size s_i serves [s_i, s_{i+1} - 1] (the first from 0, the last to *), neighbouring sizes
// with the same winner merged. `comment` lines go at the top, each prefixed with "# ".
std::string emit_rules(const std::vector<Winner>& winners, int ranks, const std::vector<std::string>& comment,
                       std::size_t segment_bytes, std::size_t buffer_bytes);

} // namespace loom::sim
