// Binomial trees: lg P steps, the root's subtree doubling each step. See binomial.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void binomial_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);
// Order-preserving for non-commutative ops: every partial result covers a contiguous range
// of ranks and is combined lower range first.
void binomial_reduce(Transport& net, MemoryOps& mem, const ReduceArgs& args);
// binomial_reduce to rank 0, then binomial_bcast: order-preserving.
void binomial_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);

} // namespace loom
