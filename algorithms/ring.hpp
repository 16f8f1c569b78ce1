// The ring family: every rank sends only to rank + 1 and receives only from rank - 1.
// Bandwidth-optimal, latency linear in P. Schedules and costs are in ring.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void ring_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
// The chunked ring: each block is cut into segments so that reducing one segment overlaps
// the transfer of the next (gloo's allreduce_ring_chunked).
void ring_pipelined_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void ring_reduce_scatter(Transport& net, MemoryOps& mem, const ReduceScatterArgs& args);
void ring_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);

} // namespace loom
