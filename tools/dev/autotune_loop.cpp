// loom-autotune-loop: an application's loop as online tuning meets it (tools/dev/autotune-bench):
// for each collective and size, CALLS blocking calls in a row on MPI_COMM_WORLD, timed as a
// whole - the trial phase included - and the slowest rank's time printed per (collective, size)
// and in all. allreduce and scan sum doubles; bcast and allgather move bytes. Rank 0 first prints
// whether loom is enabled (loom_state.h): "# loom enabled on MPI_COMM_WORLD", ...
//   loom-autotune-loop COLLECTIVES SIZES CALLS     e.g. allreduce,bcast,allgather 8,1K,4M 2000
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include "loom_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
std::vector<std::string> split(const char* text)
{
    std::vector<std::string> out;
    std::string s(text), item;
    for (char c : s + ",")
        if (c == ',') {
            if (!item.empty()) out.push_back(item);
            item.clear();
        } else {
            item += c;
        }
    return out;
}

std::size_t size_of(const std::string& t)
{
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    const char unit = *end;
    return std::size_t(v * (unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : unit == 'G' ? 1073741824.0 : 1.0));
}
} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        std::fprintf(stderr, "usage: loom-autotune-loop COLLECTIVES SIZES CALLS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const enum loom_state state = loom_state_on(MPI_COMM_WORLD);
    if (rank == 0) std::printf("# %s\n", loom_state_text(state));
    const long calls = std::atol(argv[3]);
    double total = 0;
    for (const std::string& coll : split(argv[1]))
        for (const std::string& text : split(argv[2])) {
            const std::size_t bytes = size_of(text);
            std::vector<char> in(bytes * std::size_t(size) + 8, 1), out(in.size());
            const int n = int(bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (long i = 0; i < calls; ++i) {
                if (coll == "allreduce")
                    MPI_Allreduce(in.data(), out.data(), n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                else if (coll == "bcast")
                    MPI_Bcast(out.data(), n, MPI_BYTE, int(i % size), MPI_COMM_WORLD);
                else if (coll == "scan")
                    MPI_Scan(in.data(), out.data(), n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                else if (coll == "allgather")
                    MPI_Allgather(in.data(), n / size > 0 ? n / size : 1, MPI_BYTE, out.data(),
                                  n / size > 0 ? n / size : 1, MPI_BYTE, MPI_COMM_WORLD);
                else {
                    if (rank == 0) std::fprintf(stderr, "loom-autotune-loop: no collective %s\n", coll.c_str());
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
            }
            double t = MPI_Wtime() - t0, slowest = 0;
            MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            total += slowest;
            if (rank == 0) std::printf("%s %zu %.6f\n", coll.c_str(), bytes, slowest);
        }
    if (rank == 0) std::printf("total %.6f\n", total);
    MPI_Finalize();
    return 0;
}
