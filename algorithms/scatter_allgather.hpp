// van de Geijn's broadcast: a binomial scatter of P blocks, then a ring allgather. See
// scatter_allgather.cpp.
#pragma once

#include "collectives.hpp"

namespace loom {

void scatter_allgather_bcast(Transport& net, MemoryOps& mem, const BcastArgs& args);

} // namespace loom
