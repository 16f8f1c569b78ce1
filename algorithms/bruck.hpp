// Bruck et al. (1997): ceil(lg P) steps for any P, sending to rank - 2^k and receiving from
// rank + 2^k (or the reverse). See bruck.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void bruck_allgather(Transport& net, MemoryOps& mem, const AllgatherArgs& args);
void bruck_alltoall(Transport& net, MemoryOps& mem, const AlltoallArgs& args);
// The dissemination barrier (Hensgen, Finkel & Manber 1988), Bruck's pattern with no data.
void bruck_barrier(Transport& net, MemoryOps& mem, const BarrierArgs& args);

} // namespace loom
