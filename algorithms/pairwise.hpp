// Pairwise exchange alltoall: P - 1 steps, in step k rank r sends to r + k and receives
// from r - k. See pairwise.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void pairwise_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args);

} // namespace loom
