// A fixed number of identical collective calls, nothing else: the program
// dev/call-instructions runs under callgrind to count the instructions one call costs.
//
//   loom-call-loop COLLECTIVE CALLS [BYTES]   (allreduce: doubles summed; bcast: bytes from
//                                              rank 0; barrier)
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: loom-call-loop allreduce|bcast|barrier CALLS [BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char* coll = argv[1];
    const long calls = std::atol(argv[2]);
    const std::size_t bytes = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 8;
    std::vector<double> in(bytes / sizeof(double) + 1, 1.0), out(in.size());
    const int count = int(bytes / sizeof(double));
    for (long i = 0; i < calls; ++i) {
        if (std::strcmp(coll, "allreduce") == 0)
            MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (std::strcmp(coll, "bcast") == 0)
            MPI_Bcast(in.data(), int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
        else
            MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
