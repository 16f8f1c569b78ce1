// loom-allreduce-timer: times MPI_Allreduce (MPI_DOUBLE, MPI_SUM) over a sweep of message
// sizes in one mpirun, with whatever coll components the run selected. It is the per-run
// half of tools/loom-compare, which runs it alternately with and without loom.
//
//   mpirun -np 4 loom-allreduce-timer [--min-bytes 8] [--max-bytes 4194304] [--algorithm NAME]
//
// --algorithm forces loom's allreduce algorithm (through MPI_T, coll_loom_allreduce_algorithm).
//
// Output: one line per size, "bytes usec", where usec is the maximum over ranks of the mean
// time of one call, after a warm-up; then "# loom served N declined M" from loom's MPI_T
// counters (or "# loom not loaded"). Every size's result is checked; a wrong result aborts.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "loom_mpi_t.hpp"
#include "size_text.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Enough iterations for a stable mean without making big sizes take seconds.
int iterations_for(std::size_t bytes)
{
    const std::size_t budget = 32u << 20; // bytes moved per size and rank, roughly
    return int(std::clamp<std::size_t>(budget / std::max<std::size_t>(bytes, 1), 5, 1000));
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    std::size_t min_bytes = 8, max_bytes = 4u << 20;
    std::string algorithm;
    for (int i = 1; i + 1 < argc; i += 2) {
        try {
            if (std::strcmp(argv[i], "--min-bytes") == 0) min_bytes = loom::tools::parse_size(argv[i + 1]);
            else if (std::strcmp(argv[i], "--max-bytes") == 0) max_bytes = loom::tools::parse_size(argv[i + 1]);
            else if (std::strcmp(argv[i], "--algorithm") == 0) algorithm = argv[i + 1];
            else throw std::invalid_argument(argv[i]);
        } catch (const std::invalid_argument& e) {
            if (rank == 0) std::fprintf(stderr, "loom-allreduce-timer: bad argument: %s\n", e.what());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    min_bytes = std::max<std::size_t>(min_bytes, sizeof(double));

    loom::tools::LoomCounters counters;
    const bool loom_loaded = counters.open("allreduce");
    if (!algorithm.empty() && !loom::tools::set_loom_control("coll_loom_allreduce_algorithm", algorithm.c_str())) {
        if (rank == 0) std::fprintf(stderr, "loom-allreduce-timer: cannot force algorithm %s: is loom loaded?\n", algorithm.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    std::vector<double> send(max_bytes / sizeof(double)), recv(send.size());
    std::fill(send.begin(), send.end(), double(rank + 1));
    const double expected = double(size) * (size + 1) / 2;

    if (rank == 0) std::printf("# bytes usec (MPI_DOUBLE, MPI_SUM, np=%d)\n", size);
    for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        const int count = int(bytes / sizeof(double));
        const int iters = iterations_for(bytes);
        for (int i = 0; i < 3; ++i) MPI_Allreduce(send.data(), recv.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i)
            MPI_Allreduce(send.data(), recv.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double mean = (MPI_Wtime() - t0) / iters * 1e6, slowest = 0;
        MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        for (int i = 0; i < count; ++i) {
            if (recv[std::size_t(i)] != expected) {
                std::fprintf(stderr, "loom-allreduce-timer: rank %d: wrong result at %d bytes, element %d: %g, expected %g\n",
                             rank, int(bytes), i, recv[std::size_t(i)], expected);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        if (rank == 0) std::printf("%zu %.2f\n", bytes, slowest);
    }
    if (rank == 0) {
        if (loom_loaded) std::printf("# loom served %llu declined %llu\n", counters.served(), counters.declined());
        else std::printf("# loom not loaded\n");
    }
    MPI_Finalize();
    return 0;
}
