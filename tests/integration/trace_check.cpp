// The timeline (coll_loom_trace, coll_component/coll_loom_trace.c): a job that makes a known
// number of calls of each form, for tests/integration/trace-check to count in the trace files.
// Per rank: 50 MPI_Allreduce and 20 MPI_Bcast on MPI_COMM_WORLD (trace-check hands bcast on with
// coll_loom_bcast_algorithm=fallback), 30 MPI_Iallreduce each waited for, one persistent
// allreduce started 10 times, 5 MPI_Alltoallv (trace-check's rule file serves them with linear
// and requests=2, which the events' options must name), 15 MPI_Barrier on a communicator
// split in two (even and odd ranks), and on a periodic ring (MPI_Cart_create, one dimension of
// all ranks) 12 MPI_Neighbor_allgather (trace-check's rule file serves them with linear) and 6
// MPI_Ineighbor_alltoall each waited for (handed on by the built-in table). Open MPI makes
// collectives of its own inside MPI_Comm_split and MPI_Cart_create (an allgather, allreduces
// for the context id), so the counted calls lie between two MPI_Barrier on MPI_COMM_WORLD, the
// markers trace-check looks for. Every result is checked; the job fails on a wrong one.
#define OMPI_SKIP_MPICXX 1 // the C API only: Debian links no C++ bindings
#include <mpi.h>

#include "mpi_persistent.hpp"

#include <cstdio>
#include <vector>

namespace {
int failures = 0;

void expect(bool ok, const char* what)
{
    if (!ok && failures++ == 0) std::fprintf(stderr, "trace_check: wrong result: %s\n", what);
}
} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double sum = double(size) * (size + 1) / 2;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm ring;
    const int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Barrier(MPI_COMM_WORLD); // the first marker
    std::vector<double> in(8), out(8);
    for (int i = 0; i < 50; ++i) {
        for (auto& x : in) x = rank + 1;
        MPI_Allreduce(in.data(), out.data(), 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        expect(out[7] == sum, "allreduce");
    }
    for (int i = 0; i < 20; ++i) {
        int value = rank == i % size ? 1000 + i : -1;
        MPI_Bcast(&value, 1, MPI_INT, i % size, MPI_COMM_WORLD);
        expect(value == 1000 + i, "bcast");
    }
    for (int i = 0; i < 30; ++i) {
        MPI_Request r;
        for (auto& x : in) x = rank + 1;
        MPI_Iallreduce(in.data(), out.data(), 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        expect(out[0] == sum, "iallreduce");
    }
    MPI_Request p;
    PERSISTENT(Allreduce)(in.data(), out.data(), 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    for (int i = 0; i < 10; ++i) {
        for (auto& x : in) x = rank + 1;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        expect(out[3] == sum, "persistent allreduce");
    }
    MPI_Request_free(&p);
    const std::size_t ranks = std::size_t(size);
    std::vector<int> counts(ranks, 1), displs(ranks), send(ranks), recv(ranks);
    for (int i = 0; i < size; ++i) displs[std::size_t(i)] = i;
    for (int i = 0; i < 5; ++i) {
        for (int peer = 0; peer < size; ++peer) send[std::size_t(peer)] = 1000 * rank + peer + i;
        MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_INT, recv.data(), counts.data(), displs.data(),
                      MPI_INT, MPI_COMM_WORLD);
        for (int peer = 0; peer < size; ++peer) expect(recv[std::size_t(peer)] == 1000 * peer + rank + i, "alltoallv");
    }
    for (int i = 0; i < 15; ++i) MPI_Barrier(half);
    // The ring's neighbours, in MPI's order: the rank at -1, then at +1.
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int i = 0; i < 12; ++i) {
        int mine = 100 * rank + i, theirs[2] = {-1, -1};
        MPI_Neighbor_allgather(&mine, 1, MPI_INT, theirs, 1, MPI_INT, ring);
        expect(theirs[0] == 100 * left + i && theirs[1] == 100 * right + i, "neighbor_allgather");
    }
    for (int i = 0; i < 6; ++i) {
        int out_blocks[2] = {100 * rank + i, 100 * rank + 50 + i}, in_blocks[2] = {-1, -1};
        MPI_Request r;
        MPI_Ineighbor_alltoall(out_blocks, 1, MPI_INT, in_blocks, 1, MPI_INT, ring, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        // Block 0 comes from the left, which sent it as its block 1 (to its right), and so on.
        expect(in_blocks[0] == 100 * left + 50 + i && in_blocks[1] == 100 * right + i, "ineighbor_alltoall");
    }
    MPI_Barrier(MPI_COMM_WORLD); // the last marker
    MPI_Comm_free(&ring);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
