// allocator_check: after loom serves a large reduction itself, the C library's allocator is where
// Open MPI's own algorithm would have left it (coll_component/coll_loom_allocator.c).
//
// glibc maps a malloc above its mmap threshold afresh; freeing such a block raises the
// threshold. Open MPI's reductions malloc and free temporary buffers of about the message's size,
// so in a job without loom a 1 MiB allreduce leaves a 768 KiB malloc on the heap; loom, serving
// the allreduce from its own buffers, must leave it so too. The test forces `ring` for allreduce
// (through MPI_T), checks that loom served the call, then counts glibc's mapped blocks
// (mallinfo2().hblks) around a malloc of 768 KiB.
//
//   mpirun ... allocator_check --expect heap     (coll_loom_allocator_like_open_mpi 1, the default)
//   mpirun ... allocator_check --expect mapped   (with the parameter 0: the check can fail)
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <vector>

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const bool expect_heap = !(argc > 2 && std::strcmp(argv[1], "--expect") == 0 && std::strcmp(argv[2], "mapped") == 0);
    int failures = 0;
#if defined(__GLIBC__)
    loom::tools::LoomCounters allreduce;
    if (!allreduce.open("allreduce") || !loom::tools::force_algorithm("allreduce", "ring")) {
        std::fprintf(stderr, "allocator_check: loom is not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    // Kept until the end: freeing them would raise glibc's threshold by itself.
    const std::size_t count = (1u << 20) / sizeof(double);
    std::vector<double> in(count, 1.0), out(count, 0.0);
    const unsigned long long served = allreduce.served();
    MPI_Allreduce(in.data(), out.data(), int(count), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (allreduce.served() != served + 1) {
        std::fprintf(stderr, "allocator_check (rank %d): loom did not serve the allreduce\n", rank);
        ++failures;
    }
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (out[0] != double(size) || out[count - 1] != double(size)) {
        std::fprintf(stderr, "allocator_check (rank %d): wrong allreduce result\n", rank);
        ++failures;
    }
    const std::size_t before = mallinfo2().hblks;
    void* volatile block = std::malloc(768u << 10);
    const bool mapped = mallinfo2().hblks > before;
    std::free(block);
    if (mapped == expect_heap) {
        std::fprintf(stderr, "allocator_check (rank %d): a 768 KiB malloc after loom's 1 MiB allreduce was %s, expected %s\n",
                     rank, mapped ? "mapped afresh" : "on the heap", expect_heap ? "on the heap" : "mapped afresh");
        ++failures;
    }
    loom::tools::force_algorithm("allreduce", "");
#else
    std::fprintf(stderr, "allocator_check: not glibc; nothing to check\n");
#endif
    int any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any == 0) std::printf("allocator_check: ok (%s)\n", expect_heap ? "heap" : "mapped");
    MPI_Finalize();
    return any == 0 ? 0 : 1;
}
