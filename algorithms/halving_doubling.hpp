// Recursive vector halving / distance doubling (Rabenseifner; Thakur, Rabenseifner & Gropp
// 2005). Schedules, costs and the handling of non-power-of-two sizes are in
// halving_doubling.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void halving_doubling_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
// Blocks are delivered in rank order (the bit-reversal reorder of Sack & Gropp 2012).
void halving_doubling_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
// Reduce-scatter, then a gather of the blocks to the root.
void halving_doubling_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);

} // namespace loom
