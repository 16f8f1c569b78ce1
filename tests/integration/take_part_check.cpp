// take_part_check: collectives whose results the program checks itself, on MPI_COMM_WORLD, a
// duplicate of it and its halves (ranks 0..P/2-1 and the rest, a split), in all three forms,
// and what loom did: on how many of those communicators it is enabled (the MPI_T level
// coll_loom_communicators_enabled) and how many allreduce calls it served. For
// tests/integration/take-part-check, which starts jobs whose ranks hold the same or different
// rules, a rank without loom, an Open MPI loom was not built for, hosts Open MPI cannot tell.
//
//   take_part_check [--expect-enabled N] [--expect-served yes|no]
//
// Prints on every rank "take-part: rank R: loom enabled on N communicators, served S
// allreduce calls" (or "loom not loaded": no loom in the process at all), and on rank 0
// "take-part: every result right" at
// the end. --expect-enabled N: fail unless N of the communicators have loom (on every rank
// where loom is loaded); --expect-served: fail unless loom served (yes) or served nothing (no).
// Exit status 0, or MPI_Abort with a FAIL line naming the wrong result.
#include "check_common.hpp"
#include "mpi_persistent.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int world_rank = 0;

void fail(const std::string& what)
{
    std::fprintf(stderr, "take-part: FAIL: rank %d: %s\n", world_rank, what.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void expect(bool ok, const std::string& what, MPI_Comm comm)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    MPI_Comm_get_name(comm, name, &length);
    if (!ok) fail(what + " on " + name);
}

// One round of every form on comm; each result checked against what the program computes.
void round(MPI_Comm comm, int iteration)
{
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const long long p = size, sum_ranks = p * (p - 1) / 2;

    std::vector<int> in(1000), out(1000);
    for (int i = 0; i < 1000; ++i) in[std::size_t(i)] = rank + i + iteration;
    MPI_Allreduce(in.data(), out.data(), 1000, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < 1000; ++i)
        if (out[std::size_t(i)] != sum_ranks + p * (i + iteration)) expect(false, "allreduce", comm);

    double d = rank + 0.5, dsum = 0;
    MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, comm);
    expect(dsum == double(sum_ranks) + 0.5 * double(p), "allreduce of one double", comm);

    std::vector<unsigned char> bytes(65536);
    const int root = size - 1;
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = rank == root ? static_cast<unsigned char>(i * 7 + std::size_t(iteration)) : 0;
    MPI_Bcast(bytes.data(), int(bytes.size()), MPI_BYTE, root, comm);
    for (std::size_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] != static_cast<unsigned char>(i * 7 + std::size_t(iteration))) expect(false, "bcast", comm);

    int mine[3] = {rank, rank * 2, iteration};
    std::vector<int> all(std::size_t(3 * size));
    MPI_Allgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, comm);
    for (int r = 0; r < size; ++r)
        expect(all[std::size_t(3 * r)] == r && all[std::size_t(3 * r + 1)] == 2 * r &&
                   all[std::size_t(3 * r + 2)] == iteration,
               "allgather", comm);

    std::vector<int> send(std::size_t(2 * size)), recv(std::size_t(2 * size));
    for (int r = 0; r < size; ++r) send[std::size_t(2 * r)] = send[std::size_t(2 * r + 1)] = rank * 100 + r;
    MPI_Alltoall(send.data(), 2, MPI_INT, recv.data(), 2, MPI_INT, comm);
    for (int r = 0; r < size; ++r) expect(recv[std::size_t(2 * r)] == r * 100 + rank, "alltoall", comm);

    std::vector<int> block(std::size_t(5 * size)), part(5);
    for (std::size_t i = 0; i < block.size(); ++i) block[i] = rank + int(i);
    MPI_Reduce_scatter_block(block.data(), part.data(), 5, MPI_INT, MPI_SUM, comm);
    for (int i = 0; i < 5; ++i) expect(part[std::size_t(i)] == sum_ranks + p * (5 * rank + i), "reduce_scatter_block", comm);

    std::vector<int> nb(100, rank + 1), nb_out(100);
    MPI_Request request;
    MPI_Iallreduce(nb.data(), nb_out.data(), 100, MPI_INT, MPI_SUM, comm, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    for (int v : nb_out) expect(v == sum_ranks + p, "iallreduce", comm);

    std::vector<int> pin(10), pout(10);
    MPI_Request persistent;
    PERSISTENT(Allreduce)(pin.data(), pout.data(), 10, MPI_INT, MPI_MAX, comm, MPI_INFO_NULL, &persistent);
    for (int start = 0; start < 2; ++start) {
        for (int& v : pin) v = rank + start;
        MPI_Start(&persistent);
        MPI_Wait(&persistent, MPI_STATUS_IGNORE);
        for (int v : pout) expect(v == size - 1 + start, "allreduce_init", comm);
    }
    MPI_Request_free(&persistent);
    MPI_Barrier(comm);
}

} // namespace

int main(int argc, char** argv)
{
    long expect_enabled = -1;
    std::string expect_served;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--expect-enabled") == 0 && i + 1 < argc)
            expect_enabled = std::strtol(argv[++i], nullptr, 10);
        else if (std::strcmp(argv[i], "--expect-served") == 0 && i + 1 < argc)
            expect_served = argv[++i];
        else {
            std::fprintf(stderr, "usage: take_part_check [--expect-enabled N] [--expect-served yes|no]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    // Loaded: loom's level exists (it does even where loom stays out of an Open MPI it was not
    // built for); its counters exist only where it may serve.
    loom::tools::LoomCounters allreduce;
    const bool counted = allreduce.open("allreduce");

    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "the duplicate of MPI_COMM_WORLD");
    MPI_Comm_split(MPI_COMM_WORLD, world_rank < size / 2 ? 0 : 1, world_rank, &half);
    MPI_Comm_set_name(half, world_rank < size / 2 ? "the first half" : "the second half");
    const auto enabled = loom::tools::loom_level("coll_loom_communicators_enabled");
    const bool loaded = enabled.has_value();

    for (int iteration = 0; iteration < 20; ++iteration)
        for (MPI_Comm comm : {MPI_COMM_WORLD, dup, half}) round(comm, iteration);

    const unsigned long long served = counted ? allreduce.served() : 0;
    if (loaded)
        std::printf("take-part: rank %d: loom enabled on %llu communicators, served %llu allreduce calls\n", world_rank,
                    *enabled, served);
    else
        std::printf("take-part: rank %d: loom not loaded\n", world_rank);
    std::fflush(stdout);
    if (loaded && expect_enabled >= 0 && *enabled != (unsigned long long)expect_enabled)
        fail("loom is enabled on " + std::to_string(*enabled) + " communicators, expected " +
             std::to_string(expect_enabled));
    if (loaded && expect_served == "yes" && served == 0) fail("loom served no allreduce");
    if (loaded && expect_served == "no" && served != 0) fail("loom served " + std::to_string(served) + " allreduce calls");

    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0) std::printf("take-part: every result right\n");
    MPI_Finalize();
    return 0;
}
