// Hierarchical collectives in segments whose phases overlap, and the hierarchical
// reduce-scatter (see hierarchical_segmented.cpp).
#pragma once

#include "collectives.hpp"

namespace loom {

void hierarchical_seg_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void hierarchical_seg_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
void hierarchical_seg_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
// reduce_scatter and reduce_scatter_block.
void hierarchical_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
void hierarchical_seg_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);

} // namespace loom
