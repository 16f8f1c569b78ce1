// collectives_check's neighbourhood collectives: MPI_Neighbor_allgather(v) and
// MPI_Neighbor_alltoall(v, w) on every topology communicator of neighbour_comms.hpp (Cartesian
// of 1-3 dimensions, periodic or not, with dimensions of size 1 and 2; graphs with repeated
// edges and self loops; dist graphs, weighted or not, asymmetric, made adjacent or by
// MPI_Dist_graph_create), made over the setting's communicator. The reference of every receive
// block is block_source (tests/support/neighbourhoods.hpp) of the Topology the communicator was
// made from. A block of MPI_PROC_NULL and every gap must stay as it was.
#include "check_harness.hpp"

#include "combining.hpp"
#include "neighbour_comms.hpp"

#include <algorithm>

namespace check {

namespace {

constexpr int kUntouched = -999;

using loom::Collective;

int element(int q, int block, int i) { return q * 1000003 + block * 1009 + i + 1; }

// Ints of the message from rank q's send block b (the allgathers: its one block) for `count`:
// the same everywhere for the uniform forms, else by sender and block (even for alltoallw,
// whose odd blocks go as pairs of ints with a hole between).
int message_ints(Collective c, int count, int q, int b)
{
    if (c == Collective::neighbor_allgatherv) return count + q % 3;
    if (c == Collective::neighbor_alltoallv) return count + (q + b) % 3;
    if (c == Collective::neighbor_alltoallw) return 2 * (count + (q + b) % 3);
    return count;
}

struct Side {
    std::vector<int> counts, displs; // ints, in neighbour order
    int extent = 0;
};

// Blocks end to end in neighbour order, or (gaps) in reverse order with one int before each.
Side side(std::vector<int> counts, bool gaps)
{
    Side s;
    s.counts = std::move(counts);
    s.displs.resize(s.counts.size());
    if (!gaps)
        for (std::size_t i = 0; i < s.counts.size(); ++i) s.displs[i] = s.extent, s.extent += s.counts[i];
    else
        for (std::size_t i = s.counts.size(); i-- > 0;) s.displs[i] = s.extent + 1, s.extent += s.counts[i] + 1;
    return s;
}

void neighbour_case(const Setting& base, Collective c, const neighbours::TopologyComm& tc, int count, bool gaps,
                    MPI_Datatype holey)
{
    const loom::test::Topology& t = tc.topology;
    Setting s = base;
    s.comm = tc.comm;
    s.stencil = t.one_block_size; // combining serves stencils of one block size (combining.hpp)
    MPI_Comm_rank(tc.comm, &s.rank);
    const int r = s.rank;
    const auto& dst = t.destinations[std::size_t(r)];
    const auto& src = t.sources[std::size_t(r)];
    const bool same_block = c == Collective::neighbor_allgather || c == Collective::neighbor_allgatherv;
    const bool w = c == Collective::neighbor_alltoallw, v = c != Collective::neighbor_allgather &&
                                                             c != Collective::neighbor_alltoall;
    gaps = gaps && v;
    // On one rank loom takes no part, and Open MPI's libnbc swaps the two blocks of a periodic
    // dimension of size 1 or 2 in the non-blocking and persistent alltoalls (open-mpi/ompi#14430;
    // a v form's blocks of different sizes then fail with MPI_ERR_TRUNCATE): not loom's call, not
    // made (loom serves those calls itself on two or more ranks, and is checked there).
    bool swapped_by_libnbc = false;
    for (std::size_t d = 0; d < t.dims.size(); ++d)
        swapped_by_libnbc = swapped_by_libnbc || (t.periods[d] != 0 && t.dims[d] <= 2);
    if (swapped_by_libnbc && t.kind == loom::TopologyKind::cartesian && s.size < 2 && form != Form::blocking &&
        !same_block)
        return;
    // The send side.
    std::vector<int> scounts;
    if (same_block)
        scounts.push_back(message_ints(c, count, r, 0));
    else
        for (std::size_t i = 0; i < dst.size(); ++i) scounts.push_back(message_ints(c, count, r, int(i)));
    const Side sb = side(scounts, gaps);
    // The receive side: block j's size is its sender's (PROC_NULL: the v forms' any, here count + 1).
    std::vector<int> rcounts;
    std::vector<loom::test::BlockSource> from;
    for (std::size_t j = 0; j < src.size(); ++j) {
        from.push_back(loom::test::block_source(t, r, int(j)));
        rcounts.push_back(from.back().rank < 0 ? count + (v ? 1 : 0) : message_ints(c, count, from.back().rank, from.back().block));
    }
    const Side rb = side(rcounts, gaps);
    // alltoallw's odd send blocks go as `holey` ({int, hole, int}), each in a region of its own
    // past the dense layout: 3/2 the ints.
    std::vector<int> send(std::size_t(sb.extent) * 3 + 2, kUntouched), recv(std::size_t(rb.extent) + 1, kUntouched);
    std::vector<int> expected = recv, wcounts = sb.counts;
    std::vector<MPI_Aint> sadispls(dst.size() + 1), radispls(src.size() + 1);
    std::vector<MPI_Datatype> stypes(dst.size() + 1, MPI_INT), rtypes(src.size() + 1, MPI_INT);
    for (std::size_t b = 0, at = 0; b < sb.counts.size(); ++b) {
        const int block = same_block ? 0 : int(b);
        sadispls[b] = MPI_Aint(sb.displs[b]) * MPI_Aint(sizeof(int));
        if (w && b % 2 == 1) {
            const std::size_t region = std::size_t(sb.extent) + at;
            sadispls[b] = MPI_Aint(region * sizeof(int));
            stypes[b] = holey;
            wcounts[b] = sb.counts[b] / 2;
            for (int e = 0; e < wcounts[b]; ++e) {
                send[region + 3 * std::size_t(e)] = element(r, block, 2 * e);
                send[region + 3 * std::size_t(e) + 2] = element(r, block, 2 * e + 1);
            }
            at += 3 * std::size_t(wcounts[b]) + 1;
        } else {
            for (int i = 0; i < sb.counts[b]; ++i) send[std::size_t(sb.displs[b] + i)] = element(r, block, i);
        }
    }
    for (std::size_t j = 0; j < src.size(); ++j) {
        radispls[j] = MPI_Aint(rb.displs[j]) * MPI_Aint(sizeof(int));
        if (from[j].rank < 0) continue; // MPI_PROC_NULL: untouched
        for (int i = 0; i < rb.counts[j]; ++i)
            expected[std::size_t(rb.displs[j] + i)] = element(from[j].rank, same_block ? 0 : from[j].block, i);
    }
    const std::vector<int> sent = send;
    // Open MPI's MPI layer returns at once from a blocking neighbor_allgather or _alltoall of 0.
    // The calls libnbc would get wrong loom keeps, even from a forced algorithm that cannot serve
    // them (combining, on a Cartesian communicator): the rules serve them.
    const bool kept = swapped_by_libnbc && t.kind == loom::TopologyKind::cartesian && form != Form::blocking &&
                      !same_block;
    const Expect expect = count == 0 && !v ? Expect::untouched : kept ? Expect::kept : Expect::served;
    const std::string coll(loom::to_string(c));
    const std::string name = t.name + " count " + std::to_string(count) + (gaps ? " with gaps" : "");
    const int one = count; // the uniform forms' one count (sizes are the same everywhere there)
    std::vector<int> sc = sb.counts, sd = sb.displs, rc = rb.counts, rd = rb.displs;
    sc.push_back(0), sd.push_back(0), rc.push_back(0), rd.push_back(0), wcounts.push_back(0);
    expect_call(s, coll.c_str(), expect, name, [&] {
        if (c == Collective::neighbor_allgather)
            neighbor_allgather(send.data(), one, MPI_INT, recv.data(), one, MPI_INT, s.comm);
        else if (c == Collective::neighbor_allgatherv)
            neighbor_allgatherv(send.data() + sd[0], sc[0], MPI_INT, recv.data(), rc.data(), rd.data(), MPI_INT, s.comm);
        else if (c == Collective::neighbor_alltoall)
            neighbor_alltoall(send.data(), one, MPI_INT, recv.data(), one, MPI_INT, s.comm);
        else if (c == Collective::neighbor_alltoallv)
            neighbor_alltoallv(send.data(), sc.data(), sd.data(), MPI_INT, recv.data(), rc.data(), rd.data(), MPI_INT,
                               s.comm);
        else
            neighbor_alltoallw(send.data(), wcounts.data(), sadispls.data(), stypes.data(), recv.data(), rc.data(),
                               radispls.data(), rtypes.data(), s.comm);
    });
    if (send != sent) fail(s, coll + " " + name + ": the send buffer written");
    if (recv != expected) {
        std::size_t k = 0;
        while (k < recv.size() && recv[k] == expected[k]) ++k;
        fail(s, coll + " " + name + ": int " + std::to_string(k) + " is " + std::to_string(recv[k]) + ", expected " +
                    std::to_string(expected[k]) + " (a wrong block, or a gap or MPI_PROC_NULL block written)");
    }
}

// The grids loom's stencil detection tries (loom::balanced_dims) are MPI_Dims_create's, for
// every P up to 1000 in 2-D and 3-D (once per process: it is local).
void check_balanced_dims(const Setting& s)
{
    static bool checked = false;
    if (checked) return;
    checked = true;
    for (int P = 1; P <= 1000; ++P)
        for (int d : {2, 3}) {
            std::vector<int> dims(std::size_t(d), 0);
            MPI_Dims_create(P, d, dims.data());
            if (dims != loom::balanced_dims(P, d))
                fail(s, "balanced_dims(" + std::to_string(P) + ", " + std::to_string(d) + ") is not MPI_Dims_create's");
        }
}

void check_neighbours(const Setting& s, Collective c)
{
    check_balanced_dims(s);
    HoleyTypes types = make_holey_types();
    auto comms = neighbours::make_all(s.comm, std::uint32_t(s.size * 17 + 3));
    for (const auto& tc : comms)
        for (int count : {0, 1, 5, 1000})
            for (bool gaps : {false, true})
                if (!gaps || (c != Collective::neighbor_allgather && c != Collective::neighbor_alltoall))
                    neighbour_case(s, c, tc, count, gaps, types.vector);
    neighbours::free_all(comms);
    free_holey_types(types);
}

} // namespace

void check_neighbor_allgather(const Setting& s) { check_neighbours(s, Collective::neighbor_allgather); }
void check_neighbor_allgatherv(const Setting& s) { check_neighbours(s, Collective::neighbor_allgatherv); }
void check_neighbor_alltoall(const Setting& s) { check_neighbours(s, Collective::neighbor_alltoall); }
void check_neighbor_alltoallv(const Setting& s) { check_neighbours(s, Collective::neighbor_alltoallv); }
void check_neighbor_alltoallw(const Setting& s) { check_neighbours(s, Collective::neighbor_alltoallw); }

} // namespace check
