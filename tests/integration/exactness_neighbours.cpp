// exactness_check, the neighbourhood collectives: MPI_Neighbor_allgather(v) and
// MPI_Neighbor_alltoall(v, w) on every topology communicator of neighbour_comms.hpp, made over
// the setting's communicator, on guarded buffers (exactness_harness.hpp). Every received int
// must be where the receive type and displacements put it (value(from, block, k): the sender and
// its send block, block_source's reference); the bytes of an MPI_PROC_NULL neighbour's block,
// the holes of {int, hole, int} and {int, hole, int, hole}, the guards and the send buffer must
// keep their contents. The v and w forms lay their receive blocks out in reverse neighbour order.
#include "exactness_harness.hpp"

#include "neighbour_comms.hpp"

#include <algorithm>
#include <memory>

namespace exact {

namespace {

using loom::Collective;

struct Side {
    int count;
    Shape shape;
    std::size_t ints() const { return std::size_t(count) * ints_per(shape); }
    std::size_t bytes() const { return std::size_t(count) * extent(shape); }
};

void neighbour_case(const Setting& base, const neighbours::TopologyComm& tc, Side send_side, Side recv_side)
{
    const Collective c = base.collective;
    const loom::test::Topology& t = tc.topology;
    Setting s = base;
    s.comm = tc.comm;
    s.stencil = t.one_block_size; // combining serves stencils of one block size (combining.hpp)
    MPI_Comm_rank(tc.comm, &s.rank);
    const int r = s.rank;
    const bool same_block = c == Collective::neighbor_allgather || c == Collective::neighbor_allgatherv;
    const bool v = c != Collective::neighbor_allgather && c != Collective::neighbor_alltoall;
    const std::size_t in = t.sources[std::size_t(r)].size();
    const std::size_t out = same_block ? 1 : t.destinations[std::size_t(r)].size();
    Buffer send("send buffer", std::max<std::size_t>(1, out * send_side.bytes()), 1 + unsigned(r) * 8);
    Buffer recv("receive buffer", std::max<std::size_t>(1, in * recv_side.bytes()), 2 + unsigned(r) * 8);
    // The v and w forms: receive block j at slot in - 1 - j (reordered displacements).
    auto slot = [&](std::size_t j) { return v ? in - 1 - j : j; };
    for (std::size_t b = 0; b < out; ++b) {
        for (std::size_t k = 0; k < send_side.ints(); ++k)
            send.put(b * send_side.bytes() + int_offset(send_side.shape, k), value(r, int(b), k));
        send.part("block", b * send_side.bytes(), std::size_t(send_side.count), send_side.shape,
                  "for neighbour " + std::to_string(b));
    }
    for (std::size_t j = 0; j < in; ++j)
        recv.part("block", slot(j) * recv_side.bytes(), std::size_t(recv_side.count), recv_side.shape,
                  "from neighbour " + std::to_string(j));
    send.freeze();
    recv.freeze();
    for (std::size_t j = 0; j < in; ++j) {
        const loom::test::BlockSource from = loom::test::block_source(t, r, int(j));
        if (from.rank < 0) continue; // MPI_PROC_NULL: the block keeps its bytes
        for (std::size_t k = 0; k < recv_side.ints(); ++k)
            recv.expect(slot(j) * recv_side.bytes() + int_offset(recv_side.shape, k),
                        value(from.rank, same_block ? 0 : from.block, k));
    }
    std::vector<int> scounts(out + 1, send_side.count), rcounts(in + 1, recv_side.count), sdispls(out + 1),
        rdispls(in + 1);
    std::vector<MPI_Aint> sbytes(out + 1), rbytes(in + 1);
    std::vector<MPI_Datatype> stypes(out + 1, mpi_type(send_side.shape)), rtypes(in + 1, mpi_type(recv_side.shape));
    for (std::size_t b = 0; b < out; ++b)
        sdispls[b] = int(b) * send_side.count, sbytes[b] = MPI_Aint(b * send_side.bytes());
    for (std::size_t j = 0; j < in; ++j)
        rdispls[j] = int(slot(j)) * recv_side.count, rbytes[j] = MPI_Aint(slot(j) * recv_side.bytes());
    const MPI_Datatype st = mpi_type(send_side.shape), rt = mpi_type(recv_side.shape);
    const std::string what = t.name + " count=" + std::to_string(recv_side.count) + " " + name(recv_side.shape) +
                             (send_side.shape != recv_side.shape ? std::string(" (sent as ints)") : "");
    run_case(s, what, recv_side.shape == Shape::ints ? "" : "holey", 0, {&send, &recv}, [&] {
        void* sb = send.body();
        void* rb = recv.body();
        if (c == Collective::neighbor_allgather)
            MPI_Neighbor_allgather(sb, send_side.count, st, rb, recv_side.count, rt, s.comm);
        else if (c == Collective::neighbor_allgatherv)
            MPI_Neighbor_allgatherv(sb, send_side.count, st, rb, rcounts.data(), rdispls.data(), rt, s.comm);
        else if (c == Collective::neighbor_alltoall)
            MPI_Neighbor_alltoall(sb, send_side.count, st, rb, recv_side.count, rt, s.comm);
        else if (c == Collective::neighbor_alltoallv)
            MPI_Neighbor_alltoallv(sb, scounts.data(), sdispls.data(), st, rb, rcounts.data(), rdispls.data(), rt,
                                   s.comm);
        else
            MPI_Neighbor_alltoallw(sb, scounts.data(), sbytes.data(), stypes.data(), rb, rcounts.data(), rbytes.data(),
                                   rtypes.data(), s.comm);
    });
}

void neighbour_cases(const Setting& s)
{
    auto comms = neighbours::make_all(s.comm, std::uint32_t(s.size * 31 + 5));
    for (const auto& tc : comms)
        for (int count : {0, 1, 37, 4099}) {
            neighbour_case(s, tc, Side{count, Shape::ints}, Side{count, Shape::ints});
            neighbour_case(s, tc, Side{2 * count, Shape::ints}, Side{count, Shape::vector});
            neighbour_case(s, tc, Side{count, Shape::padded}, Side{count, Shape::padded});
        }
    neighbours::free_all(comms);
}

} // namespace

void check_neighbor_allgather(const Setting& s) { neighbour_cases(s); }
void check_neighbor_allgatherv(const Setting& s) { neighbour_cases(s); }
void check_neighbor_alltoall(const Setting& s) { neighbour_cases(s); }
void check_neighbor_alltoallv(const Setting& s) { neighbour_cases(s); }
void check_neighbor_alltoallw(const Setting& s) { neighbour_cases(s); }

} // namespace exact
