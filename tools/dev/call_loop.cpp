// A fixed number of identical collective calls, nothing else: the program
// dev/call-instructions runs under callgrind to count the instructions one call costs.
//
//   loom-call-loop COLLECTIVE CALLS [BYTES]   (allreduce: doubles summed; bcast: bytes from
//                                              rank 0; barrier; alltoall: BYTES to each rank;
//                                              allgather: BYTES from each rank;
//                                              iallreduce, ibcast, ibarrier, ialltoall,
//                                              iallgather: the non-blocking call, then MPI_Wait;
//                                              reduce: doubles summed to rank 0; reduce_scatter:
//                                              BYTES of doubles to each rank; scatter: BYTES to
//                                              each rank from rank 0; allgatherv: BYTES from each)
// Rank 0 first prints whether loom is enabled (loom_state.h): "# loom enabled on MPI_COMM_WORLD", ...
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include "loom_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        std::fprintf(stderr,
                     "usage: loom-call-loop [i]allreduce|[i]bcast|[i]barrier|[i]alltoall|[i]allgather|reduce|"
                     "reduce_scatter|scatter|allgatherv CALLS [BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char* coll = argv[1];
    const long calls = std::atol(argv[2]);
    const std::size_t bytes = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 8;
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const enum loom_state state = loom_state_on(MPI_COMM_WORLD);
    if (rank == 0) std::printf("# %s\n", loom_state_text(state));
    std::vector<double> in((bytes * std::size_t(size)) / sizeof(double) + 1, 1.0), out(in.size());
    const int count = int(bytes / sizeof(double));
    // The per-rank counts and displacements of reduce_scatter and allgatherv.
    const std::size_t ranks = std::size_t(size);
    const std::vector<int> counts(ranks, count), byte_counts(ranks, int(bytes));
    std::vector<int> displs(ranks);
    for (int i = 0; i < size; ++i) displs[std::size_t(i)] = i * int(bytes);
    // The collective is looked up once: the loop holds only the calls callgrind counts.
    static const char* const names[] = {"allreduce", "bcast",     "alltoall", "barrier",   "iallreduce",
                                        "ibcast",    "ialltoall", "ibarrier", "allgather", "iallgather",
                                        "reduce",    "reduce_scatter", "scatter", "allgatherv"};
    int which = -1;
    for (int i = 0; i < int(std::size(names)); ++i)
        if (std::strcmp(coll, names[i]) == 0) which = i;
    if (which < 0) {
        std::fprintf(stderr, "loom-call-loop: unknown collective %s\n", coll);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Request request = MPI_REQUEST_NULL;
    for (long i = 0; i < calls; ++i) {
        switch (which) {
        case 0: MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case 1: MPI_Bcast(in.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD); break;
        case 2: MPI_Alltoall(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD); break;
        case 3: MPI_Barrier(MPI_COMM_WORLD); break;
        case 4: MPI_Iallreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request); break;
        case 5: MPI_Ibcast(in.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD, &request); break;
        case 6:
            MPI_Ialltoall(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD, &request);
            break;
        case 7: MPI_Ibarrier(MPI_COMM_WORLD, &request); break;
        case 8: MPI_Allgather(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD); break;
        case 9:
            MPI_Iallgather(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD, &request);
            break;
        case 10: MPI_Reduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
        case 11: MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case 12: MPI_Scatter(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD); break;
        case 13:
            MPI_Allgatherv(in.data(), int(bytes), MPI_BYTE, out.data(), byte_counts.data(), displs.data(), MPI_BYTE,
                           MPI_COMM_WORLD);
            break;
        }
        if (request != MPI_REQUEST_NULL) MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
