// Helpers the MPI checks use (collectives_check, exactness_check, take_part_check): how many
// nodes a communicator spans, and setting one of loom's control variables through MPI_T or
// stopping the job (a check that cannot force an algorithm would test loom's own choice
// instead). The driver of collectives_check and exactness_check is check_variants.hpp.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <string>

namespace check_common {

// The nodes `comm` spans, as MPI_COMM_TYPE_SHARED groups its ranks; *most gets the most ranks
// on one of them.
inline int count_nodes(MPI_Comm comm, int* most)
{
    MPI_Comm local;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int local_rank = 0, local_size = 0, nodes = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    const int leader = local_rank == 0 ? 1 : 0;
    MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Allreduce(&local_size, most, 1, MPI_INT, MPI_MAX, comm);
    MPI_Comm_free(&local);
    return nodes;
}

inline void set_control(const std::string& var, const void* value)
{
    if (!loom::tools::set_loom_control(var, value)) {
        std::fprintf(stderr, "FAIL: cannot set %s through MPI_T\n", var.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

} // namespace check_common
