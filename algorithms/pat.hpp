// PAT, Parallel Aggregated Trees (Jeaugey, NVIDIA 2025; NCCL 2.23+): allgather,
// reduce-scatter and allreduce in a logarithmic number of messages on any number of ranks,
// far first (allgather) / near first (reduce-scatter), with an intermediate buffer bounded
// independently of the operation's size. The schedule and its proofs are in pat.cpp; this
// header is the schedule generator every executor (and tools/loom-schedule) uses.
#pragma once

#include "collectives.hpp"

#include <cstddef>

namespace loom {

// Terms: n ranks, L = ceil(lg n); A the aggregation (a power of two, 1 <= A <= 2^L / 2: the
// most blocks one message carries); D = 2^L / A the size of the sub-trees that run linearly.
struct PatPlan {
    int ranks = 1;               // n
    int levels = 0;              // L = ceil(lg n)
    int aggregation = 1;         // A
    int subtree = 1;             // D = 2^L / A
    std::size_t piece_bytes = 0; // A == 1 and a block larger than the buffer: blocks travel in
                                 // pieces of this many bytes; 0 = whole blocks
};

// The plan for n ranks whose largest block is max_block_bytes, given an intermediate buffer of
// buffer_bytes that must hold `staging` blocks per aggregated block (allgather 2: a send and
// a receive staging area; reduce-scatter 3: accumulators too). A is the largest power of two
// with staging x A x max_block_bytes <= buffer_bytes, clamped to [1, 2^L / 2].
PatPlan pat_plan(int ranks, std::size_t max_block_bytes, std::size_t buffer_bytes, int staging);

// The plan with an explicit aggregation (tests, tools): A rounded down to a power of two and
// clamped as above; whole blocks.
PatPlan pat_plan_with_aggregation(int ranks, int aggregation);

// One step of the allgather schedule, the same for every rank (the schedule is
// rank-symmetric): rank c sends to c + distance the blocks of origin c - h, and receives from
// c - distance the blocks of origin c - distance - h, for h = 0, stride, 2 stride, ...,
// (count - 1) stride. A step with count 0 sends nothing and is skipped by executors.
// Reduce-scatter runs the same steps in reverse order with the data flowing backwards.
struct PatStep {
    int distance;
    int stride;
    int count;
    bool linear; // false: the logarithmic part (top of the trees); true: the linear part
};

// Number of steps of the plan (lg A logarithmic + D - 1 linear), including empty ones.
int pat_step_count(const PatPlan& plan);

// Step i (0-based, allgather order: far first). A pure function: O(1) time and memory.
PatStep pat_step(const PatPlan& plan, int i);

// Default intermediate buffer (coll_loom_pat_buffer_size).
inline constexpr std::size_t kPatDefaultBufferBytes = std::size_t(1) << 20;

// The executors. Each uses args.buffer_bytes (0: kPatDefaultBufferBytes) to plan, and never
// allocates more scratch than that buffer (plus nothing proportional to n x block).
void pat_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void pat_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
// PAT reduce-scatter of the vector's P blocks (BlockPartition), then PAT allgather.
void pat_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);

} // namespace loom
