// The ring family.
#pragma once

#include "collectives.hpp"

namespace loom {

// Ring allreduce: a ring reduce-scatter followed by a ring allgather (Patarasuk & Yuan 2009;
// gloo's allreduce_ring). See ring.cpp for the schedule and its cost.
void ring_allreduce(Transport& net, MemoryOps& mem, const AllreduceArgs& args);

} // namespace loom
