// topology_probe: what MPI itself says about where each rank runs, for comparison with the
// topology loom reports (tests/integration/emucluster-check).
//
// Rank 0 prints one line per rank,
//
//   topology_probe: rank R host HOSTNAME shared_group G shared_size S
//
// where HOSTNAME is MPI_Get_processor_name and G is the lowest MPI_COMM_WORLD rank of the
// rank's MPI_COMM_TYPE_SHARED group (so ranks that share memory share G), then
//
//   topology_probe: P ranks, K hosts, K' shared groups
//
// Then it runs a few collectives on MPI_COMM_WORLD and on the shared communicator (allreduce,
// bcast from the last rank, allgather, reduce to rank 1 when there is one), so loom serves
// calls and reports the communicator's topology, and checks their results against values
// computed here. Exits 1 and prints "topology_probe: FAIL ..." on any wrong result.
//
//   mpirun ... topology_probe
#define OMPI_SKIP_MPICXX 1 // the C API only (the C++ bindings are not linked)
#include <mpi.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

int failures = 0;

void fail(int rank, const std::string& what)
{
    std::fprintf(stderr, "topology_probe: FAIL (rank %d): %s\n", rank, what.c_str());
    ++failures;
}

// Allreduce, bcast, allgather and reduce on `comm` with 1000 ints (enough to pass several
// algorithms' small-message cases, small enough to be quick), results checked.
void run_collectives(MPI_Comm comm, const char* label)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int n = 1000;

    std::vector<int> in(n), out(n, -1);
    for (int i = 0; i < n; ++i) in[i] = rank * 7 + i;
    MPI_Allreduce(in.data(), out.data(), n, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < n; ++i)
        if (out[i] != 7 * size * (size - 1) / 2 + size * i) {
            fail(rank,
                 std::string(label) + " allreduce: element " + std::to_string(i) + " is " + std::to_string(out[i]));
            break;
        }

    std::vector<int> b(n, rank == size - 1 ? 0 : -1);
    if (rank == size - 1)
        for (int i = 0; i < n; ++i) b[i] = 3 * i + 1;
    MPI_Bcast(b.data(), n, MPI_INT, size - 1, comm);
    for (int i = 0; i < n; ++i)
        if (b[i] != 3 * i + 1) {
            fail(rank, std::string(label) + " bcast: element " + std::to_string(i) + " is " + std::to_string(b[i]));
            break;
        }

    std::vector<int> mine(n / 10), all(std::size_t(n / 10) * size, -1);
    for (int i = 0; i < n / 10; ++i) mine[i] = rank * 100000 + i;
    MPI_Allgather(mine.data(), n / 10, MPI_INT, all.data(), n / 10, MPI_INT, comm);
    for (int r = 0; r < size; ++r)
        for (int i = 0; i < n / 10; ++i)
            if (all[std::size_t(r) * (n / 10) + i] != r * 100000 + i) {
                fail(rank, std::string(label) + " allgather: block " + std::to_string(r) + " is wrong");
                r = size;
                break;
            }

    const int root = size > 1 ? 1 : 0;
    std::vector<int> red(n, -1);
    MPI_Reduce(in.data(), red.data(), n, MPI_INT, MPI_MAX, root, comm);
    if (rank == root)
        for (int i = 0; i < n; ++i)
            if (red[i] != (size - 1) * 7 + i) {
                fail(rank,
                     std::string(label) + " reduce: element " + std::to_string(i) + " is " + std::to_string(red[i]));
                break;
            }
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);

    MPI_Comm shared;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    int shared_size, shared_rank;
    MPI_Comm_size(shared, &shared_size);
    MPI_Comm_rank(shared, &shared_rank);
    // The group's lowest world rank: shared rank 0 (the key is the world rank).
    int group = rank;
    MPI_Bcast(&group, 1, MPI_INT, 0, shared);

    std::vector<char> names(std::size_t(size) * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    int mine[2] = {group, shared_size};
    std::vector<int> groups(std::size_t(size) * 2);
    MPI_Gather(mine, 2, MPI_INT, groups.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        std::set<std::string> hosts;
        std::set<int> distinct_groups;
        for (int r = 0; r < size; ++r) {
            const std::string host(&names[std::size_t(r) * MPI_MAX_PROCESSOR_NAME]);
            hosts.insert(host);
            distinct_groups.insert(groups[2 * r]);
            std::printf("topology_probe: rank %d host %s shared_group %d shared_size %d\n", r, host.c_str(),
                        groups[2 * r], groups[2 * r + 1]);
        }
        std::printf("topology_probe: %d ranks, %zu hosts, %zu shared groups\n", size, hosts.size(),
                    distinct_groups.size());
        std::fflush(stdout);
    }

    run_collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    run_collectives(shared, "shared");
    MPI_Comm_free(&shared);

    int total = 0;
    MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("topology_probe: collectives checked, %d failures\n", total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
