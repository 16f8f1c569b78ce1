// Online tuning (coll_loom_autotune, coll_component/coll_loom_autotune.c): a job whose blocking
// calls repeat per (collective, size class) long enough for every class's trial to end (at most
// 10 candidates x 16 trials up to 64 KiB, x 4 above) - 180 calls each of MPI_Allreduce (doubles,
// sum), MPI_Bcast and MPI_Allgather at 8 B, 4 KiB and 64 KiB, 60 at 1 MiB, on MPI_COMM_WORLD and
// on a communicator of the even ranks, and 180 MPI_Neighbor_allgather of 64 B on a periodic ring
// of all ranks (MPI_Cart_create; its message size is a block, 64 B, on a Cartesian communicator)
// - every result checked, for tests/integration/autotune-check to compare the
// decisions the ranks print.
#define OMPI_SKIP_MPICXX 1 // the C API only: Debian links no C++ bindings
#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {
int failures = 0;

void expect(bool ok, const char* what, std::size_t bytes)
{
    if (!ok && failures++ == 0) std::fprintf(stderr, "autotune_check: wrong result: %s of %zu bytes\n", what, bytes);
}

void run(MPI_Comm comm)
{
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (std::size_t bytes : {std::size_t(8), std::size_t(4096), std::size_t(65536), std::size_t(1) << 20}) {
        const int n = int(bytes / sizeof(double));
        const int calls = bytes <= 65536 ? 180 : 60;
        std::vector<double> in(std::size_t(n) * std::size_t(size)), out(in.size());
        for (int i = 0; i < calls; ++i) {
            for (int j = 0; j < n; ++j) in[std::size_t(j)] = rank + j % 7;
            MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, comm);
            expect(out[std::size_t(n - 1)] == double(size) * (size - 1) / 2 + size * ((n - 1) % 7), "allreduce", bytes);
        }
        for (int i = 0; i < calls; ++i) {
            const int root = i % size;
            for (int j = 0; j < n; ++j) out[std::size_t(j)] = rank == root ? i + j % 5 : -1;
            MPI_Bcast(out.data(), n, MPI_DOUBLE, root, comm);
            expect(out[std::size_t(n - 1)] == i + (n - 1) % 5, "bcast", bytes);
        }
        for (int i = 0; i < calls; ++i) {
            for (int j = 0; j < n; ++j) in[std::size_t(j)] = rank * 1000 + i;
            MPI_Allgather(in.data(), n, MPI_DOUBLE, out.data(), n, MPI_DOUBLE, comm);
            expect(out[std::size_t(n) * std::size_t(size - 1)] == (size - 1) * 1000 + i, "allgather", bytes);
        }
    }
}
} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm even;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 == 0 ? 0 : MPI_UNDEFINED, rank, &even);
    run(MPI_COMM_WORLD);
    {
        int size = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm ring;
        const int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        MPI_Comm_set_name(ring, "ring"); // the name autotune-check finds its decisions by
        const int left = (rank + size - 1) % size, right = (rank + 1) % size;
        std::vector<double> mine(8), theirs(16);
        for (int i = 0; i < 180; ++i) {
            for (std::size_t j = 0; j < mine.size(); ++j) mine[j] = rank * 1000 + i + double(j);
            MPI_Neighbor_allgather(mine.data(), 8, MPI_DOUBLE, theirs.data(), 8, MPI_DOUBLE, ring);
            expect(theirs[7] == left * 1000 + i + 7 && theirs[8] == right * 1000 + i, "neighbor_allgather", 64);
        }
        MPI_Comm_free(&ring);
    }
    if (even != MPI_COMM_NULL) {
        run(even);
        MPI_Comm_free(&even);
    }
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
