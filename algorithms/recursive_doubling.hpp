// Recursive doubling: lg P steps of pairwise exchanges at distance 1, 2, 4, ...; sizes that
// are not a power of two fold the extra ranks in first and out last. See
// recursive_doubling.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

// Order-preserving: serves non-commutative ops (the lower-ranked side is always the left
// operand).
void recursive_doubling_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);
void recursive_doubling_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void recursive_doubling_barrier(Transport& net, MemoryOps& mem, const BarrierArgs& args);

} // namespace loom
