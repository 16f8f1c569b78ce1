// A fixed number of identical collective calls, nothing else: the program
// dev/call-instructions runs under callgrind to count the instructions one call costs.
//
//   loom-call-loop COLLECTIVE CALLS [BYTES]   (allreduce: doubles summed; bcast: bytes from
//                                              rank 0; barrier; alltoall: BYTES to each rank;
//                                              iallreduce, ibcast, ibarrier, ialltoall: the
//                                              non-blocking call, then MPI_Wait)
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: loom-call-loop [i]allreduce|[i]bcast|[i]barrier|[i]alltoall CALLS [BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char* coll = argv[1];
    const long calls = std::atol(argv[2]);
    const std::size_t bytes = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 8;
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<double> in((bytes * std::size_t(size)) / sizeof(double) + 1, 1.0), out(in.size());
    const int count = int(bytes / sizeof(double));
    const std::string name = coll;
    MPI_Request request = MPI_REQUEST_NULL;
    for (long i = 0; i < calls; ++i) {
        if (name == "allreduce")
            MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (name == "bcast")
            MPI_Bcast(in.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (name == "alltoall")
            MPI_Alltoall(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD);
        else if (name == "barrier")
            MPI_Barrier(MPI_COMM_WORLD);
        else if (name == "iallreduce")
            MPI_Iallreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
        else if (name == "ibcast")
            MPI_Ibcast(in.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD, &request);
        else if (name == "ialltoall")
            MPI_Ialltoall(in.data(), int(bytes), MPI_BYTE, out.data(), int(bytes), MPI_BYTE, MPI_COMM_WORLD, &request);
        else if (name == "ibarrier")
            MPI_Ibarrier(MPI_COMM_WORLD, &request);
        else {
            std::fprintf(stderr, "loom-call-loop: unknown collective %s\n", coll);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (request != MPI_REQUEST_NULL) MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
