// loom-sim's engine: runs one of loom's real algorithms (the registry's code, unchanged) for
// every rank of a simulated communicator and times it in virtual time under a cost Model.
//
// How: each rank runs the algorithm in its own fiber against a Transport that records what
// the rank posts (sends, receives, waits) and a MemoryOps that records what it computes
// (copies, reductions) without touching data; buffers are addresses in a reserved,
// inaccessible region, so an algorithm that touched memory behind MemoryOps's back would
// fault. A discrete-event loop replays those operations in time order: MPI matching (per
// sender, in posting order), eager and rendezvous transfers, the port and fat-tree-link
// contention of model.hpp, and wait_all() completing when its last operation does.
// Deterministic: the same scenario gives the same result, bit for bit.
//
// Cost: O(messages x log ranks) time; memory O(ranks) plus what the algorithm itself holds
// per rank while all ranks are mid-call.
#pragma once

#include "model.hpp"
#include "registry.hpp"

#include <cstddef>
#include <vector>

namespace loom::sim {

struct Scenario {
    const Algorithm* algorithm = nullptr; // the collective is algorithm->collective
    int ranks = 1;
    int ranks_per_node = 0;        // 0: the model's
    std::size_t bytes = 0;         // loom's message size for the collective (RULES.md)
    std::size_t elem_size = 1;     // reductions: element size (bytes is rounded down to it)
    std::size_t segment_bytes = 0; // as coll_loom_segment_size (0: the algorithm's default)
    std::size_t buffer_bytes = 0;  // as coll_loom_pat_buffer_size (0: the default)
    int root = 0;
};

struct Result {
    double seconds = 0;           // until the last rank returned from the algorithm
    std::size_t bytes = 0;        // the message size actually simulated (blocks round down)
    std::size_t messages_max = 0; // messages one rank sent, the most over ranks
    double messages_mean = 0;
    std::size_t bytes_sent_max = 0; // bytes one rank sent, the most over ranks
    double bytes_sent_mean = 0;
    std::size_t total_messages = 0;
    // Bytes sent, summed over ranks, by the highest level they reached: [0] within a node,
    // [1] node to node through one switch, [l] through level-l switches (fat tree).
    std::vector<double> bytes_by_level;
    int nodes = 1;
    int levels = 1; // switch levels in use (1 without a fat tree)
};

// The call every rank makes in a scenario, as the glue would describe it, on the given
// buffers (a reduction's function is a placeholder that must not be called). Movable, not
// copyable: call.counts points into counts.
struct CallLayout {
    loom_call_t call{};
    std::vector<std::size_t> counts;
    std::size_t bytes = 0;        // the message size it describes (blocks round down)
    std::size_t buffer_bytes = 0; // the most bytes either buffer spans
    CallLayout() = default;
    CallLayout(CallLayout&&) = default;
    CallLayout& operator=(CallLayout&&) = default;
    CallLayout(const CallLayout&) = delete;
    CallLayout& operator=(const CallLayout&) = delete;
};
CallLayout layout_call(const Scenario& scenario, const void* sendbuf, void* recvbuf);

// Throws std::invalid_argument for an impossible scenario, std::runtime_error if the
// algorithm deadlocks or leaves messages unmatched (a schedule bug).
Result simulate(const Model& model, const Scenario& scenario);

} // namespace loom::sim
