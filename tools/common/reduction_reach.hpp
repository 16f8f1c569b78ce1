// Whose inputs reach a vector reduction's result on rank r: every rank's (allreduce, reduce), or
// a prefix, ranks 0..r (scan) or 0..r-1 (exscan). collectives.def has no column for it (it
// says which ranks get a result, not from whom), so this is the one place that names the two
// prefix reductions: for the tests' references (tests/integration/call_model.cpp) and
// loom-bench's bus bandwidth.
#pragma once

#include "registry.hpp"

namespace loom::tools {

enum class Reach { all, inclusive_prefix, exclusive_prefix };

constexpr Reach reach(Collective c)
{
    return c == Collective::scan     ? Reach::inclusive_prefix
           : c == Collective::exscan ? Reach::exclusive_prefix
                                     : Reach::all;
}

} // namespace loom::tools
