// drop_in_check --part arrays, the neighbourhood collectives: MPI_Ineighbor_allgatherv,
// _alltoallv and _alltoallw (persistent: *_init) of pairs of ints on a 2-D Cartesian grid over
// MPI_COMM_WORLD (periodic in the first dimension, not in the second: MPI_PROC_NULL blocks too)
// and on a dist graph with repeated edges; the count, displacement (alltoallw's MPI_Aint ones)
// and datatype arrays scribbled over and freed, and the derived datatype freed, right after the
// call returns. Arrays are the topology's degrees long, not the communicator's size: a request
// that kept `size` entries would read past them.
#include "drop_in_check.hpp"
#include "mpi_persistent.hpp"
#include "neighbour_comms.hpp"

#include <algorithm>
#include <cstdlib>

namespace drop_in {

namespace {

template <class T>
T* heap_array(const std::vector<T>& v)
{
    T* a = static_cast<T*>(std::malloc(sizeof(T) * std::max<std::size_t>(1, v.size())));
    std::copy(v.begin(), v.end(), a);
    return a;
}

template <class T>
void scribble_and_free(T* a, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) a[i] = T(i & 1 ? -123456789 : 0x7fffffff);
    std::free(a);
}

// Pairs in message (q, b): n0 + (q + b) % 3, the same on both sides (block_source).
int pairs_of(int n0, int q, int b) { return n0 + (q + b) % 3; }

void neighbour_arrays_on(loom::Collective c, const neighbours::TopologyComm& tc, bool persistent, int n0, int salt)
{
    const loom::test::Topology& t = tc.topology;
    const auto& dst = t.destinations[std::size_t(rank)];
    const auto& src = t.sources[std::size_t(rank)];
    const bool gather = c == loom::Collective::neighbor_allgatherv, w = c == loom::Collective::neighbor_alltoallw;
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    // The send side: one block (allgatherv) or one per destination, end to end.
    std::vector<int> scounts, sdispls, rcounts, rdispls;
    int send_pairs = 0, recv_pairs = 0;
    for (std::size_t b = 0; b < (gather ? 1 : dst.size()); ++b) {
        scounts.push_back(pairs_of(n0, rank, gather ? 0 : int(b)));
        sdispls.push_back(send_pairs);
        send_pairs += scounts.back();
    }
    // The receive side in reverse order, a pair apart; MPI_PROC_NULL blocks n0 + 1 pairs.
    std::vector<loom::test::BlockSource> from;
    for (std::size_t j = 0; j < src.size(); ++j) {
        from.push_back(loom::test::block_source(t, rank, int(j)));
        rcounts.push_back(from.back().rank < 0 ? n0 + 1 : pairs_of(n0, from.back().rank, gather ? 0 : from.back().block));
    }
    rdispls.resize(src.size());
    for (std::size_t j = src.size(); j-- > 0;) rdispls[j] = recv_pairs + 1, recv_pairs += rcounts[j] + 1;
    std::vector<int> send(std::size_t(2 * send_pairs) + 2), recv(std::size_t(2 * recv_pairs) + 2, -1);
    auto fill = [&](int s) {
        std::fill(recv.begin(), recv.end(), -1);
        for (std::size_t b = 0; b < scounts.size(); ++b)
            for (int i = 0; i < 2 * scounts[b]; ++i)
                send[std::size_t(2 * sdispls[b] + i)] = value(rank * 64 + int(b), i, s);
    };
    std::vector<MPI_Aint> sbytes, rbytes;
    for (int d : sdispls) sbytes.push_back(MPI_Aint(d) * 8);
    for (int d : rdispls) rbytes.push_back(MPI_Aint(d) * 8);
    int* sc = heap_array(scounts);
    int* sd = heap_array(sdispls);
    int* rc = heap_array(rcounts);
    int* rd = heap_array(rdispls);
    MPI_Aint* sb = heap_array(sbytes);
    MPI_Aint* rb = heap_array(rbytes);
    MPI_Datatype* st = heap_array(std::vector<MPI_Datatype>(dst.size(), pair));
    MPI_Datatype* rt = heap_array(std::vector<MPI_Datatype>(src.size(), pair));
    MPI_Request req;
    if (!persistent) fill(salt);
    const MPI_Comm comm = tc.comm;
    if (gather && persistent)
        PERSISTENT(Neighbor_allgatherv)(send.data(), sc[0], pair, recv.data(), rc, rd, pair, comm, MPI_INFO_NULL, &req);
    else if (gather)
        MPI_Ineighbor_allgatherv(send.data(), sc[0], pair, recv.data(), rc, rd, pair, comm, &req);
    else if (!w && persistent)
        PERSISTENT(Neighbor_alltoallv)(send.data(), sc, sd, pair, recv.data(), rc, rd, pair, comm, MPI_INFO_NULL, &req);
    else if (!w)
        MPI_Ineighbor_alltoallv(send.data(), sc, sd, pair, recv.data(), rc, rd, pair, comm, &req);
    else if (persistent)
        PERSISTENT(Neighbor_alltoallw)(send.data(), sc, sb, st, recv.data(), rc, rb, rt, comm, MPI_INFO_NULL, &req);
    else
        MPI_Ineighbor_alltoallw(send.data(), sc, sb, st, recv.data(), rc, rb, rt, comm, &req);
    scribble_and_free(sc, scounts.size()), scribble_and_free(sd, sdispls.size());
    scribble_and_free(rc, rcounts.size()), scribble_and_free(rd, rdispls.size());
    scribble_and_free(sb, sbytes.size()), scribble_and_free(rb, rbytes.size());
    // The datatype arrays are freed after completion: Open MPI's MPI layer itself keeps their
    // addresses to release the types they name when the request completes
    // (ompi_coll_base_retain_datatypes_w, ompi/mpi/c/ineighbor_alltoallw.c in 4.1), whoever
    // served the call.
    if (types_freed_early) MPI_Type_free(&pair);
    complete_and_check(req, persistent, salt, fill, [&](int s, int start) {
        std::vector<int> want(recv.size(), -1);
        for (std::size_t j = 0; j < src.size(); ++j)
            for (int i = 0; from[j].rank >= 0 && i < 2 * rcounts[j]; ++i)
                want[std::size_t(2 * rdispls[j] + i)] = value(from[j].rank * 64 + (gather ? 0 : from[j].block), i, s);
        if (recv != want)
            fail(collective_name(c) + (persistent ? "_init" : " (non-blocking)") + " on " + t.name +
                 " with freed arrays, n0 " + std::to_string(n0) + ", start " + std::to_string(start) +
                 ": wrong result");
    });
    if (persistent) MPI_Request_free(&req);
    std::free(st), std::free(rt);
    if (!types_freed_early) MPI_Type_free(&pair);
}

} // namespace

void neighbour_arrays(loom::Collective c, bool persistent, int n0, int salt)
{
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    std::vector<neighbours::TopologyComm> comms;
    comms.push_back(neighbours::make(MPI_COMM_WORLD, loom::test::cartesian({dims[0], dims[1]}, {1, 0})));
    comms.push_back(neighbours::make(MPI_COMM_WORLD, loom::test::random_dist_graph(size, 4, 11, true), true));
    for (const auto& tc : comms) neighbour_arrays_on(c, tc, persistent, n0, salt);
    neighbours::free_all(comms);
}

} // namespace drop_in
