// loom's own reduction kernels for the predefined MPI ops on the predefined C types.
//
// Why our own: they are simple loops the compiler vectorises, they need no call into Open MPI
// per block, and they are right where Open MPI 4.1.4's AVX op component is not (it saturates
// unsigned 8-bit sums; MPI requires wrap-around). Integer SUM and PROD wrap modulo 2^bits for
// signed types too (computed in the unsigned type, so there is no undefined behaviour).
#pragma once

#include "loom_c_api.h"
#include "transport.hpp"

#include <optional>

namespace loom {

// The kernel for (op, type) as a type-erased Reduction, or nullopt when the pair is not a
// valid MPI combination (e.g. BAND on float, SUM on a value/index pair).
std::optional<Reduction> find_kernel(loom_op_t op, loom_type_t type);

} // namespace loom
