// The hierarchical family: collectives in phases that keep traffic inside a node where they
// can (see hierarchical.cpp).
#pragma once

#include "collectives.hpp"

namespace loom {

void hierarchical_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void hierarchical_rs_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void hierarchical_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
void hierarchical_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);
void hierarchical_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);

} // namespace loom
