// collectives_check: every collective loom serves, with every one of its algorithms forced
// in turn (switched inside the job through MPI_T, coll_loom_<collective>_algorithm) and with
// loom's own choice, on MPI_COMM_WORLD and on a split, reordered communicator. Results are
// checked against references this program computes; loom's MPI_T counters prove whether
// loom served each call or declined it.
//
//   mpirun ... collectives_check [--only COLLECTIVE]
#include "check_harness.hpp"

#include "loom_mpi_t.hpp"

#include <cstdio>
#include <cstring>

namespace check {
extern int failures;
extern int cases;
}

namespace {

struct CollectiveChecks {
    const char* name;
    std::vector<std::string> algorithms; // the user-facing names; "" is loom's own choice
    void (*check)(const check::Setting&);
};

const std::vector<CollectiveChecks> kCollectives = {
    {"allreduce", {"", "ring", "ring_pipelined", "halving_doubling", "recursive_doubling", "binomial"}, check::check_allreduce},
    {"reduce", {"", "binomial", "halving_doubling"}, check::check_reduce},
    {"reduce_scatter_block", {"", "ring", "halving_doubling"}, check::check_reduce_scatter_block},
    {"reduce_scatter", {"", "ring", "halving_doubling"}, check::check_reduce_scatter},
    {"allgather", {"", "ring", "recursive_doubling", "bruck"}, check::check_allgather},
    {"allgatherv", {"", "ring", "recursive_doubling", "bruck"}, check::check_allgatherv},
    {"bcast", {"", "binomial", "scatter_allgather"}, check::check_bcast},
    {"barrier", {"", "bruck", "recursive_doubling"}, check::check_barrier},
    {"alltoall", {"", "bruck", "pairwise"}, check::check_alltoall},
};

void force(const char* collective, const std::string& algorithm)
{
    const std::string var = std::string("coll_loom_") + collective + "_algorithm";
    if (!loom::tools::set_loom_control(var, algorithm.c_str())) {
        std::fprintf(stderr, "FAIL: cannot set %s through MPI_T\n", var.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    const char* only = nullptr;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    // A split, reordered communicator: even and odd ranks, each in reverse order.
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    int split_rank, split_size;
    MPI_Comm_rank(split, &split_rank);
    MPI_Comm_size(split, &split_size);

    for (const CollectiveChecks& c : kCollectives) {
        if (only != nullptr && std::strcmp(only, c.name) != 0) continue;
        for (const std::string& algorithm : c.algorithms) {
            force(c.name, algorithm);
            c.check(check::Setting{MPI_COMM_WORLD, rank, size, algorithm});
            c.check(check::Setting{split, split_rank, split_size, algorithm});
        }
        force(c.name, "");
    }
    MPI_Comm_free(&split);

    int total_failures = 0, total_cases = 0;
    MPI_Reduce(&check::failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&check::cases, &total_cases, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("collectives_check np=%d: %d checks on all ranks, %d failures\n", size, total_cases, total_failures);
    MPI_Finalize();
    return total_failures == 0 ? 0 : 1;
}
