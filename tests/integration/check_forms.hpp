// The collectives as the MPI checks call them, in one of three forms (--form): blocking
// (MPI_Allreduce), non-blocking (MPI_Iallreduce, then MPI_Wait) or persistent
// (MPI_Allreduce_init - MPIX_Allreduce_init on Open MPI 4.1 - then MPI_Start, MPI_Wait and
// MPI_Request_free). Every check runs through these, so each form gets the same cases:
// derived datatypes, MPI_IN_PLACE, zero counts, every forced algorithm. There is one function
// per row of algorithms/collectives.def, named after it and taking the arguments of its MPI
// blocking function (check::allreduce(sbuf, rbuf, count, type, op, comm)); it bundles them by
// the row's signature class and calls through the one three-form caller that loom-bench uses
// too (tools/common/mpi_call.hpp).
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "mpi_call.hpp"

#include <string>

namespace check {

using Form = loom::tools::Form;
extern Form form;
// "allreduce", "iallreduce" or "allreduce_init": the name of loom's MPI_T counters.
std::string form_name(const char* collective);

#define LOOM_COLLECTIVE(name, NAME, S, reduces, rooted, layout, Mpi, ...)                                  \
    template <class... A>                                                                             \
    int name(A... a)                                                                                  \
    {                                                                                                 \
        return loom::tools::call(loom::Collective::name, form, loom::tools::args_##S(a...));          \
    }
#include "collectives.def"
#undef LOOM_COLLECTIVE

} // namespace check
