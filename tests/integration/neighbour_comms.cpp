// Topology communicators for the neighbourhood checks (neighbour_comms.hpp).
#include "neighbour_comms.hpp"

namespace neighbours {

using loom::TopologyKind;
using loom::test::Topology;

TopologyComm make(MPI_Comm base, const Topology& t, bool weighted)
{
    TopologyComm out;
    out.topology = t;
    int rank = 0;
    MPI_Comm_rank(base, &rank);
    const auto R = std::size_t(rank);
    switch (t.kind) {
    case TopologyKind::cartesian:
        MPI_Cart_create(base, int(t.dims.size()), t.dims.data(), t.periods.data(), 0, &out.comm);
        break;
    case TopologyKind::graph: {
        std::vector<int> index, edges;
        for (const auto& l : t.sources) {
            edges.insert(edges.end(), l.begin(), l.end());
            index.push_back(int(edges.size()));
        }
        edges.push_back(0); // never an empty array
        MPI_Graph_create(base, t.size(), index.data(), edges.data(), 0, &out.comm);
        break;
    }
    case TopologyKind::dist_graph: {
        std::vector<int> src = t.sources[R], dst = t.destinations[R];
        std::vector<int> sw(src.size() + 1), dw(dst.size() + 1);
        for (std::size_t i = 0; i < sw.size(); ++i) sw[i] = int(i) + 1;
        for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = int(i) + 2;
        src.push_back(0), dst.push_back(0); // never an empty array
        MPI_Dist_graph_create_adjacent(base, int(src.size()) - 1, src.data(), weighted ? sw.data() : MPI_UNWEIGHTED,
                                       int(dst.size()) - 1, dst.data(), weighted ? dw.data() : MPI_UNWEIGHTED,
                                       MPI_INFO_NULL, 0, &out.comm);
        break;
    }
    }
    return out;
}

Topology read(MPI_Comm comm)
{
    Topology t;
    int status = MPI_UNDEFINED, size = 0, rank = 0;
    MPI_Topo_test(comm, &status);
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    std::vector<int> src, dst;
    if (status == MPI_CART) {
        int nd = 0;
        MPI_Cartdim_get(comm, &nd);
        t.kind = TopologyKind::cartesian;
        t.dims.resize(std::size_t(nd)), t.periods.resize(std::size_t(nd));
        std::vector<int> coords(std::size_t(nd) + 1);
        MPI_Cart_get(comm, nd, t.dims.data(), t.periods.data(), coords.data());
        for (int d = 0; d < nd; ++d) {
            int s = 0, e = 0;
            MPI_Cart_shift(comm, d, 1, &s, &e);
            src.push_back(s == MPI_PROC_NULL ? loom::kNoNeighbour : s);
            src.push_back(e == MPI_PROC_NULL ? loom::kNoNeighbour : e);
        }
        dst = src;
        t.name = "cart (read)";
    } else if (status == MPI_GRAPH) {
        int n = 0;
        MPI_Graph_neighbors_count(comm, rank, &n);
        src.resize(std::size_t(n) + 1);
        MPI_Graph_neighbors(comm, rank, n, src.data());
        src.resize(std::size_t(n));
        dst = src;
        t.kind = TopologyKind::graph;
        t.name = "graph (read)";
    } else if (status == MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        MPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        src.resize(std::size_t(in) + 1), dst.resize(std::size_t(out) + 1);
        MPI_Dist_graph_neighbors(comm, in, src.data(), MPI_UNWEIGHTED, out, dst.data(), MPI_UNWEIGHTED);
        src.resize(std::size_t(in)), dst.resize(std::size_t(out));
        t.kind = TopologyKind::dist_graph;
        t.name = "dist_graph (read)";
    } else {
        return t;
    }
    // Every rank's lists on every rank.
    auto gather = [&](const std::vector<int>& mine) {
        int n = int(mine.size());
        std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
        MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
        int total = 0;
        for (int q = 0; q < size; ++q) displs[std::size_t(q)] = total, total += counts[std::size_t(q)];
        std::vector<int> all(std::size_t(total) + 1);
        std::vector<int> send = mine;
        send.push_back(0);
        MPI_Allgatherv(send.data(), n, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, comm);
        std::vector<std::vector<int>> lists(static_cast<std::size_t>(size));
        for (int q = 0; q < size; ++q)
            lists[std::size_t(q)].assign(all.begin() + displs[std::size_t(q)],
                                         all.begin() + displs[std::size_t(q)] + counts[std::size_t(q)]);
        return lists;
    };
    t.sources = gather(src);
    t.destinations = gather(dst);
    return t;
}

std::vector<TopologyComm> make_all(MPI_Comm base, std::uint32_t seed)
{
    int size = 0;
    MPI_Comm_size(base, &size);
    std::vector<TopologyComm> out;
    bool weighted = false;
    for (const Topology& t : loom::test::topologies_for(size, seed)) {
        out.push_back(make(base, t, weighted && t.kind == TopologyKind::dist_graph));
        if (t.kind == TopologyKind::dist_graph) {
            out.back().topology.name += weighted ? " weighted" : " unweighted";
            weighted = !weighted;
        }
    }
    // MPI_Dist_graph_create: each rank gives its own out-edges (asymmetric, some repeated), Open
    // MPI orders the lists.
    const Topology given = loom::test::random_dist_graph(size, 3, seed + 7, true);
    int rank = 0;
    MPI_Comm_rank(base, &rank);
    std::vector<int> dst = given.destinations[std::size_t(rank)];
    const int degree = int(dst.size());
    dst.push_back(0);
    TopologyComm made;
    // On a fresh duplicate of base: Open MPI (4.1 and 5.0, ompi/mca/topo/base/
    // topo_base_dist_graph_create.c) sends the edges with tags -50 and -51 and receives them from
    // MPI_ANY_SOURCE, tags inside the non-blocking collectives' range, which starts at -27 and
    // counts down per call on the communicator (ompi_coll_base_nbc_reserve_tags, used by libnbc
    // and loom alike): when base's count stands there, a fast rank's next non-blocking
    // collective (the new communicator's context id agreement, an MPI_Iallreduce on base) lands
    // in a slow rank's edge receive and the job hangs (seen at np 6 on 3 emulated hosts over
    // UCX). A duplicate's count starts at -27.
    MPI_Comm fresh;
    MPI_Comm_dup(base, &fresh);
    MPI_Dist_graph_create(fresh, 1, &rank, &degree, dst.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &made.comm);
    MPI_Comm_free(&fresh);
    made.topology = read(made.comm);
    made.topology.name = "dist_graph by MPI_Dist_graph_create P=" + std::to_string(size);
    out.push_back(std::move(made));
    return out;
}

void free_all(std::vector<TopologyComm>& comms)
{
    for (TopologyComm& c : comms)
        if (c.comm != MPI_COMM_NULL) MPI_Comm_free(&c.comm);
    comms.clear();
}

} // namespace neighbours
